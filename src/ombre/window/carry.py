"""What a new window must carry of what the model knew before the cut.

A window cut after the newest compaction summary, or inside a turn after the person's request that opened
it, would resume without the task: the summary is the model's whole memory of what came before, and the
request is what it is doing now. So the new window's first user message carries them verbatim — the summary
first, then the turn's opening request, then the marker or the handoff pack — as one meta line (`isMeta`,
`ombreHandoff`). `ombreCarry` on that line names each content block's kind, so a later rewrite can carry the
summary and the request on again without the old marker or handoff.

`required_texts` is the other half: what the verifier checks is in every new window a tail retain writes
(the newest person's words, or the summary standing for everything before them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tokens import estimate_block
from ..transcript.chain import Entry, Transcript
from ..transcript.lines import message_text

SUMMARY = "summary"
REQUEST_LABEL = "request-label"
REQUEST = "request"
HANDOFF = "handoff"
MARKER = "marker"
# Said to the model before the person's own words, so it reads them as the turn's request, not a new message.
REQUEST_HEADING = "【这一轮开头对方的原话（ombre 换窗时从被裁掉的部分带过来）】"


@dataclass
class Carried:
    """The parts a new window's first user message carries, oldest knowledge first."""

    summary: list[dict] = field(default_factory=list)  # content blocks of the newest compaction summary
    request: list[dict] = field(default_factory=list)  # the opening request's blocks (with its heading)
    # a kept carry line's own handoff or marker: what the window told the model at its swap, kept while no
    # new handoff or marker takes its place
    earlier: list[tuple[str, dict]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # uuids of the lines they came from

    @property
    def blocks(self) -> list[tuple[str, dict]]:
        return [(SUMMARY, b) for b in self.summary] + [
            (REQUEST_LABEL if n == 0 else REQUEST, b) for n, b in enumerate(self.request)
        ]

    @property
    def tokens(self) -> int:
        return sum(estimate_block(b) for _, b in self.blocks + self.earlier)

    def __bool__(self) -> bool:
        return bool(self.summary or self.request or self.earlier)


def is_summary(e: Entry) -> bool:
    """A compaction summary, or an ombre carry line holding one."""
    return e.compact_summary or SUMMARY in e.carry


def newest_summary(events: list[Entry]) -> Entry | None:
    return next((e for e in reversed(events) if is_summary(e)), None)


def _blocks(obj: dict) -> list[dict]:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") in ("text", "image", "document")]


def _load(t: Transcript, e: Entry) -> dict:
    t.measure([e])  # so an operation's rewrite (a squash of the images a request holds) applies here too
    return t.load(e)


def _parts(t: Transcript, e: Entry, kinds: tuple[str, ...]) -> list[dict]:
    """The blocks of a carry line that are of `kinds`."""
    blocks = _blocks(_load(t, e))
    return [b for k, b in zip(e.carry, blocks) if k in kinds]


def summary_blocks(t: Transcript, e: Entry) -> list[dict]:
    if e.carry:
        return _parts(t, e, (SUMMARY,))
    return [b for b in _blocks(_load(t, e)) if b.get("type") == "text"]


def request_blocks(t: Transcript, e: Entry) -> list[dict]:
    """The opening request a line stands for, with its heading: a person's message, or a carry line's."""
    if e.carry:
        return _parts(t, e, (REQUEST_LABEL, REQUEST))
    body = _blocks(_load(t, e))
    return [{"type": "text", "text": REQUEST_HEADING}] + body if body else []


def carried(t: Transcript, events: list[Entry], kept: list[Entry], turn_start: Entry | None) -> Carried:
    """What to carry for a window keeping `kept` (events, in order) of `events`.

    `turn_start` is the first event of the turn the window was cut inside (None for a cut at a turn start).
    A carry line inside `kept` is never kept as a line: its summary and request are carried again instead.
    """
    out = Carried()
    if not kept:
        return out
    first = kept[0]
    summary = newest_summary(events)
    if summary is not None and (summary.idx < first.idx or summary.carry and summary.idx == first.idx):
        out.summary = summary_blocks(t, summary)
        out.sources.append(summary.uuid)
    # the request that opened the turn cut inside, or the one a kept carry line stands for (that line goes)
    if first.carry:
        blocks = _blocks(_load(t, first))
        out.earlier = [(k, b) for k, b in zip(first.carry, blocks) if k in (HANDOFF, MARKER)]
    opener = turn_start if turn_start is not None else (first if first.carry else None)
    if opener is not None and (opener.real_user or REQUEST in opener.carry):
        out.request = request_blocks(t, opener)
        if out.request and opener.uuid not in out.sources:
            out.sources.append(opener.uuid)
    return out


def required_texts(t: Transcript, events: list[Entry]) -> list[str]:
    """What a tail retain must keep in the new window: the newest person's words on the chain, or, when none
    came after the newest compaction summary, the summary that stands for everything before it."""
    summary = newest_summary(events)
    start = summary.idx if summary is not None else -1
    for e in reversed(events):
        if e.idx < start:
            break
        if e.real_user:
            text = message_text(_load(t, e)).strip()
            return [text] if text else []  # an image alone: nothing to compare as text
        if REQUEST in e.carry:
            text = "\n".join(b.get("text", "") for b in _parts(t, e, (REQUEST,)) if b.get("type") == "text").strip()
            return [text] if text else []
    if summary is not None:
        text = "\n".join(b.get("text", "") for b in summary_blocks(t, summary)).strip()
        return [text] if text else []
    return []
