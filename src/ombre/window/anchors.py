"""anchors: recent real user messages with the idx that forge cuts at (seed §6.3)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..transcript.chain import scan
from .select import local_time


@dataclass
class Anchor:
    idx: int
    uuid: str
    short_uuid: str
    time: str  # Asia/Shanghai wall time
    timestamp: str | None
    preview: str

    def to_dict(self) -> dict:
        return asdict(self)


def anchors(path: Path, limit: int = 20) -> list[Anchor]:
    """The last `limit` real user messages of the active chain, oldest first."""
    with scan(Path(path)) as t:
        users = [e for e in t.events if e.real_user]
    chosen = users[-limit:] if limit > 0 else users
    return [Anchor(e.idx, e.uuid, e.short_uuid, local_time(e), e.timestamp, e.text_preview) for e in chosen]
