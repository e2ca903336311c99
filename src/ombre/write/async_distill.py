"""async_distill: settle what was said into memory in the background, not only at a swap.

Triggers: 5 real person turns since the last run, 10 idle minutes after a new turn, or right before a forge
(the keeper's hook point). A cursor per session (the uuid and time of the last turn read) means a run reads
only what is new; a forged session, which keeps its lines' uuids, inherits its parent's cursor. A session
with no cursor is read from its start when it began after Ombre started (`ombre install claude-code`, or the
first distillation), and from that moment on when it is older: what was said before Ombre is not swept up
(no back-scan of history) unless the person turns warm-up on, which reads its last turns too. Each run
proposes 0–3 candidates (zero is a normal answer) from the PERSON's turns only — the assistant's words are
never stored as the person's facts — each quoted verbatim from the transcript, then held as `auto` through
write_gate (low-surprise ones are only logged) and, where it applies, commitment arbitration; write_gate's
daily quota caps automatic holds. A failing model means this run writes nothing and the cursor stays where
it was.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import jsonl_log
from ..clock import now_utc, parse_timestamp, shanghai_date
from ..files import replace_atomic
from ..memory import write_gate
from ..memory.hold import HoldRequest
from ..memory.service import MemoryService
from ..settings import Settings
from ..transcript.chain import scan
from . import distill_rules
from .llm import JsonModel, ModelError, OverBudget, ledger

DISTILL_LOG_MAX_BYTES = 2_000_000
TURNS_TRIGGER = distill_rules.SEGMENT_TURNS
IDLE_TRIGGER_S = 600
WARMUP_TURNS = 10
KINDS = ("承诺", "约定", "规则", "事件", "偏好", "关系", "感受")  # what a model's candidate may be; else 事件
SYSTEM = (
    "你从一段陪伴对话里挑出值得长期记住的事，最多 %d 条，可以是 0 条。只看「对方」说的话，绝不把「我」（助手）"
    '说的话当成对方的事实。只输出 JSON：{"candidates": [{"type": "承诺|约定|规则|事件|偏好|关系|感受", '
    '"content": "一句话概括", "quote": "对方的原话，一字不改，最多两句", "importance": 1-10}]}。'
    "闲聊、一时的情绪、寒暄不要记。"
)


def start_path(settings: Settings) -> Path:
    return settings.ombre_home / "distill-start.json"


def started(settings: Settings) -> dt.datetime | None:
    """When Ombre started listening: a session begun since is read from its start."""
    try:
        return parse_timestamp(json.loads(start_path(settings).read_text(encoding="utf-8")).get("at"))
    except (OSError, ValueError, AttributeError):
        return None


def mark_started(settings: Settings, now: dt.datetime | None = None) -> dt.datetime:
    """Record when Ombre started listening (install, or the first distillation); the first time is kept."""
    at = started(settings)
    if at is None:
        at = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
        replace_atomic(start_path(settings), json.dumps({"at": at.isoformat(timespec="seconds")}).encode("utf-8"))
    return at


def reads_from(settings: Settings) -> str:
    """What install and doctor say about where distillation starts reading."""
    at = started(settings)
    since = settings.local(at.isoformat()) if at else "the first distillation"
    if settings.distill_warmup:
        return (
            f"sessions begun since {since} are read from their start; older ones from then on, plus their "
            f"last {WARMUP_TURNS * 2} turns (warm-up on)"
        )
    return (
        f"sessions begun since {since} are read from their start; older ones only from then on "
        "(OMBRE_DISTILL_WARMUP=1 also reads their last turns)"
    )


@dataclass
class Turn:
    who: str  # person | assistant
    text: str
    uuid: str = ""
    when: str | None = None  # ISO timestamp


@dataclass
class Candidate:
    type: str
    content: str
    quote: str
    importance: int
    uuid: str = ""
    when: str | None = None


@dataclass
class DistillResult:
    session: str
    ran: bool
    reason: str
    new_turns: int = 0
    candidates: list[dict] = field(default_factory=list)
    held: list[dict] = field(default_factory=list)
    cursor: str | None = None
    dry_run: bool = False
    fallback: str = ""  # why the rules answered instead of the configured model
    explain: list[dict] = field(default_factory=list)  # how the rules read each clause (run(explain=True))

    def to_dict(self) -> dict:
        return asdict(self)


def rules_candidates(
    turns: list[Turn],
    examples: distill_rules.Examples | None = None,
    add_from: float | None = None,
    explain: list[dict] | None = None,
    veto_below: float | None = None,
) -> list[Candidate]:
    """What the rules keep of the person's turns (write/distill_rules.py), each quoted as typed; `explain`
    collects how each clause was read (distill_rules.candidates)."""
    person = [(n, t.text) for n, t in enumerate(turns) if t.who == "person"]
    spoken = [(t.who, t.text) for t in turns]  # the exchanges around them: distill_rules reads what they settle
    return [
        Candidate(
            kept.kind,
            distill_rules.memory_text(clause, kept.before),
            clause,
            kept.importance,
            turns[n].uuid,
            turns[n].when,
        )
        for kept, clause, n in distill_rules.candidates(
            person,
            examples,
            distill_rules.replies(spoken),
            add_from,
            distill_rules.accepted_proposals(spoken),
            explain,
            veto_below,
            distill_rules.settled_offers(spoken),
        )
    ]


def model_candidates(model: JsonModel, turns: list[Turn]) -> list[Candidate]:
    lines = [f"{'对方' if t.who == 'person' else '我'}：{t.text}" for t in turns]
    limit = distill_rules.room(sum(t.who == "person" for t in turns))
    answer = model.ask(SYSTEM % limit, "\n".join(lines), purpose="distill")
    raw = answer.get("candidates")
    if not isinstance(raw, list):
        raise ModelError("the answer has no candidates list")
    out = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        quote = str(item.get("quote") or "").strip()
        source = next((t for t in turns if t.who == "person" and quote and quote in t.text), None)
        if source is None:  # a quote not in the person's own words is never stored
            continue
        given = item.get("type")
        kind = given if isinstance(given, str) and given in KINDS else "事件"
        importance = item.get("importance")
        importance = importance if isinstance(importance, int) and 1 <= importance <= 10 else 5
        out.append(
            Candidate(kind, str(item.get("content") or quote)[:200], quote, importance, source.uuid, source.when)
        )
    return distill_rules.capped(out, lambda c: c.type, lambda c: c.importance, limit)


def read_turns(path: Path) -> tuple[str, list[Turn]]:
    """The session's person and assistant text turns on its active chain, oldest first."""
    with scan(Path(path)) as t:
        turns = [Turn("person" if e.real_user else "assistant", text, e.uuid, e.timestamp) for e, text in t.spoken()]
        return t.session_id, turns


class Distiller:
    def __init__(self, settings: Settings, service: MemoryService, model: JsonModel | None = None) -> None:
        self.settings, self.service, self.model = settings, service, model
        self._examples: distill_rules.Examples | None = None

    def _cursor_key(self, sid: str) -> str:
        return f"distill:cursor:{sid}"

    def cursor(self, sid: str) -> dict | None:
        raw = self.service.store.meta(self._cursor_key(sid))
        if raw:
            return json.loads(raw)
        for entry in reversed(jsonl_log.read(self.settings.history_log, limit=200)):  # a forged session's parent
            if entry.get("new_sid") == sid and entry.get("old_sid"):
                parent = self.service.store.meta(self._cursor_key(entry["old_sid"]))
                if parent:
                    return json.loads(parent)
        return None

    def run(
        self,
        path: Path,
        *,
        force: bool = False,
        dry_run: bool = False,
        explain: bool = False,
        now: dt.datetime | None = None,
    ) -> DistillResult:
        now = now or dt.datetime.now(dt.timezone.utc)
        if not self.settings.async_distill:  # decided before the transcript is read (seconds for a long one)
            return self._log(DistillResult(Path(path).stem, False, "ASYNC_DISTILL=0"))
        sid, turns = read_turns(path)
        cursor = self.cursor(sid)
        new = _after(turns, cursor)
        start_note = ""
        if cursor is None:
            new, start_note = self._first_read(turns, now, dry_run)
        person = [t for t in new if t.who == "person"]
        result = DistillResult(sid, False, "", len(person), cursor=(cursor or {}).get("uuid"), dry_run=dry_run)
        due = self._due(person, now)
        if not person:
            result.reason = "nothing new" + start_note
            if cursor is None and turns and not dry_run:
                self._save_cursor(sid, turns[-1])  # all of it came before Ombre: start after it
                result.cursor = turns[-1].uuid
            return self._log(result)
        if not (force or due):
            result.reason = f"not due ({len(person)}/{TURNS_TRIGGER} new turns, not idle)" + start_note
            return self._log(result)
        advance, fallback = True, ""
        try:
            candidates = model_candidates(self.model, new) if self.model is not None else self._rules(new)
        except OverBudget as exc:  # by design, not a failure: the rules answer and the cursor moves on
            candidates, fallback = self._rules(new), f"rules answered: {exc}"
        except ModelError as exc:  # the rules answer now, and the cursor stays so the model reads these again
            candidates, fallback, advance = self._rules(new), f"model failed, rules answered: {exc}", False
        result.ran, result.reason = True, ("forced" if force and not due else due) + start_note
        result.fallback = fallback
        result.candidates = [asdict(c) for c in candidates]
        if explain:  # the rules' reading, whichever backend answered: why each clause was or was not kept
            self._rules(new, result.explain)
        if dry_run:
            return result
        for c in candidates:
            said_at = parse_timestamp(c.when)
            day = shanghai_date(said_at) if said_at else None
            held = self.service.hold(
                HoldRequest(
                    content=c.content,
                    type=c.type,
                    importance=c.importance,
                    quote=c.quote,
                    from_session=sid,
                    evidence_date=day,
                    source="auto",
                )
            )
            result.held.append(
                {
                    "content": c.content,
                    "stored": held.stored,
                    "decision": held.decision,
                    "id": held.id,
                    "status": held.status,
                    "reasons": held.reasons,
                }
            )
        if advance:
            self._save_cursor(sid, new[-1])
            result.cursor = new[-1].uuid
        return self._log(result)

    def _first_read(self, turns: list[Turn], now: dt.datetime, dry_run: bool) -> tuple[list[Turn], str]:
        """What a session with no cursor has to read, and a note saying from where."""
        start = started(self.settings) or (now if dry_run else mark_started(self.settings, now))
        began = parse_timestamp(turns[0].when) if turns else None
        if began is None or began >= start:
            return turns, "; new session: read from its start"
        since = [t for t in turns if (parse_timestamp(t.when) or began) >= start]
        if self.settings.distill_warmup:
            recent = turns[-WARMUP_TURNS * 2 :]
            return (since if len(since) > len(recent) else recent), "; older session: warm-up reads its last turns"
        return since, f"; older session: read from {start.isoformat(timespec='seconds')} (when ombre started) on"

    def _rules(self, turns: list[Turn], explain: list[dict] | None = None) -> list[Candidate]:
        """The rules, with the labelled examples' vote when the fast encoder is at hand."""
        if self._examples is None and "use" in self.service.encoders and distill_rules.EXAMPLES.exists():
            self._examples = distill_rules.Examples(self.service.encoders["use"], cache=self.settings.cache_dir)
        try:
            return rules_candidates(turns, self._examples, explain=explain)
        except Exception:  # noqa: BLE001 — an encoder that fails leaves the cue lists to answer alone
            if explain is not None:
                explain.clear()
            return rules_candidates(turns, explain=explain)

    def _due(self, person: list[Turn], now: dt.datetime) -> str:
        if len(person) >= TURNS_TRIGGER:
            return f"{len(person)} new turns"
        last = parse_timestamp(person[-1].when) if person else None
        if last is not None and (now - last).total_seconds() >= IDLE_TRIGGER_S:
            return "idle 10 minutes"
        return ""

    def _save_cursor(self, sid: str, turn: Turn) -> None:
        self.service.store.set_meta(self._cursor_key(sid), json.dumps({"uuid": turn.uuid, "when": turn.when}))

    def _log(self, result: DistillResult) -> DistillResult:
        if not result.dry_run:
            entry = {k: v for k, v in result.to_dict().items() if k != "candidates"}
            jsonl_log.append(self.settings.distill_log, entry, max_bytes=DISTILL_LOG_MAX_BYTES)
        return result


def _after(turns: list[Turn], cursor: dict | None) -> list[Turn]:
    """The turns after the cursor: by uuid where it is still on the chain, else by time."""
    if cursor is None:
        return turns
    for i, t in enumerate(turns):
        if t.uuid == cursor.get("uuid"):
            return turns[i + 1 :]
    when = cursor.get("when")
    return [t for t in turns if t.when and when and t.when > when]


def status(settings: Settings, service: MemoryService, path: Path | None) -> dict:
    report = {
        "enabled": settings.async_distill,
        "daily_cap": settings.auto_hold_daily,
        "model": {"backend": settings.llm, **ledger(settings).today()},
        "auto_holds_today": service.store.gate_count(shanghai_date(now_utc()), "auto", write_gate.QUOTA_DECISIONS),
        "last_outcomes": jsonl_log.read(settings.distill_log, limit=20),
    }
    if path is not None:
        sid, turns = read_turns(path)
        cursor = Distiller(settings, service).cursor(sid)
        report |= {
            "session": sid,
            "cursor": cursor,
            "new_person_turns": len([t for t in _after(turns, cursor) if t.who == "person"]) if cursor else None,
        }
    return report
