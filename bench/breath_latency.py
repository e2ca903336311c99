"""breath latency at 10k and 100k memories through the HTTP API of a real `ombre serve`, query embedding
included (issue 14: p95 ≤ 100 ms at 10k and ≤ 150 ms at 100k).

Memories are real Chinese daily-life messages from MemDaily (../shared/bench/memdaily; beyond its 26k
messages, pairs of them joined into one memory), indexed exactly as `hold` indexes them. Vectors: each
message's own, by both encoders, where bench/recall_eval.py's cache holds them (a pair's is the normalised
sum of its two), else random unit vectors. What a query costs on SQLite does not depend on them (a pass
over every stored vector); on PostgreSQL past OMBRE_PG_HNSW_FROM an HNSW index walks them, and random
vectors in 384 dimensions, with no neighbourhoods to follow, make that walk long and its answers poor.
Queries: MemDaily questions (long, no context); the dialogue set's chats (a fragment or a question with the
person's earlier turns as `context`: e5 then reads the recent turns); English questions of the long chats
(with their context where they have one: e5 reads 64 of its tokens, a dozen English words or more); short
agent-style phrases. Each is a
POST /v1/breath over one kept-alive connection, timed at the client.

    python bench/breath_latency.py [--sizes 10000,100000] [--queries 200] [--db sqlite|postgresql|both]

With --db postgresql the same memories go into a PostgreSQL 16 + pgvector store (started by the pgserver
package in a temporary folder) and `ombre serve` runs with OMBRE_DB pointing at it.
"""
from __future__ import annotations

import argparse
import functools
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from ombre.clock import iso
from ombre.memory.embed import LATENT_TERMS, NO_LATENTS, SPECS
from ombre.memory.model import Memory
from ombre.memory.segment import document
from ombre.memory.sqlite_store import SQLiteStore

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.support.servers import Server  # noqa: E402

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


@functools.lru_cache(maxsize=1)
def cache() -> dict:
    """bench/recall_eval.py's vector cache (read once: each size's build asks it twice), or {}."""
    import pickle

    path = Path(__file__).resolve().parent / "out" / "cache" / "vectors.pkl"
    return pickle.loads(path.read_bytes()) if path.exists() else {}


def cached_vectors(messages: list[str]) -> dict[str, dict[str, np.ndarray]] | None:
    """Every message's passage vector by each encoder, if bench/recall_eval.py's cache holds them all."""
    memo = cache()
    try:
        return {key: {m: memo[key][("p", m)] for m in messages} for key in SPECS}
    except KeyError:
        return None


def english_latents() -> list:
    """The latent terms of the English turns of recall_eval's sets, as its cache holds them (else none)."""
    import evalsets  # beside this script

    memo = cache().get("e5", {})
    sets = evalsets.load(("multisession", "longchat"))
    texts = dict.fromkeys(t for es in sets.values() for items in es.stores.values() for _, t in items)
    return [memo[key] for t in texts if (key := ("l", LATENT_TERMS, t)) in memo]


def build(store, n: int, rng: random.Random) -> None:
    """`n` memories into `store`, both encoders' vectors filled (random), and latent terms: each memory
    carries those of a real English turn (english_latents), so the postings an English question sums are as
    many and as spread as in an English store of this size (the memories' text stays Chinese)."""
    now = dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)
    messages, _ = corpus()
    known = cached_vectors(messages)
    english = english_latents()
    if not english:
        print("# no latent terms cached (run bench/recall_eval.py first): English questions find none", flush=True)
    latents = []
    nprng = np.random.default_rng(rng.randint(0, 2**31))
    batch = []
    for i in range(n):
        parts = [messages[i]] if i < len(messages) else [rng.choice(messages), rng.choice(messages)]
        text = "".join(parts)
        stamp = iso(now - dt.timedelta(days=rng.randint(0, 900)))
        m = Memory(content=text, importance=rng.randint(1, 8), created=stamp, last_active=stamp,
                   id=f"m{i:07d}", activation_count=rng.randint(0, 20))
        vectors = {}
        for key, spec in SPECS.items():
            v = sum(known[key][p] for p in parts) if known else nprng.standard_normal(spec.dim).astype(np.float32)
            vectors[key] = (v / np.linalg.norm(v)).astype(np.float32)
        batch.append((m, document(text), vectors))
        latents.append((m.id, english[i % len(english)] if english else NO_LATENTS))
        if len(batch) == 5_000 and not hasattr(store, "load"):
            store.add_many(batch)
            batch = []
    if hasattr(store, "load"):  # PostgreSQL: one load, the HNSW indexes built once after it
        store.load({store.namespace: (batch, [], {})})
    elif batch:
        store.add_many(batch)
    for start in range(0, len(latents), 1_000):
        store.set_latents(latents[start:start + 1_000])
    store.close()


def p95(times: list[float]) -> float:
    times = sorted(times)
    return times[int(0.95 * (len(times) - 1))]


def timed(client: httpx.Client, url: str, bodies: list[dict]) -> list[float]:
    out = []
    for body in bodies:
        started = time.perf_counter()
        r = client.post(url + "/v1/breath", json=body)
        out.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200, r.text
    return sorted(out)


def dialogue_bodies(rng: random.Random, n: int) -> list[dict]:
    import evalsets  # beside this script

    cases = rng.sample(evalsets.dialogue().cases, n)
    return [{"query": c.query, "context": c.context} for c in cases]


def english_bodies(rng: random.Random, n: int) -> list[dict]:
    import evalsets

    cases = evalsets.longchat().cases
    return [{"query": c.query, "context": c.context} for c in (rng.choice(cases) for _ in range(n))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="sqlite")
    args = ap.parse_args()
    backends = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    rng = random.Random(7)
    _, questions = corpus()
    kinds = {"MemDaily questions": [{"query": q} for q in rng.sample(questions, args.queries)],
             "chats with context": dialogue_bodies(rng, args.queries),
             "English questions": english_bodies(rng, args.queries),
             "short phrases": [{"query": QUERIES[i % len(QUERIES)]} for i in range(args.queries)]}
    print("breath through HTTP (POST /v1/breath on a real `ombre serve`), query embedding included; 2 cores")
    print(f"{'memories':>9} {'queries':<20}{'n':>5}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
          + ("  backend" if args.db != "sqlite" else ""))
    for backend in backends:
        for n in (int(x) for x in args.sizes.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                home = Path(tmp)
                env, pg = {}, None
                if backend == "postgresql":
                    import pgserver

                    from ombre.memory.postgres_store import PostgresStore

                    pg = pgserver.get_server(home / "pg", cleanup_mode="stop")
                    env["OMBRE_DB"] = pg.get_uri()
                    store = PostgresStore(pg.get_uri())
                else:
                    store = SQLiteStore(home / "ombre" / "ombre.db")
                started = time.perf_counter()
                build(store, n, random.Random(n))
                store.close()
                if backend == "postgresql":
                    print(f"# {n} memories loaded into PostgreSQL in {time.perf_counter() - started:.0f} s", flush=True)
                server = Server(home, env=env)
                try:
                    with httpx.Client(timeout=30) as client:
                        timed(client, server.url, [{"query": "预热"}] * 5)
                        for label, bodies in kinds.items():
                            t = timed(client, server.url, bodies)
                            print(f"{n:>9} {label:<20}{len(t):>5}{statistics.median(t):>9.1f}{p95(t):>9.1f}"
                                  f"{t[-1]:>9.1f}" + (f"  {backend}" if args.db != "sqlite" else ""), flush=True)
                finally:
                    server.stop()
                    if pg is not None:
                        pg.cleanup()


if __name__ == "__main__":
    main()
