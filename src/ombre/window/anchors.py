"""anchors: recent real user messages with the idx that forge cuts at.

A compaction summary is an anchor of its own: after a compaction the person's earlier words live only
inside it, and keeping from it keeps everything the model knows of them. So is the first line of a forged
window that carries the summary or the turn's request (window/carry.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..transcript import compaction
from ..transcript.chain import Entry, Transcript, clip, scan
from ..transcript.lines import PREVIEW_CHARS, message_text
from . import carry
from .select import local_time

PERSON, SUMMARY, CARRIED = "person", "summary", "carried"


@dataclass
class Anchor:
    idx: int
    uuid: str
    short_uuid: str
    time: str  # Asia/Shanghai wall time
    timestamp: str | None
    preview: str
    kind: str = PERSON  # person | summary (a compaction summary) | carried (a forged window's first line)

    def to_dict(self) -> dict:
        return asdict(self)


def anchors(path: Path, limit: int = 20) -> list[Anchor]:
    """The last `limit` anchors of the active chain (real user messages and summaries), oldest first."""
    with scan(Path(path)) as t:
        found = [e for e in t.events if e.real_user or carry.is_summary(e) or e.carry]
        chosen = found[-limit:] if limit > 0 else found
        return [_anchor(t, e) for e in chosen]


def _anchor(t: Transcript, e: Entry) -> Anchor:
    kind, preview = PERSON, e.text_preview
    if e.carry:
        kind = CARRIED
        request = message_text({"message": {"content": carry.request_blocks(t, e)[1:]}})
        preview = "[换窗带过来的开头] " + (request or _summary_preview(t, e))
    elif e.compact_summary:
        kind, preview = SUMMARY, "[压缩摘要] " + _summary_preview(t, e)
    return Anchor(e.idx, e.uuid, e.short_uuid, local_time(e), e.timestamp, clip(preview, PREVIEW_CHARS), kind)


def _summary_preview(t: Transcript, e: Entry) -> str:
    """The person's newest words the summary records, else its opening."""
    text = "\n".join(b.get("text", "") for b in carry.summary_blocks(t, e))
    said = compaction.asked(text)
    return f"对方最后说「{said[-1]}」" if said else text
