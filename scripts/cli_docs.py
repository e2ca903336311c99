"""Write docs/cli.md from the commands' own --help, so the reference cannot drift from the CLI.

    python scripts/cli_docs.py          # rewrite docs/cli.md
    python scripts/cli_docs.py --check  # exit 1 when docs/cli.md is not what the CLI says (tests/test_readme.py)
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ombre.cli import main

OUT = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = 100


def _walk(command: click.Command, parent: click.Context | None, name: str):
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    yield ctx.command_path, command.get_help(ctx)
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            child = command.get_command(ctx, sub)
            if child is not None and not child.hidden:
                yield from _walk(child, ctx, sub)


def render() -> str:
    parts = ["# ombre: command reference\n",
             "Generated from each command's `--help` by `python scripts/cli_docs.py`; a test checks it is current.",
             "What the commands do in depth, with their safeguards: [guide.md](guide.md).\n"]
    for path, help_text in _walk(main, None, "ombre"):
        parts += [f"## `{path}`\n", "```text", help_text.rstrip(), "```\n"]
    return "\n".join(parts)


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text(encoding="utf-8") == text else 1)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
