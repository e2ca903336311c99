"""The context-% reading of a session: what Claude Code will believe on `--resume`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..tokens import context_pct
from .chain import scan

AUTOCOMPACT_MARGIN = 33_000  # Claude Code compacts near window − 33k (≈167k of 200k, the seed's "~83%")


def used_pct(path: Path, default_window: int = 200_000) -> tuple[str, float | None]:
    """The session id and its context % from the stored usage alone — one pass, no token estimate: what
    the keeper polls."""
    with scan(Path(path)) as t:
        return t.session_id, context_pct(t.last_usage, t.window(default_window))


@dataclass
class UsageReport:
    session: str
    path: str
    bytes: int
    events: int
    real_user_turns: int
    used_tokens: int | None  # input + cache creation + cache read of the last assistant line
    estimated_tokens: int  # our estimate of the chain's messages (no system prompt or tools)
    window: int
    used_pct: float | None
    autocompact_at: int
    last_activity: str | None

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        pct = "?" if self.used_pct is None else f"{self.used_pct:.1f}%"
        used = "no stored usage" if self.used_tokens is None else f"{self.used_tokens:,} tokens"
        return "\n".join(
            [
                f"session   {self.session}",
                f"file      {self.path} ({self.bytes:,} bytes)",
                f"events    {self.events} on the active chain, {self.real_user_turns} real user turns",
                f"context   {used} of {self.window:,} = {pct} (auto-compact near {self.autocompact_at:,})",
                f"estimate  ~{self.estimated_tokens:,} tokens of messages",
                f"last      {self.last_activity or '?'}",
            ]
        )


def read_usage(path: Path, default_window: int = 200_000) -> UsageReport:
    with scan(Path(path)) as t:
        events = t.measure(t.events)
        used = t.last_usage
        window = t.window(default_window)
        return UsageReport(
            session=t.session_id,
            path=str(t.path),
            bytes=t.fingerprint.size,
            events=len(events),
            real_user_turns=sum(1 for e in events if e.real_user),
            used_tokens=used,
            estimated_tokens=sum(e.size for e in events),
            window=window,
            used_pct=context_pct(used, window),
            autocompact_at=window - AUTOCOMPACT_MARGIN,
            last_activity=events[-1].timestamp if events else None,
        )
