"""The `ombre` command: thin adapters that parse options, call the library and print the result.

One module a subsystem (window, memory, memories, service, swap, setup), display text in render.py, errors mapped to
message / JSON / exit code once, in base.py's command classes. A subsystem's module is imported only when one
of its commands runs; the line each shows in `ombre --help` is kept here so listing them imports nothing.
"""

from __future__ import annotations

import click

from ..settings import Settings
from .base import OmbreGroup

COMMANDS = {  # name → (module, the first line of its help)
    "anchors": (
        ".window",
        "Recent real user messages with idx, short uuid and Shanghai time (for --keep-from/--keep-to).",
    ),
    "usage": (".window", "How full the session's context window is (stored usage) and what our estimate says."),
    "diet": (".window", "Squash tool output and images, keep the dialogue and thinking; write a new session id."),
    "forge": (".window", "Cut to the recent raw tail (thinking kept) or a chosen range; write a new session id."),
    "stats": (
        ".window",
        "The bill per day from the usage stored in the transcripts: tokens, cache hits, cost, swaps, background.",
    ),
    "hold": (".memory", "Remember one thing (write_gate, scarcity and the evidence chain apply)."),
    "breath": (
        ".memory",
        "Recall memories for a query (keywords and two encoders, rank-fused), or the handoff block at session start.",
    ),
    "memories": (".memories", "List, inspect, pin, archive, restore, export and import memories."),
    "namespace": (
        ".memory",
        "Namespaces: one person or companion each, on one store (a token per namespace for `ombre serve`).",
    ),
    "backup": (".memory", "Back up the memory database (a consistent copy, safe while `ombre serve` runs)."),
    "restore": (
        ".memory",
        "Put a backup in place of the memory database (checked first; the current one is kept aside).",
    ),
    "distill": (".memory", "Settle what the person said into memory (0–3 candidates, quoted, through write_gate)."),
    "serve": (
        ".service",
        "Run the memory service: HTTP API (/v1/hold, /v1/breath, /v1/memories/ID, /health) and MCP at /mcp.",
    ),
    "ui": (
        ".service",
        "Open the dashboard (the running `ombre serve` at OMBRE_URL, started first if nothing answers).",
    ),
    "gateway": (
        ".service",
        "Anthropic-compatible proxy that adds the turn's memory block to the last user message only.",
    ),
    "handoff": (".swap", "Handoff packs for a window swap."),
    "tunnel": (
        ".swap",
        "Swap windows: backup → handoff → hold → forge (or diet) → stop bridge → re-bind → start → nudge.",
    ),
    "rebind": (
        ".swap",
        "Bind the bridge to a session a tunnel already wrote (after a failed re-bind), without cutting again.",
    ),
    "bridge": (".swap", "The chat bridge that resumes the session (cc-connect, command, file)."),
    "keeper": (".swap", "The sidecar that runs diet and forge by itself."),
    "install": (".setup", "Wire Ombre into an agent runtime."),
    "uninstall": (".setup", "Take Ombre out of an agent runtime."),
    "hook": (".setup", "Claude Code hooks (installed by `ombre install claude-code`)."),
    "doctor": (".setup", "Check the whole set-up: service, hooks, bridge, keeper, distillation, database, backup."),
    "config": (".setup", "Show the effective settings (from the environment and OMBRE_HOME/service.env)."),
    "demo": (
        ".setup",
        "Show diet, forge, distillation, the per-turn block and the handoff, on bundled sessions in a temporary home.",
    ),
}


@click.group(cls=OmbreGroup, lazy=COMMANDS)
@click.version_option(package_name="ombre")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Ombre keeps a long-running Claude Code companion the same person while its bill stays low.

    SESSION is a session id, an id prefix, a path to a .jsonl file, or a folder (its newest session);
    without it, the newest session of the current folder's project is used.
    """
    ctx.obj = Settings.from_env()
