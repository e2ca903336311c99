"""UserPromptSubmit hook latency, from process start to output (DESIGN §6: p95 ≤ 150 ms with the service up).

A real `ombre serve` holds MemDaily messages (embedded by the bundled model) in a temporary OMBRE_HOME;
the hook is started as Claude Code starts it — the installed `ombre` executable with the hook JSON on
stdin — once per MemDaily question, and timed until it exits. Then the same with the service down
(nothing listening) and hung (a socket that accepts and never answers, against the 5 s budget).

    python bench/hook_latency.py [--memories 2000] [--runs 100]
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

import ombre  # noqa: E402
from breath_latency import corpus, p95  # noqa: E402
from tests.servers import Server, free_port, ombre_env  # noqa: E402

OMBRE = str(Path(sys.executable).parent / "ombre")


def time_hook(env: dict[str, str], prompts: list[str]) -> tuple[list[float], int]:
    times, printed = [], 0
    for p in prompts:
        payload = json.dumps({"session_id": None, "hook_event_name": "UserPromptSubmit", "prompt": p})
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
    ap.add_argument("--memories", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    rng = random.Random(5)
    all_messages, questions = corpus()
    messages = rng.sample(all_messages, min(args.memories, len(all_messages)))
    # as `ombre install claude-code` leaves it: bytecode compiled (this machine sets PYTHONDONTWRITEBYTECODE,
    # under which an uncompiled checkout pays ~40 ms a turn compiling the hook's modules)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(ombre.__file__).parent)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        export = home / "seed.jsonl"
        export.write_text("".join(json.dumps({"content": m, "type": "日常", "id": f"m{i:06d}"},
                                             ensure_ascii=False) + "\n" for i, m in enumerate(messages)))
        base = ombre_env(home)
        subprocess.run([OMBRE, "memories", "import", str(export)], env=base, check=True, capture_output=True)
        server = Server(home)
        try:
            up = dict(base, OMBRE_URL=server.url)
            prompts = rng.sample(questions, args.runs)
            time_hook(up, prompts[:5])  # the page cache, not the hook, is what a first run measures
            print(f"hook latency, process start → exit; {len(messages):,} memories; MemDaily questions as prompts")
            print(f"{'':<34}{'runs':>6}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'printed':>9}")
            print(row("service up", *time_hook(up, prompts)))
        finally:
            server.stop()
        down = dict(base, OMBRE_URL=f"http://127.0.0.1:{free_port()}")
        print(row("service down (nothing listening)", *time_hook(down, prompts[:30])))
        with socket.socket() as hung:
            hung.bind(("127.0.0.1", 0))
            hung.listen(16)
            slow = dict(base, OMBRE_URL=f"http://127.0.0.1:{hung.getsockname()[1]}")
            print(row("service hung (5 s budget)", *time_hook(slow, prompts[:3])))


if __name__ == "__main__":
    main()
