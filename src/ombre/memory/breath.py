"""breath: recall. The query is built once from the request; its signals (signals.py) are fused into one
relevance per memory (fusion.py); then importance, activation, decay and emotion move the order only gently
(never a "+1 per hit" heat score as the main order). Pinned core is surfaced by policy, not by competing for
the budget; the day's anniversary card comes with every recall that day; results say why.

One function serves the CLI, HTTP, MCP, the hook and the gateway (through MemoryService and inject.cards).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

from ..clock import SHANGHAI, iso, now_utc
from ..errors import MemoryInputError, StoreError
from ..tokens import estimate_text
from . import anniversary, emotion
from .embed import Embedder
from .fusion import is_relevant, retrieve, settle
from .model import ASKED_ONLY, HANDOFF_TYPE, Memory
from .query import Query
from .signals import E5_TOKENS
from .store import MemoryStore

LOADED_PER_RESULT, MIN_LOADED = 4, 24  # fused candidates read from the store per wanted card, at least
DECAY_PER_DAY = 0.05  # e^(−0.05·days) as in the public Ombre; commitments and pinned are exempt


@dataclass(frozen=True)
class Adjust:
    """How far importance, activation, decay and emotion may move a fused score: gently, a tie-breaker
    between memories about equally relevant. They order the places after the first; the first is the memory
    whose evidence stands out most (fuse's head), and no metadata outweighs that (bench/recall_eval.py shows
    what each adjustment costs in recall)."""

    importance: float = 0.04  # importance 1 weighs this much less than importance 10
    activation: float = 0.02  # a memory recalled many times weighs at most this much more
    decay: float = 0.04  # a memory long inactive weighs at most this much less
    emotion: float = 0.04  # a memory in the mood the person is in weighs at most this much more


ADJUST = Adjust()


@dataclass
class BreathRequest:
    """The parameters of the public Ombre's `breath` tool, plus `context`: the recent chat, oldest first
    (turns as {"role", "text"} or strings; see query.Query.build), for a query that is a fragment."""

    query: str = ""
    max_results: int = 5
    max_tokens: int = 1800
    domain: str | None = None
    valence: float | None = None
    arousal: float | None = None
    is_session_start: bool = False
    context: list[dict | str] | str | None = None


@dataclass
class Card:
    id: str
    title: str
    content: str
    type: str
    status: str
    evidence: str  # the quote, or 未确认
    pinned: bool
    score: float
    why: dict = field(default_factory=dict)
    tokens: int = 0
    situation: str = ""
    conflicts: list[str] = field(default_factory=list)
    relevant: bool = True  # close enough to show unasked (is_relevant); False: a filler card
    lead: bool = False  # the answer's first card (fuse's head), which has a lower bar (Gate)

    def render(self) -> str:
        mark = "" if self.status == "confirmed" else "（未确认）"
        where = f"（情境：{self.situation}）" if self.situation else ""
        head = f"[{self.type}{mark}] {self.title + '：' if self.title else ''}{self.content}{where}"
        if self.conflicts:  # two memories that contradict: shown as a conflict, never as two truths
            head += f"【与 {'、'.join(self.conflicts)} 矛盾，先问清楚】"
        return head + (f" —— 原话{self.evidence}" if self.evidence.startswith("「") else "")


NOTHING = "（没有想起相关的事）"


@dataclass
class BreathResult:
    cards: list[Card] = field(default_factory=list)
    pinned: list[Card] = field(default_factory=list)
    anniversary: Card | None = None
    handoff: str | None = None  # the latest 会话交接 (session start)
    emotion: str | None = None
    degraded: list[str] = field(default_factory=list)
    encoders: list[str] = field(default_factory=list)  # the encoders this recall embedded with
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "text": self.render()}

    def render(self) -> str:
        """The text a person or an agent reads: the CLI prints it, MCP returns it, HTTP sends it as `text`."""
        parts = [self.handoff] if self.handoff else []
        if self.pinned:
            parts.append("【置顶核心】\n" + "\n".join(_line(c) for c in self.pinned))
        close = [c for c in self.cards if c.relevant]
        loose = [c for c in self.cards if not c.relevant]
        if close:
            parts.append("【想起的事】\n" + "\n".join(_line(c) for c in close))
        if loose:
            parts.append("【可能相关（不太确定）】\n" + "\n".join(_line(c) for c in loose))
        if self.anniversary:
            parts.append("【今日纪念】\n" + _line(self.anniversary))
        return "\n\n".join(parts) or NOTHING


def bookkeeping(write: Callable[[], object], degraded: list[str]) -> None:
    """A write that only keeps count (activation, what a session was shown). Recall is a read: it answers
    even when the database cannot take the write — a full disk — and says so in `degraded`."""
    try:
        write()
    except StoreError as exc:
        full = "full" in str(exc).lower()
        degraded.append(("磁盘已满：" if full else "") + f"召回照常，但用量没有记下（{exc}）")


def _line(card: Card) -> str:
    return f"- {card.render()}（id {card.id}）"


def to_card(m: Memory, score: float, why: dict, relevant: bool = True) -> Card:
    card = Card(
        m.id,
        m.title,
        m.content,
        m.type,
        m.status,
        m.evidence.mark,
        m.pinned,
        round(score, 4),
        why,
        situation=m.situation,
        conflicts=list(m.conflicts),
        relevant=relevant,
    )
    card.tokens = estimate_text(card.render())
    return card


def _days_since(stamp: str, now: dt.datetime) -> float:
    try:
        return max(0.0, (now - dt.datetime.fromisoformat(stamp)).total_seconds() / 86400)
    except ValueError:
        return 0.0


def rank_factor(
    m: Memory, now: dt.datetime, adjust: Adjust = ADJUST, valence: float | None = None, arousal: float | None = None
) -> tuple[float, dict]:
    """How much more or less than its fused relevance a memory weighs, and why: each part within its
    `adjust` span around 1."""
    importance = 1 - adjust.importance * (10 - m.importance) / 9
    activation = 1 + adjust.activation * min(1.0, math.log1p(max(0, m.activation_count)) / math.log(21))
    if m.is_commitment or m.pinned:
        decay = 1.0
    else:
        decay = 1 - adjust.decay * (1 - math.exp(-DECAY_PER_DAY * _days_since(m.last_active, now)))
    mood = 1.0
    if valence is not None or arousal is not None:
        closeness = [1 - abs(m.valence - valence)] if valence is not None else []
        closeness += [1 - abs(m.arousal - arousal)] if arousal is not None else []
        mood = 1 + adjust.emotion * sum(closeness) / len(closeness)
    parts = {"importance": importance, "activation": activation, "decay": decay, "emotion": mood}
    return importance * activation * decay * mood, {k: round(v, 4) for k, v in parts.items()}


def breath(
    store: MemoryStore,
    req: BreathRequest,
    *,
    encoders: Mapping[str, Embedder] | None = None,
    now: dt.datetime | None = None,
    touch: bool = True,
    deadline: float | None = None,
    adjust: Adjust = ADJUST,
    e5_tokens: int = E5_TOKENS,
) -> BreathResult:
    started = time.perf_counter()
    now = now or now_utc()
    if req.max_results < 1 or req.max_results > 50:
        raise MemoryInputError(f"max_results {req.max_results} is not between 1 and 50")
    if req.max_tokens < 50:
        raise MemoryInputError(f"max_tokens {req.max_tokens} is too small for a single card")
    result = BreathResult()
    query = Query.build(req.query or "", req.context)
    if req.is_session_start and not query.latest:
        result.handoff, result.pinned = session_start(store)
    if query.latest:
        _recall(store, req, query, encoders or {}, now, result, deadline, adjust, e5_tokens)
    today = now.astimezone(SHANGHAI).date()
    anniv = anniversary.pick(store, today)
    if anniv is not None:
        result.anniversary = to_card(anniv, 1.0, {"anniversary": today.isoformat()})
    if touch:
        # a filler card (below the gate) was not recalled for the person: it earns no activation
        bookkeeping(
            lambda: store.touch([c.id for c in result.cards + result.pinned if c.relevant], iso(now)), result.degraded
        )
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result


def _recall(
    store: MemoryStore,
    req: BreathRequest,
    query: Query,
    encoders: Mapping[str, Embedder],
    now: dt.datetime,
    result: BreathResult,
    deadline: float | None,
    adjust: Adjust,
    e5_tokens: int,
) -> None:
    bias = emotion.bias(query.latest)
    target_v = req.valence if req.valence is not None else (bias.valence if bias else None)
    target_a = req.arousal if req.arousal is not None else (bias.arousal if bias else None)
    result.emotion = bias.label if bias else None
    fused = retrieve(
        store,
        query,
        encoders=encoders,
        extra_terms=bias.extra_terms if bias else (),
        degraded=result.degraded,
        deadline=deadline,
        used=result.encoders,
        e5_tokens=e5_tokens,
    )
    for key in encoders:
        if store.has_unembedded(key):
            result.degraded.append(f"some memories have no {key} vector yet: other signals find them")
    # The adjustments move a score by a few per cent, so only the best-fused memories can end in the
    # answer: they are loaded a chunk at a time until enough live ones are in hand (archived, replaced
    # and other-domain memories are passed over).
    order = sorted(fused, key=lambda mid: -fused[mid][0])
    chunk = max(LOADED_PER_RESULT * req.max_results, MIN_LOADED)
    scored: list[tuple[float, Memory, dict]] = []
    for start in range(0, len(order), chunk):
        found = store.get_many(order[start : start + chunk])
        for mid in order[start : start + chunk]:
            m = found.get(mid)
            if (
                m is None
                or not m.current
                or (req.domain and m.domain != req.domain)
                or (m.type in ASKED_ONLY and req.domain != ASKED_ONLY[m.type])
            ):
                continue
            relevance, why = fused[mid]
            factor, parts = rank_factor(m, now, adjust, target_v, target_a)
            scored.append((relevance * factor, m, {**why, **parts}))
        if len(scored) >= chunk:
            break
    # what the memories' own words say (fusion.settle), and the head, kept first whatever the adjustments say
    factors, head = settle(order, {m.id: m.content for _, m, _ in scored}, query.latest)
    scored = [(score * factors[m.id], m, {**why, "form": round(factors[m.id], 4)}) for score, m, why in scored]
    scored.sort(key=lambda x: (x[1].id != head, -x[0]))
    budget = req.max_tokens
    for score, m, why in scored:
        lead = m.id == head
        relevant = is_relevant(why, lead=lead)
        if m.pinned:
            if relevant and len(result.pinned) < 3:  # pinned core: shown when relevant, outside the budget
                result.pinned.append(to_card(m, score, why))
            continue
        if len(result.cards) >= req.max_results:
            continue
        card = to_card(m, score, why, relevant)
        card.lead = lead
        if card.tokens > budget:
            continue
        budget -= card.tokens
        result.cards.append(card)


def session_start(store: MemoryStore) -> tuple[str | None, list[Card]]:
    """What a new window hears first: the latest 会话交接, and the pinned core."""
    handoffs = store.list(type=HANDOFF_TYPE, limit=1)
    pinned = [to_card(m, 1.0, {"policy": "pinned core"}) for m in store.list(pinned=True)]
    handoff = None
    if handoffs:
        h = handoffs[0]
        handoff = f"【最近一次会话交接 · {h.created[:10]}】\n{h.content}"
    return handoff, pinned
