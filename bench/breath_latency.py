"""breath latency at 10k and 100k memories, query embedding included (DESIGN §6: p95 ≤ 30 ms / ≤ 150 ms).

Memories are real Chinese daily-life messages from MemDaily (../shared/bench/memdaily; beyond its 26k
messages, pairs of them joined into one memory), indexed exactly as `hold` indexes them; queries are
MemDaily questions. Vectors are random unit vectors: embedding 100k passages would take many minutes and
does not change what a query costs (one real query embedding plus a pass over every stored vector).

    python bench/breath_latency.py [--sizes 10000,100000] [--queries 200]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ombre.memory.breath import BreathRequest, breath
from ombre.memory.embed import DIM, E5Embedder
from ombre.memory.model import Memory, iso
from ombre.memory.segment import document
from ombre.memory.sqlite_store import SQLiteStore

QUERIES = ["她最近睡得好吗", "我们上次去哪里玩了", "她喜欢吃什么", "什么时候复诊", "今天好难过",
           "她的猫叫什么", "周末有什么安排", "还记得去海边那次吗", "她在学什么乐器", "工作累不累"]


DATA = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "memdaily"


def corpus() -> tuple[list[str], list[str]]:
    messages, questions = [], []
    for f in sorted(DATA.glob("*.json")):
        for traj in json.loads(f.read_text(encoding="utf-8")):
            messages += [m["message"] for m in traj["message_list"]]
            questions += [q["question"] for q in traj["question_list"]]
    return list(dict.fromkeys(messages)), questions


def build(path: Path, n: int, rng: random.Random) -> SQLiteStore:
    store = SQLiteStore(path)
    now = dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)
    messages, _ = corpus()
    batch = []
    for i in range(n):
        text = messages[i] if i < len(messages) else f"{rng.choice(messages)}{rng.choice(messages)}"
        stamp = iso(now - dt.timedelta(days=rng.randint(0, 900)))
        m = Memory(content=text, importance=rng.randint(1, 8), created=stamp, last_active=stamp,
                   id=f"m{i:07d}", activation_count=rng.randint(0, 20))
        v = rng_vec(rng)
        batch.append((m, document(text), v))
        if len(batch) == 5_000:
            store.add_many(batch, "random")
            batch = []
    if batch:
        store.add_many(batch, "random")
    return store


def rng_vec(rng: random.Random) -> np.ndarray:
    v = np.array([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32)
    return v / np.linalg.norm(v)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    embedder = E5Embedder()
    embedder.query("预热")
    rng = random.Random(7)
    print(f"{'memories':>9} {'queries':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  (a short query's embedding "
          f"alone ≈ {statistics.median(_embed_times(embedder)):.1f} ms)")
    short = []
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            store = build(Path(tmp) / "bench.db", n, rng)
            breath(store, BreathRequest("预热"), embedder=embedder)  # loads the vector matrix once
            times = _timed(store, embedder, rng.sample(corpus()[1], args.queries))
            print(f"{n:>9} {len(times):>8} {statistics.median(times):>8.1f} {p95(times):>8.1f} {times[-1]:>8.1f}")
            # what an agent's own breath(query=…) usually looks like: a few words, not a benchmark question
            short.append((n, _timed(store, embedder, [QUERIES[i % len(QUERIES)] for i in range(args.queries)])))
            store.close()
    for n, times in short:
        print(f"short agent-style queries ({len(QUERIES)} phrases of 4–9 characters), {n:,} memories: "
              f"p50 {statistics.median(times):.1f} / p95 {p95(times):.1f} ms")


def _timed(store: SQLiteStore, embedder: E5Embedder, queries: list[str]) -> list[float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        breath(store, BreathRequest(q), embedder=embedder)
        times.append((time.perf_counter() - t) * 1000)
    return sorted(times)


def p95(times: list[float]) -> float:
    return times[int(0.95 * (len(times) - 1))]


def _embed_times(embedder: E5Embedder) -> list[float]:
    out = []
    for q in QUERIES:
        t = time.perf_counter()
        embedder.query(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


if __name__ == "__main__":
    main()
