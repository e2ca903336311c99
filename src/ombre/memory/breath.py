"""breath: recall. Keyword BM25 and two encoders' vectors, each over the query's short forms, fused by
reciprocal rank; then importance, activation, decay and emotion move the order only gently (never a
"+1 per hit" heat score as the main order, seed §9.2, §13). Pinned core is surfaced by policy, not by
competing for the budget; the day's anniversary card comes with every recall that day; results say why.

One function serves the CLI, HTTP, MCP, the hook and the gateway (through MemoryService and inject.cards).
"""
from __future__ import annotations

import datetime as dt
import math
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..clock import SHANGHAI, iso, now_utc
from ..errors import MemoryInputError, StoreError
from ..tokens import estimate_text
from . import anniversary, emotion
from .embed import ORDER, SPECS, Embedder, tail
from .model import HANDOFF_TYPE, Memory
from .query import Query
from .segment import query_terms, script
from .store import MemoryStore

CANDIDATES = 50  # each signal's ranking is cut here before fusion: the top five come from far above it
OVERLAP_FROM = 20_000  # memories with vectors from which e5 embeds while the keyword search runs
LOADED_PER_RESULT, MIN_LOADED = 4, 24  # fused candidates read from the store per wanted card, at least
DECAY_PER_DAY = 0.05  # e^(−0.05·days) as in the public Ombre; commitments and pinned are exempt
KEYWORD_MIN = 0.5  # without vectors, a keyword match counts from half the best BM25 score of this query
# A lift (and a gap) is measured against the store's own cosines: over two or three memories these are
# mostly the memories themselves, and one of them stands "out" for any question. Below this many vectors a
# card has neither, and the gates for a store too small to stand out judge it (GATES; fusion still reads the
# lift: there it only orders). MemDaily's smallest stores hold four memories.
LIFT_FROM = 4
# e5 reads its form's last E5_TOKENS tokens (its own: embed.tail): it costs ~0.75 ms a token here, while USE
# reads whole forms for almost nothing. On the dev objective (bench/recall_eval.py, Chinese, where a token is
# about a character) 128 scored +0.003 over 64 and 48 −0.007; 128 alone takes ~80 ms at p95, past breath's
# 100 ms target, so 64. In characters this cut an English question at its first dozen words.
E5_TOKENS = 64
# A memory's gap: its cosine over the store's GAP_RANK-th best for the same form. The lift measures it
# against the whole store, where most memories are about something else; the gap against the few nearest,
# which tells a memory that answers from one of many on the same topic (bench/inject_threshold.py: of 3, 5,
# 10 and 20, 20 showed the most gold on dev).
GAP_RANK = 20
# Time kept back when a deadline decides whether e5 still fits: USE, keywords, fusion, the block and the
# answer's way home (≈ 40 ms at 10k memories, bench/hook_latency.py).
DEADLINE_RESERVE_MS = 45.0


@dataclass(frozen=True)
class Fusion:
    """How the signals of one recall become one score per memory.

    Signals: "keyword" (BM25 over the latest utterance), "keyword:recent" (BM25 over the person's recent
    turns), and "<encoder>:<form>" for each encoder and query form (query.Query.forms). Two views of them
    are blended:
    - rank: reciprocal rank fusion, Σ weight/(k + rank) over the rankings a memory is in. Ranks do not care
      how each signal scores, so no scale and no similarity floor can zero a signal; it finds the right
      memory among the first five.
    - evidence: how far a memory stands out in each signal — per encoder, its best cosine over the forms
      minus that form's mean over the store, in units of the encoder's usual spread (embed.EncoderSpec);
      for keywords, its share of the best BM25 score. A fragment's flat similarities carry little of it, a
      memory that clearly answers carries much: it decides the first place.
    Each view is scaled to 0–1 over the candidates and blended twice. The first place goes to the memory
    that leads (1 − head_share)·rank + head_share·evidence: the one that clearly answers. The other places
    follow (1 − evidence_share)·rank + evidence_share·evidence, where agreement between the signals counts
    for a little more. On the dev splits this raised R@5 (dialogue +0.002, companion +0.008) at the same R@1
    as one blend for every place. Chosen on the dev splits of all seven sets (bench/recall_eval.py --tune:
    coordinate passes, then seeded random steps; the objective is the worst lead over every part and over
    plain e5 of the whole question). When there are recent turns their forms weigh most: on the dialogue set
    a fragment's own words find the right memory far less often; on the hook dialogues, where a turn alludes
    to a memory in its own words, the latest words' forms (and e5's lift over them) keep it from following
    the turns before it.
    """

    k: float = 10.0
    weights: tuple[tuple[str, float], ...] = (
        ("keyword", 0.375), ("keyword:recent", 4.5),
        ("e5:latest", 0.633), ("e5:recent", 5.062),
        ("use:latest", 2.25), ("use:recent", 10.125),
    )
    evidence: tuple[tuple[str, float], ...] = (("keyword", 0.423), ("keyword:recent", 0.0), ("e5", 0.75),
                                               ("use", 0.562))
    evidence_share: float = 0.5
    head_share: float = 1.0
    # What each family of signals ("keyword", "e5", "use") is worth when the person writes in Latin script:
    # every weight of the family, rank and evidence, is multiplied by it. On English, USE alone finds far
    # less than e5, and stemmed keywords more than USE (bench/recall_eval.py). Tuned with the rest.
    latin: tuple[tuple[str, float], ...] = (("keyword", 3.375), ("e5", 2.0), ("use", 0.5))

    def weight(self, signal: str, script: str = "cjk") -> float:
        return dict(self.weights).get(signal, 0.0) * self._scale(signal, script)

    def evidence_weight(self, name: str, script: str = "cjk") -> float:
        return dict(self.evidence).get(name, 0.0) * self._scale(name, script)

    def _scale(self, signal: str, script: str) -> float:
        return dict(self.latin).get(signal.split(":")[0], 1.0) if script == "latin" else 1.0


FUSION = Fusion()
HEAD_GAP = 0.05


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
    card = Card(m.id, m.title, m.content, m.type, m.status, m.evidence.mark, m.pinned, round(score, 4), why,
                situation=m.situation, conflicts=list(m.conflicts), relevant=relevant)
    card.tokens = estimate_text(card.render())
    return card


@dataclass(frozen=True)
class Gate:
    """Whether a recalled memory is close enough to be shown unasked (the hook) or to count as recalled
    (activation), for the encoders that scored it: a weighted sum of its evidence (gate_features) against
    one bar for the answer's first card and a higher one for each card after it. One card a turn is cheap
    to read and rarely in the way; each card after it adds noise.

    Weighted together, not each signal against a gate of its own: a cosine says how close a memory is, but
    how close counts depends on the language and the store; the lift and the gap say how far the memory
    stands out of its store and of its nearest neighbours, and agreeing signals (ranked first by several)
    vouch more than any one alone. The weights are a logistic regression fitted on the dev splits, the bars
    the most gold shown with at most a set number of cards per unrelated turn (bench/inject_threshold.py
    --tune, which prints these)."""

    weights: dict[str, float]  # feature → weight (gate_features); a feature the card lacks counts 0
    bias: float
    first: float
    rest: float

    def score(self, features: Mapping[str, float]) -> float:
        return self.bias + sum(w * features.get(name, 0.0) for name, w in self.weights.items())

    def passes(self, features: Mapping[str, float], lead: bool) -> bool:
        return self.score(features) >= (self.first if lead else self.rest)


# Fitted by bench/inject_threshold.py --tune (see Gate), per set of encoders that scored the card (the hook's
# fast path runs USE alone) and whether it could stand out: in a store of fewer than LIFT_FROM memories
# it has no lift or gap, and its cosines (and the signals' agreement) have a gate of their own.
E5_USE, E5_ONLY, USE_ONLY = frozenset(("e5", "use")), frozenset(("e5",)), frozenset(("use",))
GATES: dict[tuple[frozenset[str], bool], Gate] = {
    (E5_USE, True): Gate({"sim:e5": 7.0686, "lift:e5": 0.7482, "gap:e5": 24.8316, "sim:use": 8.1118,
                          "lift:use": -0.2815, "gap:use": 3.7849, "firsts": 0.0969}, -10.3735, first=0.956, rest=1.106),
    (E5_USE, False): Gate({"sim:e5": 6.7634, "sim:use": 10.0133, "firsts": 0.4226}, -9.1904, first=1.218, rest=1.28),
    (E5_ONLY, True): Gate({"sim:e5": 19.9837, "lift:e5": 0.8815, "gap:e5": 28.2968, "firsts": 0.3106}, -19.4176,
                          first=1.292, rest=1.423),
    (E5_ONLY, False): Gate({"sim:e5": 19.7837, "firsts": 0.6721}, -17.8492, first=1.686, rest=1.919),
    (USE_ONLY, True): Gate({"sim:use": 9.0148, "lift:use": 0.1762, "gap:use": 6.1864, "firsts": 0.2686}, -3.9701,
                           first=1.343, rest=1.343),
    (USE_ONLY, False): Gate({"sim:use": 12.2214, "firsts": 0.4632}, -3.9361, first=1.292, rest=1.517),
}


def gate_features(why: dict) -> dict[str, float]:
    """A card's evidence as the gates weigh it: per encoder that scored it, its best cosine ("sim:e5"), its
    lift and its gap (both missing below LIFT_FROM vectors); and "firsts", how many signals rank it first."""
    out = {"firsts": float(sum(1 for r in (why.get("ranks") or {}).values() if r == 1))}
    for part in ("sim", "lift", "gap"):
        for key, value in (why.get(part) or {}).items():
            out[f"{part}:{key}"] = float(value)
    return out


def gate_key(why: dict) -> tuple[frozenset[str], bool]:
    """Which gate judges a card: the encoders that scored it, and whether it could stand out (LIFT_FROM)."""
    return frozenset(why.get("sim") or ()), bool(why.get("lift"))


def is_relevant(why: dict, lead: bool = False) -> bool:
    """Whether a recalled memory may be shown unasked (see Gate). The gate is the one for the encoders that
    scored it (both, or one alone: the hook's fast path, or a memory whose other vector is missing because
    e5 failed when it was written) in a store it could stand out of or not (GATES). `lead`: the answer's
    first card. Without any vector (OMBRE_VECTORS=0), a strong keyword match decides."""
    gate = GATES.get(gate_key(why))
    if gate is None:
        return why.get("keyword", 0.0) >= KEYWORD_MIN
    return gate.passes(gate_features(why), lead)


def _days_since(stamp: str, now: dt.datetime) -> float:
    try:
        return max(0.0, (now - dt.datetime.fromisoformat(stamp)).total_seconds() / 86400)
    except ValueError:
        return 0.0


def rank_factor(m: Memory, now: dt.datetime, adjust: Adjust = ADJUST, valence: float | None = None,
                arousal: float | None = None) -> tuple[float, dict]:
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


@dataclass
class Signals:
    """What each signal of one recall says, before fusion (bench/recall_eval.py fuses these anew)."""

    rankings: dict[str, list[str]] = field(default_factory=dict)  # signal → ids, best first
    keyword: dict[str, dict[str, float]] = field(default_factory=dict)  # keyword signal → id → share of best
    lift: dict[str, dict[str, float]] = field(default_factory=dict)  # encoder → id → best standing-out
    sim: dict[str, dict[str, float]] = field(default_factory=dict)  # encoder → id → best raw cosine
    gap: dict[str, dict[str, float]] = field(default_factory=dict)  # encoder → id → best gap (GAP_RANK)
    script: str = "cjk"  # the person's writing (segment.script of the latest words): Fusion.latin
    sizes: dict[str, int] = field(default_factory=dict)  # encoder → vectors in the store (LIFT_FROM)

    def candidates(self) -> set[str]:
        return {mid for ids in self.rankings.values() for mid in ids}


def _scaled(values: dict[str, float]) -> dict[str, float]:
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    return {k: (v - lo) / (hi - lo) if hi > lo else 1.0 for k, v in values.items()}


def fuse(signals: Signals, fusion: Fusion = FUSION) -> dict[str, float]:
    """One score per candidate in 0–1 (see Fusion)."""
    rank: dict[str, float] = defaultdict(float)
    writing = signals.script
    for signal, ids in signals.rankings.items():
        w = fusion.weight(signal, writing)
        if w <= 0:
            continue
        for r, mid in enumerate(ids, start=1):
            rank[mid] += w / (fusion.k + r)
    candidates = signals.candidates()
    if not candidates:
        return {}
    evidence = {mid: 0.0 for mid in candidates}
    for name, shares in signals.keyword.items():
        w = fusion.evidence_weight(name, writing)
        for mid, share in shares.items():
            evidence[mid] += w * share
    for key, lifts in signals.lift.items():
        w = fusion.evidence_weight(key, writing)
        for mid in candidates:
            evidence[mid] += w * lifts.get(mid, 0.0)
    rank_s, evidence_s = _scaled({mid: rank.get(mid, 0.0) for mid in candidates}), _scaled(evidence)
    share, head_share = fusion.evidence_share, fusion.head_share
    out = {mid: (1 - share) * rank_s[mid] + share * evidence_s[mid] for mid in candidates}
    head = max(sorted(candidates), key=lambda mid: (1 - head_share) * rank_s[mid] + head_share * evidence_s[mid])
    # first in the fused order, and _recall keeps it first whatever the adjustments say
    out[head] = max(out.values()) + HEAD_GAP
    return out


def _top(scores: np.ndarray, ids: list[str], limit: int) -> list[str]:
    n = min(limit, len(ids))
    top = np.argpartition(-scores, n - 1)[:n] if n < len(ids) else np.arange(len(ids))
    return [ids[i] for i in top[np.argsort(-scores[top], kind="stable")]]


def _fits(key: str, tokens: int, deadline: float | None, texts: int = 1) -> bool:
    if deadline is None:
        return True
    left_ms = (deadline - time.monotonic()) * 1000 - DEADLINE_RESERVE_MS
    return SPECS[key].cost_ms(tokens, texts) <= left_ms


def _plan(query: Query, encoders: Mapping[str, Embedder], deadline: float | None,
          e5_tokens: int) -> dict[str, dict[str, str]]:
    """Which texts each encoder embeds, each cut by the encoder's own token count (embed.tail): USE every
    form whole; e5 (the slow one) each form cut to its last e5_tokens tokens, as many forms as fit before
    the deadline (both, else the widest: the recent turns, which end with the latest words)."""
    plan: dict[str, dict[str, str]] = {}
    for key in ORDER:
        encoder = encoders.get(key)
        if encoder is None:
            continue
        count = getattr(encoder, "tokens", len)  # an encoder without a tokenizer: characters stand in

        def cut(text: str, limit: int) -> str:
            return tail(text, limit, count)[0]

        forms = query.forms(cut)
        if SPECS[key].widest_only:
            # the latest words alone and, in a chat, the recent turns: a fragment is found through the turns
            # before it, a turn that alludes to a memory in its own words through itself (the earlier turns
            # were often about another). When both would not fit the deadline, the widest alone.
            cuts = {name: tail(text, e5_tokens, count) for name, text in forms.items()}
            widest = "recent" if "recent" in cuts else "latest"
            for names in (list(cuts), [widest]):
                distinct = dict(cuts[name] for name in names)  # text → its tokens, each embedded once
                if _fits(key, sum(distinct.values()), deadline, len(distinct)):
                    plan[key] = {name: cuts[name][0] for name in names}
                    break
        else:
            plan[key] = forms
    return plan


def signals_for(store: MemoryStore, query: Query, *, encoders: Mapping[str, Embedder] | None = None,
                extra_terms: tuple[str, ...] = (), limit: int = CANDIDATES, degraded: list[str] | None = None,
                deadline: float | None = None, used: list[str] | None = None,
                e5_tokens: int = E5_TOKENS) -> Signals:
    """Every signal of one recall: keyword BM25 over the latest words and over the recent turns, and each
    encoder's cosines for each form it embeds (see _plan). `deadline` (time.monotonic()) is when the caller
    stops waiting: e5 is left out when its estimated cost would not fit, and USE (a few ms) answers alone.
    `used` collects the encoders embedded with."""
    encoders = encoders or {}
    plan = _plan(query, encoders, deadline, e5_tokens)
    indexes = {key: store.vectors(key) for key in plan}
    plan = {key: texts for key, texts in plan.items() if len(indexes[key])}
    out = Signals(script=script(query.latest))

    # each distinct text once: a latest message as long as e5's cut is also the whole of its recent form
    distinct = {key: list(dict.fromkeys(texts.values())) for key, texts in plan.items()}

    def embed(key: str) -> np.ndarray:
        return encoders[key].queries(distinct[key])

    def score(key: str, q: np.ndarray) -> None:
        # One pass over the matrix per distinct text. einsum, not @: BLAS threads spinning after a matmul
        # starve the embedding model's own threads on a 2-core machine (measured: bench/breath_latency.py).
        by_text = dict(zip(distinct[key], (np.einsum("ij,j->i", indexes[key].matrix, vec) for vec in q)))
        rows[key] = [by_text[text] for text in plan[key].values()]
        for name, row in zip(plan[key], rows[key]):
            out.rankings[f"{key}:{name}"] = _top(row, indexes[key].ids, limit)

    def embed_and_score(key: str) -> None:
        try:
            score(key, pending.result() if key == "e5" and pending is not None else embed(key))
        except Exception as exc:  # noqa: BLE001 — recall goes on with what is left
            if degraded is not None:
                degraded.append(f"{key} vectors unavailable: {exc}")

    rows: dict[str, list[np.ndarray]] = {}
    # The e5 model and SQLite both leave Python while they work, so in a big store e5 embeds while FTS5
    # searches and USE scores; in a small one a second thread only contends for the two cores.
    overlap = "e5" in plan and len(indexes["e5"]) >= OVERLAP_FROM
    with ThreadPoolExecutor(max_workers=1) as pool:  # no thread starts unless a task is submitted
        pending = pool.submit(embed, "e5") if overlap else None
        searches = [("keyword", query_terms(query.keyword_text, extra_terms))]
        if query.recent:
            searches.append(("keyword:recent", query_terms(query.context_text)))
        for name, terms in searches:
            hits = store.keyword_search(terms, limit)
            out.rankings[name] = [mid for mid, _ in hits]
            best = hits[0][1] if hits else 0.0
            out.keyword[name] = {mid: score / best for mid, score in hits} if best > 0 else {}
        for key in sorted(plan, key=lambda k: k == "e5" and pending is not None):  # the pending one last
            embed_and_score(key)
    # How far each candidate stands out in each form (its best form counting), and its best cosine: read
    # at the candidates' rows only (every signal's candidates), so a large store pays one mean per form.
    candidates = out.candidates()
    for key in [k for k in ORDER if k in rows]:
        forms_rows, index, spread = rows[key], indexes[key], SPECS[key].spread
        wanted = [mid for mid in candidates if mid in index.positions]
        pos = np.fromiter((index.positions[mid] for mid in wanted), dtype=np.int64, count=len(wanted))
        at = np.stack([row[pos] for row in forms_rows])
        means = np.array([[row.mean()] for row in forms_rows], dtype=np.float32)
        out.lift[key] = dict(zip(wanted, ((at - means) / spread).max(axis=0).tolist()))
        out.sim[key] = dict(zip(wanted, at.max(axis=0).tolist()))
        rank = min(GAP_RANK, len(index))
        nearest = np.array([[np.partition(row, len(row) - rank)[len(row) - rank]] for row in forms_rows])
        out.gap[key] = dict(zip(wanted, (at - nearest).max(axis=0).tolist()))
        out.sizes[key] = len(index)
        if used is not None:
            used.append(key)
    return out


def retrieve(store: MemoryStore, query: Query | str, *, encoders: Mapping[str, Embedder] | None = None,
             extra_terms: tuple[str, ...] = (), limit: int = CANDIDATES, degraded: list[str] | None = None,
             deadline: float | None = None, fusion: Fusion = FUSION, used: list[str] | None = None,
             e5_tokens: int = E5_TOKENS) -> dict[str, tuple[float, dict]]:
    """Fused relevance per memory id (0–1), with why: each signal's rank, the keyword share of the best
    BM25 score, and each encoder's best cosine over the query's forms."""
    if isinstance(query, str):
        query = Query.build(query)
    sig = signals_for(store, query, encoders=encoders, extra_terms=extra_terms, limit=limit, degraded=degraded,
                      deadline=deadline, used=used, e5_tokens=e5_tokens)
    fused = fuse(sig, fusion)
    ranks = {signal: {mid: r for r, mid in enumerate(ids, start=1)} for signal, ids in sig.rankings.items()}
    out: dict[str, tuple[float, dict]] = {}
    for mid, score in fused.items():
        sim = {key: round(v[mid], 4) for key, v in sig.sim.items() if mid in v}
        lift, gap = ({key: round(v[mid], 3) for key, v in part.items()
                      if mid in v and sig.sizes.get(key, LIFT_FROM) >= LIFT_FROM} for part in (sig.lift, sig.gap))
        why = {"relevance": round(score, 4), "keyword": round(sig.keyword.get("keyword", {}).get(mid, 0.0), 3),
               "sim": sim, "lift": lift, "gap": gap, "ranks": {s: r[mid] for s, r in ranks.items() if mid in r}}
        if "e5" in sim:
            why["similarity"] = sim["e5"]  # e5's raw cosine, which arbitration's thresholds are set for
        out[mid] = (score, why)
    return out


def breath(store: MemoryStore, req: BreathRequest, *, encoders: Mapping[str, Embedder] | None = None,
           now: dt.datetime | None = None, touch: bool = True, deadline: float | None = None,
           adjust: Adjust = ADJUST) -> BreathResult:
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
        _recall(store, req, query, encoders or {}, now, result, deadline, adjust)
    today = now.astimezone(SHANGHAI).date()
    anniv = anniversary.pick(store, today)
    if anniv is not None:
        result.anniversary = to_card(anniv, 1.0, {"anniversary": today.isoformat()})
    if touch:
        # a filler card (below the gate) was not recalled for the person: it earns no activation
        bookkeeping(lambda: store.touch([c.id for c in result.cards + result.pinned if c.relevant], iso(now)),
                    result.degraded)
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result


def _recall(store: MemoryStore, req: BreathRequest, query: Query, encoders: Mapping[str, Embedder],
            now: dt.datetime, result: BreathResult, deadline: float | None, adjust: Adjust) -> None:
    bias = emotion.bias(query.latest)
    target_v = req.valence if req.valence is not None else (bias.valence if bias else None)
    target_a = req.arousal if req.arousal is not None else (bias.arousal if bias else None)
    result.emotion = bias.label if bias else None
    fused = retrieve(store, query, encoders=encoders, extra_terms=bias.extra_terms if bias else (),
                     degraded=result.degraded, deadline=deadline, used=result.encoders)
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
        found = store.get_many(order[start:start + chunk])
        for mid in order[start:start + chunk]:
            m = found.get(mid)
            if m is None or not m.current or (req.domain and m.domain != req.domain):
                continue
            relevance, why = fused[mid]
            factor, parts = rank_factor(m, now, adjust, target_v, target_a)
            scored.append((relevance * factor, m, {**why, **parts}))
        if len(scored) >= chunk:
            break
    head = order[0] if order else None  # see Adjust
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
