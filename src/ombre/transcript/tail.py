"""The person's last few utterances, read from the end of a transcript without parsing the rest of it.

The per-turn hook has `transcript_path` and a budget of tens of milliseconds: it reads the file's last
TAIL_BYTES (then up to MAX_TAIL_BYTES, when tool output fills the tail), drops the first line of a read that
starts mid-file and any line that does not parse (a half-written last line), and walks back over the
person's own lines: not the assistant's, not tool results, not command echoes, not a side chain.
"""

from __future__ import annotations

from pathlib import Path

from ..wire import loads
from .lines import is_command_echo, is_real_user, message_text

TAIL_BYTES = 64 * 1024
MAX_TAIL_BYTES = 512 * 1024


def person_turns(path: str | Path, limit: int = 3, max_chars: int = 200, max_bytes: int = MAX_TAIL_BYTES) -> list[str]:
    """Up to `limit` of the person's latest utterances in the transcript, oldest first, each cut to its last
    `max_chars` characters; [] for a file that is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            span = min(TAIL_BYTES, max_bytes)
            while True:
                span = min(span, size)
                f.seek(size - span)
                found = _scan(f.read(span), whole=span == size, limit=limit, max_chars=max_chars)
                if len(found) >= limit or span >= min(size, max_bytes):
                    return found
                span *= 4
    except OSError:
        return []


def _scan(data: bytes, *, whole: bool, limit: int, max_chars: int) -> list[str]:
    lines = data.split(b"\n")
    if not whole:
        lines = lines[1:]  # the read began inside a line
    found: list[str] = []
    for raw in reversed(lines):
        if len(found) >= limit:
            break
        if not raw.strip():
            continue
        try:
            obj = loads(raw)
        except ValueError:
            continue  # a half-written last line, or a line cut by the read
        if not isinstance(obj, dict) or obj.get("isSidechain") or not is_real_user(obj):
            continue
        text = message_text(obj).strip()
        if text and not is_command_echo(text):
            found.append(text[-max_chars:])
    return found[::-1]
