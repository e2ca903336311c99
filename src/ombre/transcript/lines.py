"""What one transcript line says, judged from the line alone: the person's words or not, and its text.

Kept apart from the chain (chain.py) so the per-turn hook can read a transcript's tail (tail.py) with the
standard library and this module only.
"""

from __future__ import annotations

import json
from pathlib import Path

# Text Claude Code writes into user lines on its own (command output, notices, interruptions): not the
# person talking, and not a turn start. A slash command the person typed (<command-name>) is a turn start.
_SYNTHETIC_PREFIXES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "<system-reminder>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "Caveat: The messages below",
)
PREVIEW_CHARS = 80
# What heads the handoff pack a swap puts into a new window's first user message (window/forge.py).
HANDOFF_HEADER = "【会话交接 · 由 ombre 在换窗时放入，不是对方说的话】"
FIRST_LINE_MAX = 4 << 20  # a first line carrying a compaction summary runs to tens of KB, not megabytes


def _content(obj: dict) -> object:
    message = obj.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _first_text(content: object) -> str:
    """The start of a message's text, enough for a preview and the synthetic-prefix test."""
    if isinstance(content, str):
        return content[: PREVIEW_CHARS * 4]
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                return b["text"][: PREVIEW_CHARS * 4]
    return ""


def message_text(obj: dict) -> str:
    """The text a message line holds: its string content, or its text blocks joined by newlines."""
    content = _content(obj)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def is_command_echo(text: str) -> bool:
    """A slash command as Claude Code records it (<command-name>/mcp</command-name> …): a turn, not words."""
    return text.lstrip().startswith(("<command-", "<local-command"))


def is_real_user(obj: dict) -> bool:
    """A user line the person typed: not a tool result, not meta, not a summary, not a command wrapper."""
    if obj.get("type") != "user" or obj.get("isMeta") or obj.get("isCompactSummary"):
        return False
    if obj.get("isVisibleInTranscriptOnly") or obj.get("ombreHandoff"):
        return False
    content = _content(obj)
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return False
        if not any(isinstance(b, dict) and b.get("type") in ("text", "image") for b in content):
            return False
    text = _first_text(content).lstrip()
    if not text and not isinstance(content, list):
        return False
    return not text.startswith(_SYNTHETIC_PREFIXES)


def opens_with_handoff(path: str | Path) -> bool:
    """Whether a session's window already opens with a swap's handoff pack (its first line, written by a
    forge or tunnel): then the session-start block and "Just Now" would tell the model the same thing again."""
    try:
        with open(path, "rb") as f:
            first = f.readline(FIRST_LINE_MAX)
        obj = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(obj, dict) or not obj.get("ombreHandoff"):
        return False
    kinds = obj.get("ombreCarry")
    if isinstance(kinds, list):
        return "handoff" in kinds
    # written before the carry line had kinds: a handoff unless it is the marker of a cut inside a turn
    return HANDOFF_HEADER in json.dumps(obj.get("message"), ensure_ascii=False) and "（接上文：" not in json.dumps(
        obj.get("message"), ensure_ascii=False
    )
