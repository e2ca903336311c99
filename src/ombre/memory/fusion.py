"""Fusion: the signals of one recall (signals.py) become one relevance per memory, with why; and the gates
that say whether a recalled memory stands out enough to be shown unasked."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .embed import Embedder
from .query import Query
from .signals import CANDIDATES, E5_TOKENS, LATENT, Signals, signals_for
from .store import MemoryStore

KEYWORD_MIN = 0.5  # without vectors, a keyword match counts from half the best BM25 score of this query
# A lift (and a gap) is measured against the store's own cosines: over two or three memories these are
# mostly the memories themselves, and one of them stands "out" for any question. Below this many vectors a
# card has neither, and the gates for a store too small to stand out judge it (GATES; fusion still reads the
# lift: there it only orders). MemDaily's smallest stores hold four memories.
LIFT_FROM = 4


@dataclass(frozen=True)
class Fusion:
    """How the signals of one recall become one score per memory.

    Signals: "keyword" (BM25 over the latest utterance), "keyword:recent" (BM25 over the person's recent
    turns), "<encoder>:<form>" for each encoder and query form (query.Query.forms), and for an English query
    "latent": the e5 model's latent terms (signals._latent_ranking), weighed last on the dev splits of all
    seven sets, the other weights as they were (English multi-session R@5 0.640 → 0.665, long chats 0.775 →
    0.784, the companion set 0.856 → 0.855, the hook dialogues unchanged; a Chinese query has no such
    ranking). Two views of them
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
        ("keyword", 0.375),
        ("keyword:recent", 4.5),
        ("e5:latest", 0.633),
        ("e5:recent", 5.062),
        ("use:latest", 2.25),
        ("use:recent", 10.125),
        (LATENT, 0.5),
    )
    evidence: tuple[tuple[str, float], ...] = (
        ("keyword", 0.423),
        ("keyword:recent", 0.0),
        ("e5", 0.75),
        ("use", 0.562),
        (LATENT, 0.5),
    )
    evidence_share: float = 0.5
    head_share: float = 1.0
    # What each family of signals ("keyword", "e5", "use") is worth when the person writes in Latin script:
    # every weight of the family, rank and evidence, is multiplied by it. On English, USE alone finds far
    # less than e5, and stemmed keywords more than USE (bench/recall_eval.py). Tuned with the rest.
    latin: tuple[tuple[str, float], ...] = (("keyword", 3.375), ("e5", 2.0), ("use", 0.5))
    # What a memory's own words say (settle): one that is itself a question weighs `asks` less, and for a
    # question about when, one that names a time weighs `when` more. Chosen on the dev splits of all seven
    # sets (bench/recall_eval.py's objective): English multi-session R@5 0.665 → 0.678, long chats 0.784 →
    # 0.803, paraphrases 0.948 → 0.957, MemDaily 0.873 → 0.872, the other three unchanged.
    asks: float = 0.3
    when: float = 0.2

    def weight(self, signal: str, script: str = "cjk") -> float:
        return dict(self.weights).get(signal, 0.0) * self._scale(signal, script)

    def evidence_weight(self, name: str, script: str = "cjk") -> float:
        return dict(self.evidence).get(name, 0.0) * self._scale(name, script)

    def _scale(self, signal: str, script: str) -> float:
        return dict(self.latin).get(signal.split(":")[0], 1.0) if script == "latin" else 1.0


FUSION = Fusion()
HEAD_GAP = 0.05


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
    (E5_USE, True): Gate(
        {
            "sim:e5": 7.0686,
            "lift:e5": 0.7482,
            "gap:e5": 24.8316,
            "sim:use": 8.1118,
            "lift:use": -0.2815,
            "gap:use": 3.7849,
            "firsts": 0.0969,
        },
        -10.3735,
        first=0.956,
        rest=1.106,
    ),
    (E5_USE, False): Gate({"sim:e5": 6.7634, "sim:use": 10.0133, "firsts": 0.4226}, -9.1904, first=1.218, rest=1.28),
    (E5_ONLY, True): Gate(
        {"sim:e5": 19.9837, "lift:e5": 0.8815, "gap:e5": 28.2968, "firsts": 0.3106}, -19.4176, first=1.292, rest=1.423
    ),
    (E5_ONLY, False): Gate({"sim:e5": 19.7837, "firsts": 0.6721}, -17.8492, first=1.686, rest=1.919),
    (USE_ONLY, True): Gate(
        {"sim:use": 9.0148, "lift:use": 0.1762, "gap:use": 6.1864, "firsts": 0.2686}, -3.9701, first=1.343, rest=1.343
    ),
    (USE_ONLY, False): Gate({"sim:use": 12.2214, "firsts": 0.4632}, -3.9361, first=1.292, rest=1.517),
}


def gate_features(why: dict) -> dict[str, float]:
    """A card's evidence as the gates weigh it: per encoder that scored it, its best cosine ("sim:e5"), its
    lift and its gap (both missing below LIFT_FROM vectors); and "firsts", how many signals rank it first."""
    # the latent terms' ranking is left out: the gates were fitted on the signals before it
    out = {"firsts": float(sum(1 for s, r in (why.get("ranks") or {}).items() if r == 1 and s != LATENT))}
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


# A memory that asks does not tell: in a chat kept turn by turn, a question is the other side's cue, and the
# answer is the turn after it (in the English multi-session set 227 of 1,353 turns are questions, 1 of the
# 194 gold). A question about when or how long is answered by a memory that names a time or a span ("on the
# 20th", 「上周三」, "six weeks", 「骑车二十分钟」).
_ASKS = re.compile(r"[?？][\s!！~～\"'”’)）\U0001F000-\U0001FFFF\u2600-\u27BF\uFE0F]*$")
_WHEN = re.compile(
    r"\b(?:when (?:did|do|does|was|were|is|are|will|would|has|have|had|can|could|should)|how long"
    r"|how many (?:days|weeks|months|years|hours|nights)|what (?:date|day|year|month|time)"
    r"|which (?:date|day|week|month|year))\b"
    r"|什么时候|啥时候|哪一?天|几号|几月|哪一?年|多久|多长时间|几点|星期几|周几",
    re.IGNORECASE,
)
_MONTHS = "january|february|march|april|june|july|august|september|october|november|december"  # not "may"
_TIME = re.compile(
    rf"\b(?:{_MONTHS}|(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend|today|tonight|yesterday|tomorrow"
    r"|(?:last|next|this) (?:week|month|year|night|morning|spring|summer|fall|autumn|winter)|ago"
    r"|\d{1,2}(?:st|nd|rd|th)|\d{4}|\d{1,2}(?::\d\d)? ?[ap]m"
    r"|(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|few|couple of) "
    r"(?:minute|hour|day|night|week|month|year)s?)\b"
    # each run of numerals is tried from its start only (a long one would be tried from every digit)
    r"|(?<!\d)\d+ *[月号日点]|(?<![一二三四五六七八九十])[一二三四五六七八九十]+[月号日]|星期|周[一二三四五六日天末]"
    r"|(?<![一二两三四五六七八九十])[两三四五六七八九十][一二三四五六七八九十]*点|[昨今明前后]天|[上下这本]周"
    r"|(?<![\d一二两三四五六七八九十半几])[\d一二两三四五六七八九十半几]+ *(?:分钟|小时|个?钟头|天|周|个?星期|个月|年)"
    r"|[上下这]个月|[去今明前]年|早上|晚上|凌晨|中午|下午|上午",
    re.IGNORECASE,
)


def asks(content: str) -> bool:
    return bool(_ASKS.search(content))


def form_factor(question: str, content: str, fusion: Fusion = FUSION) -> float:
    """How much more or less a memory weighs for what its own words say (see _ASKS)."""
    factor = 1 - fusion.asks if asks(content) else 1.0
    if fusion.when and _WHEN.search(question) and _TIME.search(content):
        factor *= 1 + fusion.when
    return factor


def settle(
    order: Sequence[str], contents: Mapping[str, str], question: str, fusion: Fusion = FUSION
) -> tuple[dict[str, float], str | None]:
    """For the memories read (contents: id → text), each one's form_factor, and the head: fuse's first
    (`order`), or when that asks, the first read after it that does not."""
    factors = {mid: form_factor(question, text, fusion) for mid, text in contents.items()}
    head = order[0] if order else None
    if fusion.asks and head is not None and head in contents and asks(contents[head]):
        head = next((mid for mid in order if mid in contents and not asks(contents[mid])), head)
    return factors, head


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


def retrieve(
    store: MemoryStore,
    query: Query,
    *,
    encoders: Mapping[str, Embedder] | None = None,
    extra_terms: tuple[str, ...] = (),
    limit: int = CANDIDATES,
    degraded: list[str] | None = None,
    deadline: float | None = None,
    fusion: Fusion = FUSION,
    used: list[str] | None = None,
    e5_tokens: int = E5_TOKENS,
) -> dict[str, tuple[float, dict]]:
    """Fused relevance per memory id (0–1), with why: each signal's rank, the keyword share of the best
    BM25 score, and each encoder's best cosine over the query's forms."""
    sig = signals_for(
        store,
        query,
        encoders=encoders,
        extra_terms=extra_terms,
        limit=limit,
        degraded=degraded,
        deadline=deadline,
        used=used,
        e5_tokens=e5_tokens,
    )
    fused = fuse(sig, fusion)
    ranks = {signal: {mid: r for r, mid in enumerate(ids, start=1)} for signal, ids in sig.rankings.items()}
    out: dict[str, tuple[float, dict]] = {}
    for mid, score in fused.items():
        sim = {key: round(v[mid], 4) for key, v in sig.sim.items() if mid in v}
        lift, gap = (
            {
                key: round(v[mid], 3)
                for key, v in part.items()
                if mid in v and sig.sizes.get(key, LIFT_FROM) >= LIFT_FROM
            }
            for part in (sig.lift, sig.gap)
        )
        why = {
            "relevance": round(score, 4),
            "keyword": round(sig.keyword.get("keyword", {}).get(mid, 0.0), 3),
            "sim": sim,
            "lift": lift,
            "gap": gap,
            "ranks": {s: r[mid] for s, r in ranks.items() if mid in r},
        }
        if "e5" in sim:
            why["similarity"] = sim["e5"]  # e5's raw cosine, which arbitration's thresholds are set for
        out[mid] = (score, why)
    return out
