"""The embedded default store: one SQLite file (WAL) with an FTS5 keyword index and float32 vectors.

Python's sqlite3 here cannot load extensions, so vectors are BLOBs scored with numpy; the
matrix is cached and reloaded only when the database changed (PRAGMA data_version, or our own writes).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import StoreError
from . import migrations
from .embed import SPECS
from .model import Memory
from .rows import FIELDS, VECTOR_COLUMNS, VECTOR_NAMES, distinct_terms, row_values
from .segment import match_expression
from .sql_store import SqlStore
from .store import ScoredRows, VectorIndex

_INSERT = f"INSERT INTO memories (namespace, id, {', '.join(FIELDS)}) VALUES ({', '.join('?' * (len(FIELDS) + 2))})"
_INSERT_WITH_VECTORS = (
    f"INSERT INTO memories (namespace, id, {', '.join(FIELDS)}, {', '.join(VECTOR_NAMES)}) "
    f"VALUES ({', '.join('?' * (len(FIELDS) + 2 + len(VECTOR_NAMES)))})"
)
_UPDATE = f"UPDATE memories SET {', '.join(f'{c}=?' for c in FIELDS)} WHERE id=? AND +namespace=?"
_INDEX = "INSERT INTO memories_fts (words, grams, memory_id) VALUES (?, ?, ?)"


def _wal(db: sqlite3.Connection, wait_s: float = 10.0) -> None:
    """Switch to WAL. The switch needs the database to itself and SQLite does not wait for it as it waits
    for locks otherwise, so a process opening a new store while another creates it tries again."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class SQLiteStore(SqlStore):
    def __init__(self, path: Path, namespace: str = "default") -> None:
        self.path = Path(path)
        self.namespace = namespace  # every row this store reads or writes belongs to it
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout=10000")
            _wal(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            migrations.apply(self._db)
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the memory database {self.path}: {exc}",
                hint="check OMBRE_HOME and that the file is a SQLite database",
            ) from exc
        self._lock = threading.RLock()  # the connection's: one statement or transaction at a time
        self._holding = threading.RLock()
        self._cache: dict[str, tuple[int, VectorIndex]] = {}
        self._generation = 0

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        # this process's threads take the hold lock; other processes (a CLI beside `ombre serve`) a file lock.
        # Not the connection lock: a hold may wait seconds on an arbitration model, and recall must not.
        import fcntl

        with self._holding, open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # -- writes ---------------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, changes_vectors: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE): all of it lands, or none of it."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(
                        f"memory database write failed: {exc}", hint="nothing was written; try again"
                    ) from exc
                raise
            if changes_vectors:
                self._generation += 1

    def _write(self, sql_steps: list[tuple[str, tuple]], changes_vectors: bool = True, durable: bool = True) -> None:
        with self._transaction(changes_vectors) as db:
            for sql, params in sql_steps:
                db.execute(sql, params)

    def add(self, memory: Memory, terms: tuple[str, str]) -> None:
        self._write(
            [
                (_INSERT, (self.namespace, memory.id, *row_values(memory))),
                (_INDEX, (*terms, memory.id)),
                *self._count_steps(Counter(distinct_terms(terms))),
            ]
        )

    def add_many(self, rows: list[tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]]) -> None:
        """Add many memories in one transaction (import, benchmarks); all or nothing. Each row may carry
        vectors by encoder key ("e5", "use")."""
        steps = []
        counts: Counter[str] = Counter()
        for memory, terms, vectors in rows:
            cells: list = []
            for key in VECTOR_COLUMNS:
                vector = (vectors or {}).get(key)
                cells += (
                    [None, None]
                    if vector is None
                    else [np.asarray(vector, dtype=np.float32).tobytes(), SPECS[key].model]
                )
            steps.append((_INSERT_WITH_VECTORS, (self.namespace, memory.id, *row_values(memory), *cells)))
            steps.append((_INDEX, (*terms, memory.id)))
            counts.update(distinct_terms(terms))
        self._write(steps + self._count_steps(counts))

    def update(self, memory: Memory, terms: tuple[str, str] | None = None) -> None:
        with self._transaction() as db:
            if db.execute(_UPDATE, (*row_values(memory), memory.id, self.namespace)).rowcount == 0:
                return  # another namespace's memory: not this store's to change
            if terms is None:
                return
            # the old terms are read inside the transaction, so a concurrent edit cannot skew the counts
            counts: Counter[str] = Counter(distinct_terms(terms))
            for rowid, words, grams in db.execute(
                "SELECT rowid, words, grams FROM memories_fts WHERE memory_id=?", (memory.id,)
            ).fetchall():
                counts.subtract(distinct_terms((words, grams)))
                db.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            db.execute(_INDEX, (*terms, memory.id))
            for sql, params in self._count_steps(counts):
                db.execute(sql, params)

    def delete(self, memory_id: str) -> None:
        """Remove a memory, its vectors and its keyword terms, in one transaction."""
        with self._transaction() as db:
            gone = db.execute("DELETE FROM memories WHERE id=? AND +namespace=?", (memory_id, self.namespace))
            if gone.rowcount == 0:
                return
            db.execute("DELETE FROM memory_latents WHERE namespace=? AND id=?", (self.namespace, memory_id))
            counts: Counter[str] = Counter()
            for rowid, words, grams in db.execute(
                "SELECT rowid, words, grams FROM memories_fts WHERE memory_id=?", (memory_id,)
            ).fetchall():
                counts.subtract(distinct_terms((words, grams)))
                db.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            for sql, params in self._count_steps(counts):
                db.execute(sql, params)

    def set_vectors(self, encoder: str, rows: list[tuple[str, np.ndarray]]) -> None:
        """Store one encoder's vectors for some memories, in one transaction."""
        vec, model = VECTOR_COLUMNS[encoder]
        self._write(
            [
                (
                    f"UPDATE memories SET {vec}=?, {model}=? WHERE id=? AND +namespace=?",
                    (np.asarray(v, dtype=np.float32).tobytes(), SPECS[encoder].model, mid, self.namespace),
                )
                for mid, v in rows
            ]
        )

    # -- reads ----------------------------------------------------------------------------------------
    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"memory database read failed: {exc}", hint="check the database file") from exc

    def keyword_search(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """BM25 over words (and bigrams at a quarter weight); archived memories may be among the hits."""
        if not terms:
            return []
        # count(*) on the FTS table reads every row (4 ms at 10k); the memories table keeps one row per
        # indexed memory and counts from its b-tree
        total = self._query("SELECT count(*) FROM memories WHERE namespace=?", (self.namespace,))[0][0]
        if total > self.LARGE_STORE:
            terms = self._rarest(terms, self._document_frequencies(terms), total)
            if not terms:
                return []
        rows = self._query(
            "SELECT f.memory_id, -f.rank FROM memories_fts f JOIN memories m ON m.id = f.memory_id "
            "WHERE memories_fts MATCH ? AND +m.namespace=? ORDER BY f.rank LIMIT ?",
            (match_expression(terms), self.namespace, limit),
        )
        return [(r[0], float(r[1])) for r in rows]

    def vectors(self, encoder: str = "e5") -> VectorIndex:
        # Another process's commit moves data_version; our own vector-changing writes move _generation.
        # A touch (activation) changes neither the vectors nor who is archived, so it keeps the cache.
        version = self._query("PRAGMA data_version")[0][0] * 1_000_003 + self._generation
        cached = self._cache.get(encoder)
        if cached is None or cached[0] != version:
            vec = VECTOR_COLUMNS[encoder][0]
            rows = self._query(
                f"SELECT id, {vec} FROM memories WHERE archived=0 AND {vec} IS NOT NULL AND +namespace=?",
                (self.namespace,),
            )
            dim = SPECS[encoder].dim
            matrix = (
                np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                if rows
                else np.zeros((0, dim), dtype=np.float32)
            )
            cached = self._cache[encoder] = (version, VectorIndex([r[0] for r in rows], matrix))
        return cached[1]

    def vector_count(self, encoder: str) -> int:
        return len(self.vectors(encoder))

    def search_vectors(self, encoder: str, queries: np.ndarray, limit: int, gap_rank: int) -> ScoredRows:
        return ScoredRows.of_matrix(self.vectors(encoder), queries, limit, gap_rank)

    def beside(self, namespace: str) -> "SQLiteStore":
        return SQLiteStore(self.path, namespace)

    def close(self) -> None:
        with self._lock:
            self._db.close()
