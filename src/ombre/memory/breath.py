"""breath: recall — hybrid keyword + vector retrieval, fused, then ranked with importance, activation
and decay (never a "+1 per hit" heat score as the main order, seed §9.2, §13). Pinned core is surfaced
by policy, not by competing for the budget; at most one anniversary card a day; results say why."""
from __future__ import annotations

import datetime as dt
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import MemoryInputError
from ..tokens import estimate_text
from . import anniversary, emotion
from .embed import QUERY_CHARS, SIMILARITY_FLOOR, Embedder
from .model import HANDOFF_TYPE, SHANGHAI, Memory, iso, now_utc
from .segment import query_terms
from .store import MemoryStore

# Fusion weights, tuned on MemDaily (bench/recall_memdaily.py: chosen on the 01_simple files, reported on
# all six question types). Keywords still decide between memories the vectors find equally close.
KEYWORD_WEIGHT = 0.1
VECTOR_WEIGHT = 0.9
CANDIDATES = 100
OVERLAP_FROM = 20_000  # memories with vectors from which embedding and keyword search run side by side
DECAY_PER_DAY = 0.05  # e^(−0.05·days) as in the public Ombre; commitments and pinned are exempt
MIN_RELEVANCE = 0.05  # a fused score below this is noise, not a memory worth a card


@dataclass
class BreathRequest:
    """The parameters of the public Ombre's `breath` tool."""

    query: str = ""
    max_results: int = 5
    max_tokens: int = 1800
    domain: str | None = None
    valence: float | None = None
    arousal: float | None = None
    is_session_start: bool = False


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

    def render(self) -> str:
        mark = "" if self.status == "confirmed" else "（未确认）"
        where = f"（情境：{self.situation}）" if self.situation else ""
        head = f"[{self.type}{mark}] {self.title + '：' if self.title else ''}{self.content}{where}"
        if self.conflicts:  # two memories that contradict: shown as a conflict, never as two truths
            head += f"【与 {'、'.join(self.conflicts)} 矛盾，先问清楚】"
        return head + (f" —— 原话{self.evidence}" if self.evidence.startswith("「") else "")


@dataclass
class BreathResult:
    cards: list[Card] = field(default_factory=list)
    pinned: list[Card] = field(default_factory=list)
    anniversary: Card | None = None
    handoff: str | None = None
    emotion: str | None = None
    degraded: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def to_card(m: Memory, score: float, why: dict) -> Card:
    card = Card(m.id, m.title, m.content, m.type, m.status, m.evidence.mark, m.pinned, round(score, 4), why,
                situation=m.situation, conflicts=list(m.conflicts))
    card.tokens = estimate_text(card.render())
    return card


def _days_since(stamp: str, now: dt.datetime) -> float:
    try:
        return max(0.0, (now - dt.datetime.fromisoformat(stamp)).total_seconds() / 86400)
    except ValueError:
        return 0.0


def rank_factor(m: Memory, now: dt.datetime) -> tuple[float, dict]:
    """How much more than its relevance a memory weighs: importance, a gentle activation term, decay."""
    importance = 0.75 + 0.25 * m.importance / 10
    activation = (1 + m.activation_count) ** 0.05
    if m.is_commitment or m.pinned:
        decay = 1.0
    else:
        decay = 0.8 + 0.2 * math.exp(-DECAY_PER_DAY * _days_since(m.last_active, now))
    return importance * activation * decay, {"importance": round(importance, 3), "decay": round(decay, 3),
                                            "activation": round(activation, 3)}


def _normalise(scores: dict[str, float], floor: float = 0.0) -> dict[str, float]:
    """Scores as a share of the best one above `floor`: the best match is 1, anything at the floor 0.

    BM25 scores start at 0; cosine similarities of e5 all sit high, so they are measured from the
    model's floor (embed.SIMILARITY_FLOOR), or an unrelated memory would look half relevant.
    """
    if not scores:
        return {}
    span = max(scores.values()) - floor
    if span <= 0:
        return {k: 0.0 for k in scores}
    return {k: max(0.0, (v - floor) / span) for k, v in scores.items()}


def retrieve(store: MemoryStore, query: str, *, embedder: Embedder | None, extra_terms: tuple[str, ...] = (),
             keyword_weight: float = KEYWORD_WEIGHT, vector_weight: float = VECTOR_WEIGHT,
             limit: int = CANDIDATES, degraded: list[str] | None = None,
             query_chars: int | None = None) -> dict[str, tuple[float, dict]]:
    """Fused relevance per memory id: normalised BM25 over segmented terms and normalised cosine.
    Only the query's last `query_chars` characters (default embed.QUERY_CHARS) are embedded; keywords
    still use all of it: a latency budget."""
    vector: dict[str, float] = {}
    embedded = query[-(query_chars or QUERY_CHARS):]
    ids, matrix = store.vectors() if embedder is not None and vector_weight > 0 else ([], None)
    # The model and SQLite both leave Python while they work, so in a big store the query is embedded
    # while FTS5 searches; in a small one the search is quick and a second thread only contends with the
    # model's own threads for the two cores (measured: bench/breath_latency.py).
    with ThreadPoolExecutor(max_workers=1) as pool:  # no thread starts unless a task is submitted
        pending = pool.submit(embedder.query, embedded) if len(ids) >= OVERLAP_FROM else None
        keyword = dict(store.keyword_search(query_terms(query, extra_terms), limit))
        if len(ids):
            try:
                vec_q = pending.result() if pending is not None else embedder.query(embedded)
                # einsum, not @: BLAS threads spinning after a matmul starve the embedding model's own
                # threads on a 2-core machine (query 15 ms → 40 ms); a plain loop is 13 ms at 100k.
                sims = np.einsum("ij,j->i", matrix, vec_q)
                top = np.argpartition(-sims, min(limit, len(ids) - 1))[:limit]
                vector = {ids[i]: float(sims[i]) for i in top}
            except Exception as exc:  # noqa: BLE001 — recall goes on with keywords alone
                if degraded is not None:
                    degraded.append(f"vector search unavailable: {exc}")
    kw, vec = _normalise(keyword), _normalise(vector, SIMILARITY_FLOOR)
    if not vector:  # no model, or it failed: keywords carry the whole score, not a tenth of it
        keyword_weight, vector_weight = 1.0, 0.0
    fused: dict[str, tuple[float, dict]] = {}
    for mid in set(kw) | set(vec):
        score = keyword_weight * kw.get(mid, 0.0) + vector_weight * vec.get(mid, 0.0)
        why = {"keyword": round(kw.get(mid, 0.0), 3), "vector": round(vec.get(mid, 0.0), 3)}
        if mid in vector:
            why["similarity"] = round(vector[mid], 4)  # the raw cosine, for absolute gates (inject)
        fused[mid] = (score, why)
    return fused


def breath(store: MemoryStore, req: BreathRequest, *, embedder: Embedder | None = None,
           now: dt.datetime | None = None, touch: bool = True, query_chars: int | None = None) -> BreathResult:
    started = time.perf_counter()
    now = now or now_utc()
    if req.max_results < 1 or req.max_results > 50:
        raise MemoryInputError(f"max_results {req.max_results} is not between 1 and 50")
    if req.max_tokens < 50:
        raise MemoryInputError(f"max_tokens {req.max_tokens} is too small for a single card")
    result = BreathResult()
    query = (req.query or "").strip()
    if req.is_session_start and not query:
        result.handoff, result.pinned = session_start(store, now)
    if query:
        _recall(store, req, query, embedder, now, result, query_chars)
    today = now.astimezone(SHANGHAI).date()
    anniv = anniversary.pick(store, today)
    if anniv is not None:
        result.anniversary = to_card(anniv, 1.0, {"anniversary": today.isoformat()})
    if touch:
        store.touch([c.id for c in result.cards + result.pinned], iso(now))
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result


def _recall(store: MemoryStore, req: BreathRequest, query: str, embedder: Embedder | None, now: dt.datetime,
            result: BreathResult, query_chars: int | None = None) -> None:
    bias = emotion.bias(query)
    target_v = req.valence if req.valence is not None else (bias.valence if bias else None)
    target_a = req.arousal if req.arousal is not None else (bias.arousal if bias else None)
    result.emotion = bias.label if bias else None
    fused = retrieve(store, query, embedder=embedder, extra_terms=bias.extra_terms if bias else (),
                     degraded=result.degraded, query_chars=query_chars)
    if embedder is not None and store.has_unembedded():
        result.degraded.append("some memories have no vector yet: only their keywords can match")
    scored: list[tuple[float, Memory, dict]] = []
    relevant = {mid: v for mid, v in fused.items() if v[0] >= MIN_RELEVANCE}
    found = store.get_many(list(relevant))
    for mid, (relevance, why) in relevant.items():
        m = found.get(mid)
        if m is None or not m.current or (req.domain and m.domain != req.domain):
            continue
        factor, parts = rank_factor(m, now)
        mood = 1.0
        if target_v is not None:
            mood += 0.1 * (1 - abs(m.valence - target_v))
        if target_a is not None:
            mood += 0.05 * (1 - abs(m.arousal - target_a))
        why = {**why, **parts, "emotion": round(mood, 3), "relevance": round(relevance, 3)}
        scored.append((relevance * factor * mood, m, why))
    scored.sort(key=lambda x: -x[0])
    budget = req.max_tokens
    for score, m, why in scored:
        if m.pinned:
            if len(result.pinned) < 3:  # pinned core: shown when relevant, outside the card budget
                result.pinned.append(to_card(m, score, why))
            continue
        if len(result.cards) >= req.max_results:
            continue
        card = to_card(m, score, why)
        if card.tokens > budget:
            continue
        budget -= card.tokens
        result.cards.append(card)


def session_start(store: MemoryStore, now: dt.datetime) -> tuple[str | None, list[Card]]:
    """The compact handoff block for a new window: the latest 会话交接 and the pinned core."""
    handoffs = store.list(type=HANDOFF_TYPE, limit=1)
    pinned = [to_card(m, 1.0, {"policy": "pinned core"}) for m in store.list(pinned=True)]
    lines = []
    if handoffs:
        h = handoffs[0]
        lines.append(f"【最近一次会话交接 · {h.created[:10]}】\n{h.content}")
    if pinned:
        lines.append("【置顶核心】\n" + "\n".join(f"- {c.render()}" for c in pinned))
    return ("\n\n".join(lines) if lines else None), pinned
