"""The `ombre` executable.

Claude Code starts `ombre hook EVENT` on every turn, so that one path skips the command-line framework and
imports only the hook module (DESIGN §6: p95 ≤ 150 ms from process start to output); everything else,
`ombre hook --help` included, goes to the click CLI in cli.py.
"""
from __future__ import annotations

import sys
import time


def main() -> None:
    started = time.monotonic()  # the hook's time budget counts from here, before its imports
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "hook" and args[1] in ("user-prompt-submit", "session-start"):
        from .inject.hooks import main as run_hook

        sys.exit(run_hook(args[1], started))
    from .cli import main as cli

    cli()
