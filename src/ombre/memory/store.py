"""The storage interface the memory layer depends on; SQLite is the embedded default (a PostgreSQL
backend can implement the same protocol without touching hold/breath)."""

from __future__ import annotations

import builtins  # the stores have a method named list: annotations after it name the type this way
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .model import Memory


@dataclass
class GateEntry:
    at: str
    day: str  # Shanghai day, for the daily quota
    source: str  # manual | auto
    decision: str  # store | store_unconfirmed | log_only | refuse
    reasons: list[str]
    content: str
    memory_id: str | None = None


@dataclass
class VectorIndex:
    """One encoder's vectors of the live memories: row i of `matrix` belongs to `ids[i]`."""

    ids: list[str]
    matrix: np.ndarray
    positions: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.positions:
            self.positions = {mid: i for i, mid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)


# A text's latent terms (embed.E5Embedder.latents): feature indices and their weights, heaviest first
Latents = tuple[np.ndarray, np.ndarray]

# one memory for add_many: the memory, its indexed columns (keys, bigrams), and its vectors by encoder if known
NewRow = tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]


class MemoryStore(Protocol):
    def add(self, memory: Memory, terms: tuple[str, str]) -> None: ...

    def add_many(self, rows: list[NewRow]) -> None: ...

    def get(self, memory_id: str) -> Memory | None: ...

    def get_many(self, ids: list[str]) -> dict[str, Memory]: ...

    def has_unembedded(self, encoder: str = "e5") -> bool: ...

    def unembedded_count(self, encoder: str) -> int: ...

    def update(self, memory: Memory, terms: tuple[str, str] | None = None) -> None: ...

    def delete(self, memory_id: str) -> None: ...

    def add_token(self, token_sha256: str, namespace: str, created: str) -> None: ...

    def token_namespace(self, token_sha256: str) -> str | None: ...

    def namespaces(self) -> list[tuple[str, int, int]]: ...

    def beside(self, namespace: str) -> "MemoryStore":
        """The same database, read and written as another namespace (one service answering several)."""
        ...

    def exclusive(self) -> AbstractContextManager[None]:
        """Held around a write that reads before it writes (a hold: the duplicate check, arbitration and the
        scarcity caps), so two services or processes on one store cannot both pass a cap."""
        ...

    def list(
        self,
        *,
        archived: bool | None = False,
        pinned: bool | None = None,
        type: str | None = None,
        limit: int | None = None,
    ) -> list[Memory]: ...

    def count(self, *, pinned: bool | None = None, min_importance: int | None = None) -> int: ...

    def least_active(
        self, *, pinned: bool | None = None, min_importance: int | None = None, exclude_commitments: bool = True
    ) -> Memory | None: ...

    def on_month_days(
        self, month_days: builtins.list[str], *, created_before: str | None = None
    ) -> builtins.list[Memory]: ...

    def on_dates(self, dates: builtins.list[str]) -> builtins.list[Memory]: ...

    def keyword_search(self, terms: builtins.list[str], limit: int) -> builtins.list[tuple[str, float]]: ...

    def vectors(self, encoder: str = "e5") -> VectorIndex:
        """Every live vector of one encoder (a migration's check; recall asks search_vectors)."""
        ...

    def vector_count(self, encoder: str) -> int:
        """How many live memories have this encoder's vector."""
        ...

    def search_vectors(self, encoder: str, queries: np.ndarray, limit: int, gap_rank: int) -> "VectorHits":
        """Each query's nearest live memories by one encoder's vectors, with lift's and gap's baselines."""
        ...

    def set_vectors(self, encoder: str, rows: builtins.list[tuple[str, np.ndarray]]) -> None: ...

    def without_vectors(self, encoder: str, limit: int) -> builtins.list[Memory]: ...

    def set_latents(self, rows: builtins.list[tuple[str, Latents]]) -> None: ...

    def latent_search(self, latents: Latents, limit: int) -> builtins.list[tuple[str, float]]: ...

    def without_latents(self, limit: int) -> builtins.list[Memory]: ...

    def latents_pending(self) -> int: ...

    def touch(self, ids: builtins.list[str], at: str) -> None: ...

    def log_gate(self, entry: GateEntry) -> None: ...

    def gate_count(self, day: str, source: str, decisions: tuple[str, ...]) -> int: ...

    def gate_log(self, limit: int) -> builtins.list[GateEntry]: ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def close(self) -> None: ...


def top_ids(scores: np.ndarray, ids: builtins.list[str], limit: int) -> builtins.list[str]:
    """The `limit` ids of the highest scores, best first (ties keep the stored order)."""
    n = min(limit, len(ids))
    top = np.argpartition(-scores, n - 1)[:n] if n < len(ids) else np.arange(len(ids))
    return [ids[i] for i in top[np.argsort(-scores[top], kind="stable")]]


@dataclass
class VectorHits:
    """One encoder's answer to a few query vectors (the forms of one recall): each query's nearest
    memories, and the baselines a candidate's standing-out is measured against (signals.py)."""

    rankings: builtins.list[builtins.list[str]]  # per query: ids best first, at most the limit asked
    means: np.ndarray  # per query: the mean cosine over every live vector (lift)
    nearest: np.ndarray  # per query: the gap_rank-th best cosine (gap)
    size: int  # the live vectors searched

    def at(self, ids: builtins.list[str]) -> tuple[builtins.list[str], np.ndarray]:
        """The exact cosines (queries × ids) of those of `ids` that have a live vector, and those ids."""
        raise NotImplementedError


@dataclass
class ScoredRows(VectorHits):
    """Hits read off every live vector's cosine with each query (rows: queries × ids)."""

    ids: builtins.list[str]
    rows: np.ndarray
    positions: dict[str, int]  # id → column of rows

    @classmethod
    def of(
        cls,
        ids: builtins.list[str],
        rows: np.ndarray,
        limit: int,
        gap_rank: int,
        positions: dict[str, int] | None = None,
    ) -> "ScoredRows":
        rank = min(gap_rank, len(ids))
        return cls(
            rankings=[top_ids(row, ids, limit) for row in rows],
            means=rows.mean(axis=1) if len(ids) else np.zeros(len(rows), dtype=np.float32),
            nearest=np.array([np.partition(row, len(row) - rank)[len(row) - rank] if rank else 0.0 for row in rows]),
            size=len(ids),
            ids=ids,
            rows=rows,
            positions=positions if positions is not None else {mid: i for i, mid in enumerate(ids)},
        )

    @classmethod
    def of_matrix(cls, index: VectorIndex, queries: np.ndarray, limit: int, gap_rank: int) -> "ScoredRows":
        # One pass over the matrix per query. einsum, not @: BLAS threads spinning after a matmul starve the
        # embedding model's own threads on a 2-core machine (measured: bench/breath_latency.py).
        rows = np.stack([np.einsum("ij,j->i", index.matrix, q) for q in queries]) if len(queries) else queries
        return cls.of(index.ids, rows.reshape(len(queries), len(index)), limit, gap_rank, index.positions)

    def at(self, ids: builtins.list[str]) -> tuple[builtins.list[str], np.ndarray]:
        wanted = [mid for mid in ids if mid in self.positions]
        pos = np.fromiter((self.positions[mid] for mid in wanted), dtype=np.int64, count=len(wanted))
        return wanted, self.rows[:, pos]
