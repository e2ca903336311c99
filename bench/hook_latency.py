"""UserPromptSubmit hook latency, from process start to output (p95 ≤ 150 ms with the service up).

A real `ombre serve` holds MemDaily messages in a temporary OMBRE_HOME (as bench/breath_latency.py builds
them: both encoders' vectors random, which does not change what a query costs); the hook is started as
Claude Code starts it — the installed `ombre` executable with the hook JSON on stdin, a real transcript
path whose tail it reads for the person's recent turns — once per MemDaily question, and timed until it
exits. The row "encoders" counts which encoders the service embedded with inside the hook's latency target
(OMBRE_INJECT_TARGET_MS, 150). Then the same with the service down (nothing listening) and hung (a socket
that accepts and never answers, against the 5 s budget).

    python bench/hook_latency.py [--memories 10000] [--runs 100]
"""
from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from breath_latency import build, corpus, p95  # noqa: E402

import ombre  # noqa: E402
from ombre.memory.sqlite_store import SQLiteStore  # noqa: E402
from tests.support.servers import Server, free_port, ombre_env  # noqa: E402
from tests.support.transcript_gen import companion_session  # noqa: E402

OMBRE = str(Path(sys.executable).parent / "ombre")


def time_hook(env: dict[str, str], prompts: list[str], transcript: Path) -> tuple[list[float], int]:
    times, printed = [], 0
    for p in prompts:
        payload = json.dumps({"session_id": None, "hook_event_name": "UserPromptSubmit", "prompt": p,
                              "transcript_path": str(transcript)})
        started = time.perf_counter()
        proc = subprocess.run([OMBRE, "hook", "user-prompt-submit"], input=payload, env=env,
                              capture_output=True, text=True)
        times.append((time.perf_counter() - started) * 1000)
        printed += bool(proc.stdout)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return sorted(times), printed


def row(label: str, times: list[float], printed: int) -> str:
    return f"{label:<34}{len(times):>6}{statistics.median(times):>9.1f}{p95(times):>9.1f}{times[-1]:>9.1f}{printed:>9}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    rng = random.Random(5)
    _, questions = corpus()
    # as `ombre install claude-code` leaves it: bytecode compiled (this machine sets PYTHONDONTWRITEBYTECODE,
    # under which an uncompiled checkout pays ~40 ms a turn compiling the hook's modules)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(ombre.__file__).parent)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        build(SQLiteStore(home / "ombre" / "ombre.db"), args.memories, rng)
        transcript = home / "session.jsonl"
        transcript.write_text(companion_session(rng, turns=60, payload_chars=8_000).text(), encoding="utf-8")
        base = ombre_env(home)
        server = Server(home)
        try:
            up = dict(base, OMBRE_URL=server.url)
            prompts = rng.sample(questions, args.runs)
            time_hook(up, prompts[:5], transcript)  # the page cache, not the hook, is what a first run measures
            before = _encoders(home)
            print(f"hook latency, process start → exit; {args.memories:,} memories; MemDaily questions as prompts;"
                  f" a {transcript.stat().st_size // 1024} KB transcript's tail read each turn")
            print(f"{'':<34}{'runs':>6}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'printed':>9}")
            print(row("service up", *time_hook(up, prompts, transcript)))
            used = _encoders(home)[len(before):]
            print(f"{'':<34}encoders: " + ", ".join(f"{k} {used.count(k)}" for k in sorted(set(used))))
        finally:
            server.stop()
        down = dict(base, OMBRE_URL=f"http://127.0.0.1:{free_port()}")
        print(row("service down (nothing listening)", *time_hook(down, prompts[:30], transcript)))
        with socket.socket() as hung:
            hung.bind(("127.0.0.1", 0))
            hung.listen(16)
            slow = dict(base, OMBRE_URL=f"http://127.0.0.1:{hung.getsockname()[1]}")
            print(row("service hung (5 s budget)", *time_hook(slow, prompts[:3], transcript)))


def _encoders(home: Path) -> list[str]:
    """Every encoder each logged hook run's block was embedded with, in order."""
    log = home / "ombre" / "hooks.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [k for line in lines for k in (json.loads(line).get("encoders") or ["none"])]


if __name__ == "__main__":
    main()
