"""forge: write a new session that keeps the chosen recent raw dialogue (thinking kept), under a new id.

This module is also the engine `diet` runs on: both read the active chain once, choose turn-aligned events,
optionally squash tool payloads and images, relink the kept lines into one valid chain, rewrite the stored
usage, write `<new-sid>.jsonl` beside the original through a temporary file, verify it, and log the run.
The original file is only ever opened for reading.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import statistics
import time
import uuid as uuidlib
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from pathlib import Path

from .. import jsonl_log
from ..clock import parse_timestamp
from ..errors import DiskFullError, LiveSessionError, OmbreError, SelectionError, TranscriptError, UsageError
from ..tokens import context_pct, estimate_block
from ..transcript.chain import Entry, Transcript, scan
from ..transcript.lines import HANDOFF_HEADER  # noqa: F401 — part of forge's surface (tests, demo)
from ..transcript.reader import Fingerprint
from ..transcript.writer import dump_line, write_atomic
from . import carry
from .select import Selection, Selector, select, turns
from .squash import SquashStats, squash_line
from .verify import Expectation, verify_session

LIVE_SECONDS = 60  # a file touched this recently with a turn still open is a live session
# A half-written last line in a file nobody has touched for this long is what a crash left behind, not a
# reply being written: it is left out with a warning instead of blocking diet, forge and the tunnel forever.
STALE_SECONDS = 600


@dataclass(frozen=True)
class ForgeOptions:
    selector: Selector = Selector(retain=60_000, max_kept=100_000)
    squash: int | None = None
    inject_text: str | None = None
    inject_source: str | None = None
    dry_run: bool = False
    mode: str = "forge"
    window: int = 200_000
    history: Path | None = None  # where to append the run record; None = no log


@dataclass
class ForgeResult:
    mode: str
    dry_run: bool
    source_session: str
    source_path: str
    new_session: str
    new_path: str
    events_total: int
    events_kept: int
    turns_total: int
    turns_kept: int
    tokens_kept: int
    usage_before: int | None
    pct_before: float | None
    pct_after: float | None
    window: int
    thinking_kept: int
    tool_pairs_kept: int
    images_squashed: int
    payloads_squashed: int
    chars_removed: int
    thinking_dropped: int
    selection: dict
    injected: bool
    carried: list[str] = field(default_factory=list)  # what the first user message carries: summary, request
    dropped_trailing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int | None = None
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def run(path: Path, options: ForgeOptions) -> ForgeResult:
    """Forge (or diet) the session at `path`; on a dry run nothing is written."""
    started = time.perf_counter()
    new_sid = str(uuidlib.uuid4())
    try:
        try:
            result = _run(Path(path), options, new_sid)
        except OSError as exc:
            if exc.errno not in NO_ROOM:
                raise
            raise _no_room(exc, Path(path).parent, "writing the new session; nothing was written") from exc
    except Exception as exc:
        if options.history and not options.dry_run:
            with contextlib.suppress(OSError):  # a full disk must not hide the error being recorded
                jsonl_log.append(
                    options.history, _run_entry(options.mode, Path(path).stem, None, options, ok=False, error=str(exc))
                )
        raise
    result.elapsed_s = round(time.perf_counter() - started, 3)
    if options.history and not options.dry_run:
        try:
            jsonl_log.append(
                options.history,
                _run_entry(options.mode, result.source_session, result.new_session, options, ok=True, summary=result),
            )
        except OSError as exc:
            # a session the history does not know would be found by nobody (no re-bind, no rollback):
            # take it back rather than leave it unrecorded
            Path(path).with_name(f"{new_sid}.jsonl").unlink(missing_ok=True)
            raise _no_room(
                exc,
                options.history.parent,
                "recording the new session in the history, so it was removed; the original is untouched",
            ) from exc
    return result


NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _no_room(exc: OSError, where: Path, what: str) -> OmbreError:
    if exc.errno in NO_ROOM:
        return DiskFullError(
            f"no room on the disk ({exc.strerror}) while {what}", hint=f"free space where {where} lives and run again"
        )
    return TranscriptError(
        f"cannot write ({exc.strerror or exc}) while {what}",
        path=where,
        hint="check that the folder is writable and run again",
    )


def _run(path: Path, options: ForgeOptions, new_sid: str) -> ForgeResult:
    if options.squash is not None and options.squash < 200:
        raise UsageError(
            f"--squash {options.squash} is too small to keep a useful head and tail",
            hint="use 200 or more characters (the seed's default is 2000)",
        )
    rewrite = None
    if options.squash is not None:
        cap = options.squash

        def rewrite(obj: dict, size: int) -> tuple[dict | None, SquashStats]:
            if size <= cap:  # no string in a line this short can be longer than the cap
                return None, SquashStats()
            stats = squash_line(obj, cap)
            return (obj if stats.changed else None), stats

    with scan(path, rewrite) as transcript:
        remnant = _refuse_live(transcript)
        events = transcript.events
        whole = _complete_pairs(events)
        complete, dropped = _complete_prefix(transcript, events, whole)
        selection, carried = _select(transcript, complete, options.selector)
        if selection.cut_inside_turn is not None:
            # the kept tail starts with the assistant: the window needs a user line first
            options = replace(options, inject_text=options.inject_text or CUT_MARKER)
        kept_events = transcript.measure(
            _end_on_reply([complete[i] for i in selection.kept if not complete[i].carry], whole)
        )
        _refuse_bad_lines_inside(transcript, kept_events)
        lines = _kept_lines(transcript, kept_events)
        overhead = _system_overhead(transcript, events)
        result = _summarize(transcript, options, new_sid, selection, kept_events, lines, overhead, dropped)
        result.tokens_kept += carried.tokens
        result.carried = [kind for kind, part in (("summary", carried.summary), ("request", carried.request)) if part]
        result.warnings += remnant
        if selection.cut_inside_turn is not None:
            result.warnings.append(
                f"the last turn alone was over the budget: cut inside it at idx "
                f"{selection.cut_inside_turn} (after its finished tool calls); the new window "
                "opens with "
                f"{'the handoff' if options.inject_text != CUT_MARKER else 'a short marker'}"
                " as its first user message"
            )
        budget = _budget(options.selector)
        if carried.summary and budget is not None and carried.tokens > budget:
            result.warnings.append(
                f"the compaction summary and the turn's request (~{carried.tokens:,} tokens) are "
                f"over the budget of {budget:,} on their own: kept anyway, since a window "
                "without them resumes without knowing its task"
            )
        if options.dry_run:
            return result
        final = path.with_name(f"{new_sid}.jsonl")
        # A tail retain (diet, forge, the tunnel) must keep what the person said last, or what stands for it;
        # a range or days the person picked is theirs to choose.
        required = carry.required_texts(transcript, complete) if options.selector.mode == "retain" else []
        expect = Expectation(session_id=new_sid, source_pairs=whole, required=required)
        produced = _produce(transcript, lines, new_sid, overhead, options, expect, carried)
        result.bytes_after = write_atomic(final, produced, lambda tmp: verify_session(tmp, expect), mode=_mode_of(path))
        if Fingerprint.of(path) != transcript.fingerprint:
            final.unlink(missing_ok=True)
            raise LiveSessionError(
                "the session file changed while it was being forged; nothing was kept",
                path=path,
                hint="wait until the conversation is idle and run again",
            )
        return result


def _budget(selector: Selector) -> int | None:
    return selector.retain if selector.mode == "retain" else selector.max_kept


def _narrowed(selector: Selector, tokens: int) -> Selector:
    """The selector with `tokens` (what the first user message carries) taken off its budget."""
    if selector.mode == "retain" and selector.retain is not None:
        return replace(selector, retain=selector.retain - tokens)
    if selector.max_kept is not None:
        return replace(selector, max_kept=max(0, selector.max_kept - tokens))
    return selector


def _select(t: Transcript, complete: list[Entry], selector: Selector) -> tuple[Selection, carry.Carried]:
    """The selection and what its window carries, the carried parts counted against the budget.

    Carrying more leaves less room, which may move the cut later and carry more again; the parts only grow
    as the window shrinks, so a few rounds settle it."""
    selection = select(complete, selector, t.measure)
    carried = _carried(t, complete, selection)
    for _ in range(4):
        if not carried:
            break
        again = select(complete, _narrowed(selector, carried.tokens), t.measure)
        if again.kept == selection.kept:
            break
        selection, carried = again, _carried(t, complete, again)
    return selection, carried


def _carried(t: Transcript, complete: list[Entry], selection: Selection) -> carry.Carried:
    kept = [complete[i] for i in selection.kept]
    turn_start = None
    if selection.cut_inside_turn is not None:
        turn_start = complete[turns(complete)[-1][0]]
    return carry.carried(t, complete, kept, turn_start)


def _mode_of(path: Path) -> int:
    """The original's permission bits: Claude Code writes sessions 600, and a rewrite must not open them up."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o600


def _refuse_live(t: Transcript) -> list[str]:
    """Refuse a session being written right now; return the warning for a crash's half line, if any."""
    if Fingerprint.of(t.path) != t.fingerprint:
        raise LiveSessionError(
            "the session file is being written right now",
            path=t.path,
            hint="wait until the conversation is idle (no reply in progress) and run again",
        )
    if t.bad_lines and t.bad_lines[-1].error.startswith("incomplete last line"):
        idle = time.time() - t.fingerprint.mtime_ns / 1e9
        if idle < STALE_SECONDS:
            raise LiveSessionError(
                "the last line is only half written: a live session is writing this file",
                path=t.path,
                line=t.bad_lines[-1].lineno,
                hint="wait until the reply is finished and run again",
            )
        return [
            f"line {t.bad_lines[-1].lineno} is only half written and the file has not changed for "
            f"{idle / 60:.0f} minutes: a crash left it, so it is left out (the original keeps it)"
        ]
    return []


def _open_turn(events: list[Entry]) -> bool:
    """True when the chain ends mid-turn: a message or tool result with no reply yet, or a tool call
    still waiting for its result."""
    if not events:
        return False
    last = events[-1]
    if last.type == "user":
        return last.real_user or bool(last.tool_results)
    start = next((i for i in range(len(events) - 1, -1, -1) if events[i].real_user), 0)
    asked = {t for e in events[start:] for t in e.tool_uses}
    answered = {t for e in events[start:] for t in e.tool_results}
    return bool(asked - answered)


def _complete_prefix(t: Transcript, events: list[Entry], whole: set[str]) -> tuple[list[Entry], list[str]]:
    """Events up to the last assistant line after which no tool call is left waiting.

    A new window must end on an assistant message (otherwise Claude Code appends a
    synthetic "No response requested." on resume) and must not orphan a tool call. What follows that point
    (an interrupted tool call, an unanswered message) is reported, not kept. A turn still open in a file
    written moments ago means a live session: refuse rather than cut under it.
    """
    if _open_turn(events) and time.time() - t.fingerprint.mtime_ns / 1e9 < LIVE_SECONDS:
        raise LiveSessionError(
            "a turn is in progress (the session ends on an unanswered message or tool call)",
            path=t.path,
            hint="wait until the reply is finished and run again",
        )
    end = 0
    # Only the tail can be unfinished: start at the last turn and step back a turn while there is no
    # finished reply (a turn start never has a tool call of an earlier turn waiting).
    starts = [i for i, e in enumerate(events) if e.real_user] or [0]
    for start in reversed([0] + starts):
        found = _reply_end(events[start:], whole)
        if found:
            end = start + found
            break
    if end == 0:
        raise TranscriptError(
            _nothing_to_end_on(events),
            path=t.path,
            hint="a session that was just compacted, never answered, or is a subagent's "
            "sidechain has no main-chain reply to keep; talk one turn first",
        )
    dropped = [f"idx {e.idx} {e.type}: {e.text_preview}" for e in t.measure(events[end:])]
    return events[:end], dropped


def _reply_end(events: list[Entry], whole: set[str]) -> int:
    """Length of the longest prefix of `events` that ends on an assistant line with no tool call waiting."""
    pending: set[str] = set()
    end = 0
    for i, e in enumerate(events):
        pending.update(x for x in e.tool_uses if x in whole)
        pending.difference_update(e.tool_results)
        # An assistant line with a tool call is never an end: answered, its result follows; unanswered
        # (a crash), Claude Code drops the line on resume and the window would end on a user message.
        if e.type == "assistant" and not pending and not e.tool_uses:
            end = i + 1
    return end


def _end_on_reply(kept: list[Entry], whole: set[str]) -> list[Entry]:
    """A chosen set cut back to its last finished reply (a range may end mid-turn or before any reply)."""
    end = _reply_end(kept, whole)
    if end == 0:
        raise SelectionError(
            "the chosen events hold no finished assistant reply, and a new window must end on one",
            hint="move the end of the range (--keep-to-*) later, or pick other days",
        )
    return kept[:end]


def _nothing_to_end_on(events: list[Entry]) -> str:
    if not events:
        return "the file has no main-chain conversation (only sidechain or metadata lines)"
    return "the active chain has no finished assistant reply to end a new window on"


def _refuse_bad_lines_inside(t: Transcript, kept: list[Entry]) -> None:
    if not t.bad_lines or not kept:
        return
    lo, hi = min(e.offset for e in kept), max(e.offset for e in kept)
    inside = [b for b in t.bad_lines if lo <= b.offset <= hi]
    if inside:
        b = inside[0]
        raise TranscriptError(
            f"malformed line inside the range to keep: {b.error}",
            path=t.path,
            line=b.lineno,
            hint="repair or delete that line in a copy of the file, or choose a range that does not include it",
        )


def _kept_lines(t: Transcript, kept_events: list[Entry]) -> list[Entry]:
    """Kept events plus the other chain lines (attachments, …) that ride with them, in chain order.

    A non-event line (attachment, system) travels with the event before it, so Claude Code sees it where it
    saw it before; nothing after the last kept assistant reply is kept.
    """
    kept_ids = {id(e) for e in kept_events}
    out: list[Entry] = []
    owner_kept = False
    for e in t.chain:
        if e.is_event:
            owner_kept = id(e) in kept_ids
            if owner_kept:
                out.append(e)
        elif owner_kept:
            out.append(e)
    while out and out[-1].type != "assistant":
        out.pop()
    return out


def _system_overhead(t: Transcript, events: list[Entry], samples_wanted: int = 5) -> int:
    """Tokens of system prompt + tools every request carried: stored usage minus our estimate of the
    messages before it, over the first few replies (the median, so one odd request does not skew it)."""
    samples: list[int] = []
    running, seen = 0, set()
    for e in events:
        if len(samples) >= samples_wanted:
            break
        t.measure([e])
        if e.type == "assistant" and e.usage_ctx is not None and e.msg_id not in seen:
            seen.add(e.msg_id)
            samples.append(e.usage_ctx - running)
        running += e.size
    return max(0, int(statistics.median(samples))) if samples else 0


def _complete_pairs(events: list[Entry]) -> set[str]:
    uses = {t for e in events for t in e.tool_uses}
    return {t for e in events for t in e.tool_results if t in uses}


def _summarize(
    t: Transcript,
    options: ForgeOptions,
    new_sid: str,
    sel: Selection,
    kept: list[Entry],
    lines: list[Entry],
    overhead: int,
    dropped: list[str],
) -> ForgeResult:
    events = t.events
    stats = SquashStats()
    for e in kept:
        if isinstance(e.rewrite_stats, SquashStats):
            stats.add(e.rewrite_stats)
    uses = {x for e in kept for x in e.tool_uses}
    pairs = sum(1 for e in kept for x in e.tool_results if x in uses)
    window = t.window(options.window)
    tokens_kept = sum(e.size for e in kept)
    selection = {
        "mode": sel.mode,
        "turns_trimmed_for_max_kept": sel.trimmed_turns,
        "kept_from_idx": kept[0].idx if kept else None,
        "kept_to_idx": kept[-1].idx if kept else None,
        "cut_inside_turn": sel.cut_inside_turn,
    }
    if sel.days:
        selection["days"] = sel.days
    if sel.resolved_from:
        selection["from"] = asdict(sel.resolved_from)
    if sel.resolved_to:
        selection["to"] = asdict(sel.resolved_to)
    warnings = []
    if dropped:
        warnings.append(f"{len(dropped)} event(s) after the last finished reply are not kept")
    if t.bad_lines:
        warnings.append(
            f"{len(t.bad_lines)} malformed line(s) outside the kept range were skipped "
            f"(first at line {t.bad_lines[0].lineno})"
        )
    if stats.thinking_dropped:
        warnings.append(f"{stats.thinking_dropped} thinking block(s) dropped: content before them changed")
    return ForgeResult(
        mode=options.mode,
        dry_run=options.dry_run,
        source_session=t.session_id,
        source_path=str(t.path),
        new_session=new_sid,
        new_path=str(t.path.with_name(f"{new_sid}.jsonl")),
        events_total=len(events),
        events_kept=len(kept),
        turns_total=sel.turns_total,
        turns_kept=sum(e.real_user for e in kept) + (1 if kept and not kept[0].real_user else 0),
        tokens_kept=tokens_kept,
        usage_before=t.last_usage,
        pct_before=context_pct(t.last_usage, window),
        pct_after=context_pct(overhead + tokens_kept, window),
        window=window,
        thinking_kept=sum(e.thinking for e in kept),
        tool_pairs_kept=pairs,
        images_squashed=stats.images,
        payloads_squashed=stats.payloads,
        chars_removed=stats.chars_removed,
        thinking_dropped=stats.thinking_dropped,
        selection=selection,
        injected=bool(options.inject_text) and options.inject_text != CUT_MARKER,
        dropped_trailing=dropped,
        warnings=warnings,
        bytes_before=t.fingerprint.size,
    )


# What opens a window cut inside a long turn when no handoff is given: the person did not say it, so it is a
# meta line, and it tells the model why the turn starts mid-way.
CUT_MARKER = "（接上文：这一轮很长，前面的部分留在原会话里，这里从中途接着做。）"


def _handoff_line(template: dict, blocks: list[tuple[str, dict]], new_sid: str, when: dt.datetime) -> dict:
    """The new window's first user line: what is carried (see carry.py), then the marker or the handoff."""
    line: dict[str, object] = {"parentUuid": None, "isSidechain": False}
    for key in ("userType", "cwd"):
        if key in template:
            line[key] = template[key]
    line["sessionId"] = new_sid
    for key in ("version", "gitBranch"):
        if key in template:
            line[key] = template[key]
    line["type"] = "user"
    if len(blocks) == 1 and blocks[0][0] in (carry.HANDOFF, carry.MARKER):
        content: object = blocks[0][1]["text"]  # a lone handoff stays a plain string, as it always was
    else:
        content = [block for _, block in blocks]
    line["message"] = {"role": "user", "content": content}
    line["isMeta"] = True
    line["ombreHandoff"] = True
    line["ombreCarry"] = [kind for kind, _ in blocks]
    line["uuid"] = str(uuidlib.uuid4())
    line["timestamp"] = _iso(when)
    return line


def _opening_blocks(options: ForgeOptions, carried: carry.Carried) -> list[tuple[str, dict]]:
    blocks = list(carried.blocks)
    if options.inject_text:
        kind = carry.MARKER if options.inject_text == CUT_MARKER else carry.HANDOFF
        blocks.append((kind, {"type": "text", "text": f"{HANDOFF_HEADER}\n\n{options.inject_text.strip()}"}))
    else:
        blocks += carried.earlier  # a diet of a swapped window keeps what its swap told the model
    return blocks


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _reset_usage(usage: dict, context: int) -> None:
    """Stored usage as if this window had been sent fresh: Claude Code reads it after `--resume`."""
    usage["input_tokens"] = context
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if key in usage:
            usage[key] = 0
    if isinstance(usage.get("cache_creation"), dict):
        for key in usage["cache_creation"]:
            usage["cache_creation"][key] = 0


def _produce(
    t: Transcript,
    lines: list[Entry],
    new_sid: str,
    overhead: int,
    options: ForgeOptions,
    expect: Expectation,
    carried: carry.Carried,
):
    """Yield the new file's lines: one linear chain, new session id, strictly increasing timestamps."""
    prev_uuid: str | None = None
    prev_when: dt.datetime | None = None
    running = overhead
    step = dt.timedelta(milliseconds=1)
    opening = _opening_blocks(options, carried)
    if opening:
        first = t.load(lines[0])
        start = parse_timestamp(first.get("timestamp")) or dt.datetime.now(dt.timezone.utc)
        handoff = _handoff_line(first, opening, new_sid, start - step)
        prev_uuid, prev_when = handoff["uuid"], start - step
        expect.handoff_uuid = handoff["uuid"]
        running += sum(estimate_block(b) for _, b in opening)
        yield dump_line(handoff)
    for e in lines:
        obj = t.load(e)
        obj["parentUuid"] = prev_uuid
        obj["sessionId"] = new_sid
        when = parse_timestamp(obj.get("timestamp"))
        if when is None or (prev_when is not None and when <= prev_when):
            when = (prev_when + step) if prev_when else dt.datetime.now(dt.timezone.utc)
            obj["timestamp"] = _iso(when)
        message = obj.get("message")
        if e.type == "assistant" and isinstance(message, dict):
            if isinstance(message.get("usage"), dict):
                _reset_usage(message["usage"], running)
            expect.thinking[e.uuid] = _thinking_of(message)
        running += e.size
        prev_uuid, prev_when = obj.get("uuid"), when
        yield dump_line(claude_key_order(obj))


def claude_key_order(obj: dict) -> dict:
    """`parentUuid` first and `uuid` directly before `timestamp`, as Claude Code's readers expect."""
    if list(obj)[:1] == ["parentUuid"] and _uuid_before_timestamp(obj):
        return obj
    out = {"parentUuid": obj.get("parentUuid")}
    for key, value in obj.items():
        if key in ("parentUuid", "uuid"):
            continue
        if key == "timestamp" and "uuid" in obj:
            out["uuid"] = obj["uuid"]
        out[key] = value
    if "uuid" in obj and "uuid" not in out:
        out["uuid"] = obj["uuid"]
    return out


def _uuid_before_timestamp(obj: dict) -> bool:
    keys = list(obj)
    if "timestamp" not in obj:
        return True
    i = keys.index("timestamp")
    return i > 0 and keys[i - 1] == "uuid"


def _thinking_of(message: dict) -> list[tuple[str, str]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        (b.get("thinking") or b.get("data") or "", b.get("signature") or "")
        for b in content
        if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
    ]


def _run_entry(
    mode: str,
    old_sid: str,
    new_sid: str | None,
    options: ForgeOptions,
    *,
    ok: bool,
    error: str | None = None,
    summary: ForgeResult | None = None,
) -> dict:
    """The history log's line for one writing run: old sid, new sid, mode, options (the handoff text
    left out: it belongs to the person) and the result."""
    opts = asdict(options) if is_dataclass(options) else dict(vars(options))
    opts.pop("inject_text", None)  # the handoff text itself belongs to the person, not to a log
    opts.pop("history", None)
    entry = {
        "mode": mode,
        "old_sid": old_sid,
        "new_sid": new_sid,
        "ok": ok,
        "options": json.loads(json.dumps(opts, default=str)),
    }
    if error:
        entry["error"] = error
    if summary is not None:
        s = asdict(summary)
        entry["result"] = {
            k: s[k]
            for k in ("events_kept", "tokens_kept", "pct_before", "pct_after", "new_path", "bytes_after")
            if k in s
        }
    return entry
