"""One `ombre serve` answering many people on PostgreSQL, under a steady load (issue 34).

The database holds 100 namespaces of 2,000 memories and one of 100,000 (MemDaily messages, indexed as
`hold` indexes them; vectors as bench/breath_latency.py makes them), each namespace with its own bearer
token. Twenty clients, each a person's bridge, send a call every --interval seconds on average (uniformly
0–2× apart; 5 s by default, a brisk chat's pace: ~4 calls a second in all): seven in ten the hook's call
(POST /v1/inject as the hook sends it: the prompt with the person's earlier turns as context, target_ms 100,
the hook's OMBRE_INJECT_TARGET_MS of 150 less its own process start, so recall cuts e5 when short of time),
one in ten an agent's breath (POST /v1/breath, with context, no deadline), two in ten a hold (POST /v1/hold
of a new message). Each call goes to a namespace drawn at
random, the 100k one one time in ten. Reported: p50/p95/p99 per call kind and namespace size, errors (any
status but 200), the service's RSS at start (every namespace opened once) and end, and the connections the database has open.

    python bench/load.py [--seconds 300] [--clients 20] [--interval 5] [--db postgresql://… | --keep DIR]

Without --db a PostgreSQL server is started by the pgserver package in a temporary folder and filled first
(ten to thirty minutes); --keep DIR starts it in DIR instead and fills it only the first time, so a second
run starts at once; --db reuses a database this script filled before (its tokens are made again). The RSS
is sampled every minute of the run: the malloc arenas of the server's threads grow for the first minutes,
so a rise from the start says less than whether the last samples still climb.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
import breath_latency  # noqa: E402  (beside this script: the memories and the queries)
import evalsets  # noqa: E402

from ombre.memory.namespaces import digest  # noqa: E402
from ombre.memory.postgres_store import PostgresStore  # noqa: E402
from tests.support.servers import Server  # noqa: E402

SMALL, PER_SMALL, BIG = 100, 2_000, 100_000


def fill(url: str) -> None:
    store = PostgresStore(url, "big")
    try:
        started = time.perf_counter()
        breath_latency.build(store.beside("big"), BIG, random.Random(BIG))
        for i in range(SMALL):
            breath_latency.build(store.beside(f"ns{i:03d}"), PER_SMALL, random.Random(i))
        print(f"# filled in {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        store.close()


def tokens(url: str) -> dict[str, str]:
    """A bearer token per namespace (made again each run: only digests are stored)."""
    names = ["big"] + [f"ns{i:03d}" for i in range(SMALL)]
    out = {name: f"load-{name}-{random.randrange(10**9)}" for name in names}
    store = PostgresStore(url)
    try:
        for name, token in out.items():
            store.add_token(digest(token), name, "2026-12-06T00:00:00+00:00")
    finally:
        store.close()
    return out


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def connections(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as db:
        row = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
        return int(row[0]) if row else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--db", default=None)
    ap.add_argument("--keep", type=Path, default=None, help="the PostgreSQL folder to fill once and reuse")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pg = None
        url = args.db
        if url is None:
            import pgserver

            folder = args.keep or Path(tmp) / "pg"
            filled = (folder / "filled").exists()
            pg = pgserver.get_server(folder, cleanup_mode="stop")
            url = pg.get_uri()
            if not filled:
                fill(url)
                if args.keep:
                    (folder / "filled").touch()
        keys = tokens(url)
        messages, _ = breath_latency.corpus()
        chats = evalsets.dialogue().cases
        server = Server(Path(tmp), env={"OMBRE_DB": url, "OMBRE_PG_POOL_MAX": "20"})
        times: dict[tuple[str, str], list[float]] = {}
        errors: list[str] = []
        hooks: list[bool] = []  # per hook call: did e5 fit its deadline
        lock = threading.Lock()
        try:
            with httpx.Client(timeout=60) as warm:  # every namespace opened once: RSS at start counts them
                for name in keys:
                    warm.post(server.url + "/v1/breath", json={"query": "预热"},
                              headers={"authorization": f"Bearer {keys[name]}"})
            rss_start = rss_mb(server.proc.pid)
            end = time.monotonic() + args.seconds

            def client(seed: int) -> None:
                rng = random.Random(seed)
                with httpx.Client(timeout=30) as http:
                    while True:
                        time.sleep(rng.uniform(0, 2 * args.interval))
                        if time.monotonic() >= end:
                            return
                        name = "big" if rng.random() < 0.1 else f"ns{rng.randrange(SMALL):03d}"
                        headers = {"authorization": f"Bearer {keys[name]}"}
                        draw, case = rng.random(), rng.choice(chats)
                        if draw < 0.7:
                            kind, path = "hook", "/v1/inject"
                            body = {"prompt": case.query, "context": case.context, "session_id": f"load-{seed}",
                                    "budget_ms": 5000, "target_ms": 100}
                        elif draw < 0.8:
                            kind, path, body = "breath", "/v1/breath", {"query": case.query, "context": case.context}
                        else:
                            kind, path = "hold", "/v1/hold"
                            body = {"content": f"{rng.choice(messages)}（第{rng.randrange(10**6)}次）"}
                        started = time.perf_counter()
                        try:
                            r = http.post(server.url + path, json=body, headers=headers)
                            failed = None if r.status_code == 200 else f"{kind} {r.status_code}: {r.text[:200]}"
                            if kind == "hook" and failed is None:
                                with lock:
                                    hooks.append("e5" in r.json().get("encoders", []))
                        except httpx.HTTPError as exc:
                            failed = f"{kind}: {exc!r}"
                        took = (time.perf_counter() - started) * 1000
                        with lock:
                            times.setdefault((kind, "100k" if name == "big" else "2,000"), []).append(took)
                            if failed:
                                errors.append(failed)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
            for t in threads:
                t.start()
            peak, samples, started = 0, [], time.monotonic()
            while any(t.is_alive() for t in threads):
                peak = max(peak, connections(url))
                if time.monotonic() - started >= 60 * (len(samples) + 1):
                    samples.append(rss_mb(server.proc.pid))
                time.sleep(5)
            rss_end = rss_mb(server.proc.pid)
            pool = httpx.get(server.url + "/health", timeout=30).json().get("pool", {})
        finally:
            server.stop()
        calls = sum(len(v) for v in times.values())
        print(f"ombre serve on PostgreSQL: {SMALL} namespaces x {PER_SMALL:,} memories and one of {BIG:,}; "
              f"{args.clients} clients, one call each {args.interval:g} s on average, for {args.seconds:.0f} s: "
              f"{calls} calls ({calls / args.seconds:.1f}/s); 2 cores")
        print(f"{'call':<8}{'namespace':>10}{'n':>7}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
        for (kind, size), t in sorted(times.items()):
            t.sort()
            print(f"{kind:<8}{size:>10}{len(t):>7}{statistics.median(t):>9.1f}{t[int(0.95 * (len(t) - 1))]:>9.1f}"
                  f"{t[int(0.99 * (len(t) - 1))]:>9.1f}")
        if hooks:
            print(f"hook calls that e5 fitted (the rest USE alone): {sum(hooks) / len(hooks):.0%}")
        print(f"errors {len(errors)}" + "".join(f"\n  {e}" for e in errors[:5]))
        print(f"service RSS {rss_start:.0f} MB at start, {rss_end:.0f} MB at end; each minute: "
              + " ".join(f"{mb:.0f}" for mb in samples))
        print(f"database connections: at most {peak} open during the run; the pool at the end: {pool}")
        if pg is not None:
            pg.cleanup()  # "stop": a --keep folder keeps its data


if __name__ == "__main__":
    main()
