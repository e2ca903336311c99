"""The storage interface the memory layer depends on; SQLite is the embedded default (a PostgreSQL
backend can implement the same protocol without touching hold/breath)."""
from __future__ import annotations

from dataclasses import dataclass
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


class MemoryStore(Protocol):
    def add(self, memory: Memory, terms: tuple[str, str]) -> None: ...

    def get(self, memory_id: str) -> Memory | None: ...

    def update(self, memory: Memory, terms: tuple[str, str] | None = None) -> None: ...

    def list(self, *, archived: bool | None = False, pinned: bool | None = None, type: str | None = None,
             limit: int | None = None) -> list[Memory]: ...

    def count(self, *, pinned: bool | None = None, min_importance: int | None = None) -> int: ...

    def least_active(self, *, pinned: bool | None = None, min_importance: int | None = None,
                     exclude_commitments: bool = True) -> Memory | None: ...

    def on_month_day(self, month_day: str) -> list[Memory]: ...

    def keyword_search(self, match: str, limit: int) -> list[tuple[str, float]]: ...

    def vectors(self) -> tuple[list[str], np.ndarray]: ...

    def set_vector(self, memory_id: str, vector: np.ndarray, model: str) -> None: ...

    def without_vectors(self, limit: int) -> list[Memory]: ...

    def touch(self, ids: list[str], at: str) -> None: ...

    def log_gate(self, entry: GateEntry) -> None: ...

    def gate_count(self, day: str, source: str, decisions: tuple[str, ...]) -> int: ...

    def gate_log(self, limit: int) -> list[GateEntry]: ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def close(self) -> None: ...
