"""The `ombre` executable.

Claude Code starts `ombre hook EVENT` on every turn, so that one path skips the command-line framework and
imports only the hook module (p95 ≤ 150 ms from process start to output); everything else,
`ombre hook --help` included, goes to the click CLI in cli.py.
"""

from __future__ import annotations

import os
import sys
import time


def process_started() -> float:
    """When this process began, on the time.monotonic() clock: Claude Code's hook timeout and our latency
    target count from the spawn, and the interpreter's own start-up (~20 ms) is part of it. Linux tells
    through /proc; elsewhere, now."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as f:
            start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0 <= age < 5 else now


def main() -> None:
    started = process_started()
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "hook" and args[1] in ("user-prompt-submit", "session-start"):
        from .inject.hooks import main as run_hook

        code = run_hook(args[1], started)
        # Claude Code waits for the process to end, and the interpreter's teardown (every module's cleanup)
        # takes ~10 ms of the turn: the hook has printed, flushed and logged, so nothing is left to clean up.
        sys.stdout.flush()
        os._exit(code)
    from .cli import main as cli

    cli()
