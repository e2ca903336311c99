"""What one transcript line says, judged from the line alone: the person's words or not, and its text.

Kept apart from the chain (chain.py) so the per-turn hook can read a transcript's tail (tail.py) with the
standard library and this module only.
"""
from __future__ import annotations

# Text Claude Code writes into user lines on its own (command output, notices, interruptions): not the
# person talking, and not a turn start. A slash command the person typed (<command-name>) is a turn start.
_SYNTHETIC_PREFIXES = (
    "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>", "<task-notification>",
    "<system-reminder>", "<bash-stdout>", "<bash-stderr>", "[Request interrupted by user",
    "Caveat: The messages below",
)
PREVIEW_CHARS = 80


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
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
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
