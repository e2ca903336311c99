"""Choosing which events a new window keeps: tail retain, keep-days, or a from/to range.

Everything here works on the one event list of `transcript.chain` and cuts at turn starts (a real user
message), so a tool_use never loses its tool_result. One exception: a tail retain whose
last turn alone is over the budget — a long agentic turn, or a session whose chain starts at a compaction
summary with no person message after it — may cut inside that turn, at the start of an API response after
which no earlier tool call is left waiting; the new window then opens with a user line of its own (forge
writes the handoff or a short marker there).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Callable

from ..clock import SHANGHAI as TZ
from ..errors import SelectionError, UsageError
from ..transcript.chain import Entry


@dataclass(frozen=True)
class EndSpec:
    """One end of a range: exactly one of idx, uuid (prefix) or ts."""

    idx: int | None = None
    uuid: str | None = None
    ts: str | None = None

    @property
    def given(self) -> bool:
        return self.idx is not None or bool(self.uuid) or bool(self.ts)

    def describe(self) -> str:
        if self.idx is not None:
            return f"idx {self.idx}"
        if self.uuid:
            return f"uuid {self.uuid}"
        return f"ts {self.ts}"


@dataclass(frozen=True)
class Selector:
    """What to keep. `retain` and `keep_days`/`keep_from`/`keep_to` exclude each other."""

    retain: int | None = None
    keep_days: tuple[dt.date, ...] = ()
    keep_from: EndSpec = EndSpec()
    keep_to: EndSpec = EndSpec()
    max_kept: int | None = None

    @property
    def mode(self) -> str:
        if self.keep_days:
            return "days"
        if self.keep_from.given or self.keep_to.given:
            return "range"
        return "retain"


@dataclass
class ResolvedEnd:
    requested: str
    idx: int  # the event the request resolved to
    turn_idx: int  # where the kept range actually begins/ends, aligned to whole turns
    uuid: str
    when: str | None
    preview: str


@dataclass
class Selection:
    mode: str
    kept: list[int]  # event idx values, ascending
    turns_total: int
    trimmed_turns: int = 0  # dropped from the oldest end to respect max_kept
    resolved_from: ResolvedEnd | None = None
    resolved_to: ResolvedEnd | None = None
    days: list[str] = field(default_factory=list)
    cut_inside_turn: int | None = None  # the event idx a long last turn was cut at, if it was


def turns(events: list[Entry]) -> list[tuple[int, int]]:
    """Event index ranges [start, end) that each begin at a real user message.

    Events before the first real user message (a compaction summary, a slash command's output) form a
    leading turn from the first user line on: a new window must open with a user message.
    """
    starts = [i for i, e in enumerate(events) if e.real_user]
    first_user = next((i for i, e in enumerate(events) if e.type == "user"), None)
    if first_user is None:
        return []
    if not starts or starts[0] > first_user:
        starts.insert(0, first_user)
    return [(s, e) for s, e in zip(starts, starts[1:] + [len(events)])]


def shanghai_day(entry: Entry) -> dt.date | None:
    when = entry.when
    return when.astimezone(TZ).date() if when else None


def parse_moment(text: str) -> dt.datetime:
    """A moment from ISO text (no zone = Asia/Shanghai wall time) or Unix seconds / milliseconds."""
    raw = text.strip()
    if re.fullmatch(r"\d{9,14}(\.\d+)?", raw):
        value = float(raw)
        if value > 1e11:  # milliseconds
            value /= 1000.0
        return dt.datetime.fromtimestamp(value, tz=dt.timezone.utc)
    candidate = raw.replace("Z", "+00:00")
    if re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{1,2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2})?", candidate):
        candidate = candidate.replace(" ", "T", 1)
    try:
        moment = dt.datetime.fromisoformat(candidate)
    except ValueError:
        raise UsageError(
            f"cannot read the time {text!r}",
            hint="use 'YYYY-MM-DD HH:MM' (Asia/Shanghai), ISO 8601 with a zone, or Unix seconds/ms",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=TZ)
    return moment


def parse_days(text: str) -> tuple[dt.date, ...]:
    days = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            days.append(dt.date.fromisoformat(part))
        except ValueError:
            raise UsageError(f"cannot read the day {part!r}", hint="give days as YYYY-MM-DD,YYYY-MM-DD") from None
    if not days:
        raise UsageError("--keep-days is empty", hint="give days as YYYY-MM-DD,YYYY-MM-DD")
    return tuple(sorted(set(days)))


def _candidate(e: Entry) -> str:
    return f"idx {e.idx}  {e.short_uuid}  {local_time(e)}  {e.type}: {e.text_preview}"


def local_time(e: Entry) -> str:
    when = e.when
    return when.astimezone(TZ).strftime("%Y-%m-%d %H:%M:%S") if when else "?"


def resolve_end(events: list[Entry], spec: EndSpec, side: str, measure: "Measure" = lambda e: e) -> int:
    """The event idx one end of a range names."""
    n = len(events)
    if spec.idx is not None:
        if not 0 <= spec.idx < n:
            raise SelectionError(
                f"--keep-{side}-idx {spec.idx} is outside the session's events 0..{n - 1}",
                hint="list anchors with `ombre anchors` to see valid idx values",
            )
        return spec.idx
    if spec.uuid:
        prefix = spec.uuid.lower()
        hits = [e for e in events if e.uuid.lower().startswith(prefix)]
        if not hits:
            raise SelectionError(
                f"--keep-{side}-uuid {spec.uuid!r} matches no conversation event",
                hint="copy a uuid from `ombre anchors`; progress/system lines are not events",
            )
        if len(hits) > 1:
            measure(hits[:20])
            raise SelectionError(
                f"--keep-{side}-uuid {spec.uuid!r} is ambiguous ({len(hits)} events)",
                candidates=[_candidate(e) for e in hits[:20]],
                hint="give a longer prefix, or use --keep-{side}-idx",
            )
        return hits[0].idx
    moment = parse_moment(spec.ts or "")
    stamped = [(e.idx, e.when) for e in events if e.when is not None]
    if not stamped:
        raise SelectionError("the session's events carry no timestamps", hint="use idx or uuid ends")
    if side == "from":
        before = [i for i, w in stamped if w <= moment]
        return before[-1] if before else stamped[0][0]
    after = [i for i, w in stamped if w >= moment]
    return after[0] if after else stamped[-1][0]


def _resolved(events: list[Entry], spec: EndSpec, idx: int, turn_idx: int) -> ResolvedEnd:
    e = events[idx]
    return ResolvedEnd(
        spec.describe() if spec.given else "session " + ("start" if turn_idx == 0 else "end"),
        idx,
        turn_idx,
        e.uuid,
        local_time(e),
        e.text_preview,
    )


Measure = Callable[[list[Entry]], object]


def select(events: list[Entry], selector: Selector, measure: Measure = lambda entries: entries) -> Selection:
    """Turn-aligned event idx values to keep, per `selector`.

    `measure` fills the sizes of the events handed to it (Transcript.measure); only the turns a decision
    looks at are measured, so a tail retain on a huge session reads little more than its tail.
    """
    spans = turns(events)
    if not spans:
        raise SelectionError(
            "the session has no conversation events on its active chain",
            hint="check the file with `ombre anchors`; nothing can be kept from it",
        )

    def size(t: int) -> int:
        chunk = events[spans[t][0] : spans[t][1]]
        measure(chunk)
        return sum(e.size for e in chunk)

    mode = selector.mode
    sel = Selection(mode=mode, kept=[], turns_total=len(spans))
    if mode == "retain":
        budget = selector.retain if selector.retain is not None else 0
        chosen = [len(spans) - 1]  # the last turn stays even when it alone is over the budget
        total = size(len(spans) - 1)
        if total > budget:
            cut = cut_inside(events, spans[-1], budget)
            if cut is not None:
                sel.cut_inside_turn = cut
                sel.kept = list(range(cut, spans[-1][1]))
                return sel
        for t in range(len(spans) - 2, -1, -1):
            cost = size(t)
            if total + cost > budget:
                break
            total += cost
            chosen.append(t)
        chosen.sort()
    elif mode == "days":
        wanted = set(selector.keep_days)
        day_of = [shanghai_day(events[s]) for s, _ in spans]
        chosen = [t for t, d in enumerate(day_of) if d in wanted]
        sel.days = [d.isoformat() for d in selector.keep_days]
        if not chosen:
            present = sorted({d.isoformat() for d in day_of if d})
            raise SelectionError(
                f"no turn of this session starts on {', '.join(sel.days)} (Asia/Shanghai)",
                candidates=present,
                hint="pick days from the list above",
            )
    else:
        first = resolve_end(events, selector.keep_from, "from", measure) if selector.keep_from.given else 0
        last = resolve_end(events, selector.keep_to, "to", measure) if selector.keep_to.given else len(events) - 1
        if first > last:
            raise SelectionError(
                f"the range is backwards: from resolves to idx {first} ({local_time(events[first])}), "
                f"after to at idx {last} ({local_time(events[last])})",
                hint="swap the two ends, or check the times with `ombre anchors`",
            )
        t_first = next(t for t, (s, e) in enumerate(spans) if s <= first < e)
        t_last = next(t for t, (s, e) in enumerate(spans) if s <= last < e)
        chosen = list(range(t_first, t_last + 1))
        measure([events[first], events[last]])
        sel.resolved_from = _resolved(events, selector.keep_from, first, spans[t_first][0])
        sel.resolved_to = _resolved(events, selector.keep_to, last, spans[t_last][1] - 1)
    if selector.max_kept is not None:
        sizes = {t: size(t) for t in chosen}
        while len(chosen) > 1 and sum(sizes[t] for t in chosen) > selector.max_kept:
            chosen.pop(0)
            sel.trimmed_turns += 1
    sel.kept = [i for t in chosen for i in range(*spans[t])]
    return sel


def cut_inside(events: list[Entry], span: tuple[int, int], budget: int) -> int | None:
    """Where to cut inside the turn `span` so its tail fits `budget`: the earliest start of an assistant
    response (a new message id) after finished tool work, with no tool call of the turn still waiting,
    whose tail fits; else the latest such point. None when there is no such point (a plain chat turn)."""
    start, end = span
    waiting: set[str] = set()
    finished = 0  # tool calls answered so far: a plain chat turn (no tool work) is never cut
    points: list[int] = []
    for i in range(start, end):
        e = events[i]
        if (
            e.type == "assistant"
            and finished
            and not waiting
            and e.msg_id
            and e.msg_id != _previous_msg_id(events, i, start)
        ):
            points.append(i)
        waiting |= set(e.tool_uses)
        finished += len(waiting & set(e.tool_results))
        waiting -= set(e.tool_results)
    if not points:
        return None
    tail = 0
    sizes = {}
    for i in range(end - 1, start - 1, -1):
        tail += events[i].size
        sizes[i] = tail
    fitting = [i for i in points if sizes[i] <= budget]
    return fitting[0] if fitting else points[-1]


def _previous_msg_id(events: list[Entry], i: int, start: int) -> str | None:
    for j in range(i - 1, start - 1, -1):
        if events[j].type == "assistant":
            return events[j].msg_id
    return None


def _end(side: str, idx: int | None, uuid: str | None, ts: str | None) -> EndSpec:
    given = [name for name, v in (("idx", idx), ("uuid", uuid), ("ts", ts)) if v is not None]
    if len(given) > 1:
        raise UsageError(
            f"--keep-{side}-{given[0]} and --keep-{side}-{given[1]} name the same end twice",
            hint=f"give one of --keep-{side}-idx/-uuid/-ts",
        )
    return EndSpec(idx=idx, uuid=uuid, ts=ts)


def build_selector(
    default_retain: int,
    default_max_kept: int,
    *,
    retain: int | None = None,
    keep_days: str | None = None,
    keep_from_idx: int | None = None,
    keep_from_uuid: str | None = None,
    keep_from_ts: str | None = None,
    keep_to_idx: int | None = None,
    keep_to_uuid: str | None = None,
    keep_to_ts: str | None = None,
    max_kept: int | None = None,
) -> Selector:
    """The selection the person asked for (CLI options or the dashboard's range picker), checked alike."""
    keep_from = _end("from", keep_from_idx, keep_from_uuid, keep_from_ts)
    keep_to = _end("to", keep_to_idx, keep_to_uuid, keep_to_ts)
    picking = bool(keep_days) or keep_from.given or keep_to.given
    if picking and retain is not None:
        raise UsageError(
            "--retain cannot be combined with --keep-days or --keep-from/--keep-to",
            hint="keep the recent N tokens, or keep a chosen set; not both",
        )
    if keep_days and (keep_from.given or keep_to.given):
        raise UsageError("--keep-days cannot be combined with --keep-from/--keep-to", hint="choose days, or a range")
    return Selector(
        retain=None if picking else (default_retain if retain is None else retain),
        keep_days=parse_days(keep_days) if keep_days else (),
        keep_from=keep_from,
        keep_to=keep_to,
        max_kept=default_max_kept if max_kept is None else max_kept,
    )
