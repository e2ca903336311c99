"""The signals of one recall, before fusion: keyword BM25 over the person's latest words and over their
recent turns, and each encoder's cosines for each query form it embeds, with how far each candidate stands
out of the store (lift) and of its nearest neighbours (gap); and for an English query, the e5 model's latent
terms (_latent_ranking). bench/recall_eval.py fuses these anew."""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .embed import LATENT_QUERY_TERMS, ORDER, SPECS, Embedder, tail
from .query import Query
from .segment import query_terms, script
from .store import MemoryStore, VectorHits

CANDIDATES = 50  # each signal's ranking is cut here before fusion: the top five come from far above it
OVERLAP_FROM = 20_000  # memories with vectors from which e5 embeds while the keyword search runs
# e5 reads its form's last E5_TOKENS tokens (its own: embed.tail): it costs ~0.75 ms a token here, while USE
# reads whole forms for almost nothing. On the dev objective (bench/recall_eval.py, Chinese, where a token is
# about a character) 128 scored +0.003 over 64 and 48 −0.007; 128 alone takes ~80 ms at p95, past breath's
# 100 ms target, so 64. In characters this cut an English question at its first dozen words.
E5_TOKENS = 64
E5_MIN_TOKENS = 24  # short of time, e5 reads fewer tokens of each form, never fewer than this (dev: at 24 every
# hook set showed more gold than USE alone, at 16 two showed less)
E5_TOKEN_STEP = 8
# When the latest words fill this share of e5's full cut (E5_TOKENS), the recent form (the turns before, then
# the latest words, cut to the same budget) would add only the cut's few first tokens: its ranking is the latest
# form's, and e5 reads one text, not two (a chat's slowest recalls are these: 128 tokens in place of 64). On
# the dev splits (bench/recall_eval.py) 0.5 changed 156 of the dialogue set's 1,503 plans and no R@1 or R@5 of
# any set; 0.375 cost the dialogue set 0.001 at R@5, 0.25 0.005. Short of time, a shorter cut does not make
# more such: a latest message of 12 tokens keeps its turns before it in a cut of 24.
LATEST_FILLS = 0.5
LATENT = "latent"  # the signal of the latent terms (_latent_ranking); it ranks, it has no cosine
LATENT_SEARCH_MS = 15.0  # what summing a question's latent postings costs (p50 ~11 ms at 10k English memories, bounded)
# A memory's gap: its cosine over the store's GAP_RANK-th best for the same form. The lift measures it
# against the whole store, where most memories are about something else; the gap against the few nearest,
# which tells a memory that answers from one of many on the same topic (bench/inject_threshold.py: of 3, 5,
# 10 and 20, 20 showed the most gold on dev).
GAP_RANK = 20
# Time kept back when a deadline decides whether e5 still fits: USE, keywords, fusion, the block and the
# answer's way home (≈ 40 ms at 10k memories, bench/hook_latency.py).
DEADLINE_RESERVE_MS = 30.0


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

    def scored(self, name: str, found: list[tuple[str, float]]) -> None:
        """A signal that scores (keywords, latent terms): its ranking, and each memory's share of the best."""
        self.rankings[name] = [mid for mid, _ in found]
        best = found[0][1] if found else 0.0
        self.keyword[name] = {mid: score / best for mid, score in found} if best > 0 else {}


def _fits(
    encoder: Embedder, key: str, tokens: int, deadline: float | None, texts: int = 1, search_ms: float = 0.0
) -> bool:
    if deadline is None:
        return True
    left_ms = (deadline - time.monotonic()) * 1000 - DEADLINE_RESERVE_MS
    pace = getattr(encoder, "pace", None) or SPECS[key]  # as measured here, else the spec's estimate
    return pace.cost_ms(tokens, texts) + search_ms <= left_ms


def _plan(
    query: Query, encoders: Mapping[str, Embedder], deadline: float | None, e5_tokens: int
) -> dict[str, dict[str, str]]:
    """Which texts each encoder embeds, each cut by the encoder's own token count (embed.tail): USE every
    form whole; e5 (the slow one) each form cut to its last e5_tokens tokens, or to fewer when that would
    not fit before the deadline (down to E5_MIN_TOKENS; below it USE answers alone)."""
    plan: dict[str, dict[str, str]] = {}
    for key in ORDER:
        encoder = encoders.get(key)
        if encoder is None:
            continue
        count = getattr(encoder, "tokens", len)  # an encoder without a tokenizer: characters stand in

        def cut(text: str, limit: int, count=count) -> str:  # this encoder's count, bound now
            return tail(text, limit, count)[0]

        forms = query.forms(cut)
        if not SPECS[key].fits_to_time:
            plan[key] = forms
            continue
        # Always the latest words and, in a chat, the recent turns: a fragment is found through the turns
        # before it, a turn that alludes to a memory in its own words through itself (the earlier turns were
        # often about another). Short of time, both forms shorter rather than one: on the hook dialogues' dev
        # split both cut to 32 tokens showed as much as both at 64, the recent turns alone at 64 less than
        # USE alone (bench/inject_threshold.py).
        # Short of time is when the tokenizer's calls cost most: a cut is skipped where even its least cost
        # (one text, as long as the longest form's cut) would not fit, and each cut is taken from the last
        cuts = {name: (text, count(text)) for name, text in forms.items()}
        if "recent" in cuts and cuts["latest"][1] >= LATEST_FILLS * E5_TOKENS:
            cuts["recent"] = cuts["latest"]  # the turns before would add only the cut's first few tokens
        for limit in range(e5_tokens, E5_MIN_TOKENS - 1, -E5_TOKEN_STEP):
            if not _fits(encoder, key, max(min(n, limit) for _, n in cuts.values()), deadline):
                continue
            cuts = {name: cut if cut[1] <= limit else tail(cut[0], limit, count) for name, cut in cuts.items()}
            distinct = dict(cuts.values())  # text → its tokens, each embedded once
            if _fits(encoder, key, sum(distinct.values()), deadline, len(distinct)):
                plan[key] = {name: text for name, (text, _) in cuts.items()}
                break
    return plan


def _latent_ranking(
    store: MemoryStore,
    query: Query,
    e5: Embedder | None,
    limit: int,
    deadline: float | None,
    degraded: list[str] | None,
) -> list[tuple[str, float]]:
    """The LATENT signal: the memories whose latent terms (embed.E5Embedder.latents) best meet those of the
    person's latest words. English only: on Chinese they found less than e5 alone. It costs one more pass of
    the e5 model, so it is left out when that would not fit before the deadline."""
    latents = getattr(e5, "latents", None)
    if e5 is None or latents is None:
        return []
    text, tokens = tail(query.latest, E5_TOKENS, getattr(e5, "tokens", len))
    if not text or not _fits(e5, "e5", tokens, deadline, search_ms=LATENT_SEARCH_MS):
        return []
    try:
        return store.latent_search(latents([text], LATENT_QUERY_TERMS)[0], limit)
    except Exception as exc:  # noqa: BLE001 — recall goes on without it
        if degraded is not None:
            degraded.append(f"latent terms unavailable: {exc}")
        return []


def signals_for(
    store: MemoryStore,
    query: Query,
    *,
    encoders: Mapping[str, Embedder] | None = None,
    extra_terms: tuple[str, ...] = (),
    limit: int = CANDIDATES,
    degraded: list[str] | None = None,
    deadline: float | None = None,
    used: list[str] | None = None,
    e5_tokens: int = E5_TOKENS,
) -> Signals:
    """Every signal of one recall: keyword BM25 over the latest words and over the recent turns, and each
    encoder's cosines for each form it embeds (see _plan). `deadline` (time.monotonic()) is when the caller
    stops waiting: e5 is left out when its estimated cost would not fit, and USE (a few ms) answers alone.
    `used` collects the encoders embedded with."""
    encoders = encoders or {}
    sizes = {key: store.vector_count(key) for key in encoders}
    plan = {key: texts for key, texts in _plan(query, encoders, deadline, e5_tokens).items() if sizes[key]}
    out = Signals(script=script(query.latest))

    # each distinct text once: a latest message as long as e5's cut is also the whole of its recent form
    distinct = {key: list(dict.fromkeys(texts.values())) for key, texts in plan.items()}

    def embed(key: str) -> np.ndarray:
        return encoders[key].queries(distinct[key])

    def search(key: str, q: np.ndarray) -> None:
        found = hits[key] = store.search_vectors(key, q, limit, GAP_RANK)
        ranked = dict(zip(distinct[key], found.rankings))
        if found.size:
            for name, text in plan[key].items():
                out.rankings[f"{key}:{name}"] = ranked[text]

    def embed_and_search(key: str) -> None:
        try:
            search(key, pending.result() if key == "e5" and pending is not None else embed(key))
        except Exception as exc:  # noqa: BLE001 — recall goes on with what is left
            if degraded is not None:
                degraded.append(f"{key} vectors unavailable: {exc}")

    hits: dict[str, VectorHits] = {}
    # The e5 model and the database both leave Python while they work, so in a big store e5 embeds while the
    # keyword search runs and USE scores; in a small one a second thread only contends for the two cores.
    overlap = "e5" in plan and sizes["e5"] >= OVERLAP_FROM
    # so, in a big store, do an English question's latent terms (a model pass, then a search in the database)
    # when no deadline plans the model passes one after the other
    latin = out.script == "latin"
    early = latin and overlap and deadline is None
    with ThreadPoolExecutor(max_workers=2) as pool:  # no thread starts unless a task is submitted
        pending = pool.submit(embed, "e5") if overlap else None
        beside = (
            pool.submit(_latent_ranking, store, query, encoders.get("e5"), limit, deadline, degraded) if early else None
        )
        searches = [("keyword", query_terms(query.keyword_text, extra_terms))]
        if query.recent:
            searches.append(("keyword:recent", query_terms(query.context_text)))
        for name, terms in searches:
            out.scored(name, store.keyword_search(terms, limit))
        for key in sorted(plan, key=lambda k: k == "e5" and pending is not None):  # the pending one last
            embed_and_search(key)
    if latin:
        latent = (
            beside.result() if beside else _latent_ranking(store, query, encoders.get("e5"), limit, deadline, degraded)
        )
        if latent:
            out.scored(LATENT, latent)  # its evidence as the keywords': each one's share of the best
    # How far each candidate stands out in each form (its best form counting), and its best cosine: read
    # at the candidates only (every signal's candidates).
    candidates = list(out.candidates())
    for key in [k for k in ORDER if k in hits and hits[k].size]:
        found, spread = hits[key], SPECS[key].spread
        wanted, at = found.at(candidates)
        means, nearest = found.means[:, None], found.nearest[:, None]
        out.lift[key] = dict(zip(wanted, ((at - means) / spread).max(axis=0).tolist()))
        out.sim[key] = dict(zip(wanted, at.max(axis=0).tolist()))
        out.gap[key] = dict(zip(wanted, (at - nearest).max(axis=0).tolist()))
        out.sizes[key] = found.size
        if used is not None:
            used.append(key)
    return out
