"""The embedded default store: one SQLite file (WAL) with an FTS5 keyword index and float32 vectors.

Python's sqlite3 here cannot load extensions, so vectors are BLOBs scored with numpy (DESIGN §5); the
matrix is cached and reloaded only when the database changed (PRAGMA data_version, or our own writes).
"""
from __future__ import annotations

import json
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
from .model import COMMITMENT_TYPES, Memory
from .embed import SPECS
from .segment import match_expression
from .rows import FIELDS, VECTOR_COLUMNS, VECTOR_NAMES, distinct_terms, row_to_memory, row_values
from .store import GateEntry, VectorIndex

_COLUMNS = "id, " + ", ".join(FIELDS) + "".join(f", {vec} IS NOT NULL" for vec, _ in VECTOR_COLUMNS.values())
_INSERT = (f"INSERT INTO memories (namespace, id, {', '.join(FIELDS)}) "
           f"VALUES ({', '.join('?' * (len(FIELDS) + 2))})")
_INSERT_WITH_VECTORS = (f"INSERT INTO memories (namespace, id, {', '.join(FIELDS)}, {', '.join(VECTOR_NAMES)}) "
                        f"VALUES ({', '.join('?' * (len(FIELDS) + 2 + len(VECTOR_NAMES)))})")
_UPDATE = f"UPDATE memories SET {', '.join(f'{c}=?' for c in FIELDS)} WHERE id=? AND +namespace=?"
_INDEX = "INSERT INTO memories_fts (words, grams, memory_id) VALUES (?, ?, ?)"
_COUNT_TERM = ("INSERT INTO term_docs (namespace, term, docs) VALUES (?, ?, ?) "
               "ON CONFLICT(namespace, term) DO UPDATE SET docs = docs + excluded.docs")


def _count_steps(namespace: str, counts: Counter[str]) -> list[tuple[str, tuple]]:
    return [(_COUNT_TERM, (namespace, term, n)) for term, n in counts.items() if n]


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


class SQLiteStore:
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
            raise StoreError(f"cannot open the memory database {self.path}: {exc}",
                             hint="check OMBRE_HOME and that the file is a SQLite database") from exc
        self._lock = threading.RLock()
        self._cache: dict[str, tuple[int, VectorIndex]] = {}
        self._generation = 0

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        # this process's threads take the store lock; other processes (a CLI beside `ombre serve`) a file lock
        import fcntl

        with self._lock, open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
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
                    raise StoreError(f"memory database write failed: {exc}",
                                     hint="nothing was written; try again") from exc
                raise
            if changes_vectors:
                self._generation += 1

    def _write(self, sql_steps: list[tuple[str, tuple]], changes_vectors: bool = True) -> None:
        with self._transaction(changes_vectors) as db:
            for sql, params in sql_steps:
                db.execute(sql, params)

    def add(self, memory: Memory, terms: tuple[str, str]) -> None:
        self._write([(_INSERT, (self.namespace, memory.id, *row_values(memory))), (_INDEX, (*terms, memory.id)),
                     *_count_steps(self.namespace, Counter(distinct_terms(terms)))])

    def add_many(self, rows: list[tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]]) -> None:
        """Add many memories in one transaction (import, benchmarks); all or nothing. Each row may carry
        vectors by encoder key ("e5", "use")."""
        steps = []
        counts: Counter[str] = Counter()
        for memory, terms, vectors in rows:
            cells: list = []
            for key in VECTOR_COLUMNS:
                vector = (vectors or {}).get(key)
                cells += ([None, None] if vector is None else
                          [np.asarray(vector, dtype=np.float32).tobytes(), SPECS[key].model])
            steps.append((_INSERT_WITH_VECTORS, (self.namespace, memory.id, *row_values(memory), *cells)))
            steps.append((_INDEX, (*terms, memory.id)))
            counts.update(distinct_terms(terms))
        self._write(steps + _count_steps(self.namespace, counts))

    def update(self, memory: Memory, terms: tuple[str, str] | None = None) -> None:
        with self._transaction() as db:
            if db.execute(_UPDATE, (*row_values(memory), memory.id, self.namespace)).rowcount == 0:
                return  # another namespace's memory: not this store's to change
            if terms is None:
                return
            # the old terms are read inside the transaction, so a concurrent edit cannot skew the counts
            counts: Counter[str] = Counter(distinct_terms(terms))
            for rowid, words, grams in db.execute("SELECT rowid, words, grams FROM memories_fts WHERE memory_id=?",
                                                  (memory.id,)).fetchall():
                counts.subtract(distinct_terms((words, grams)))
                db.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            db.execute(_INDEX, (*terms, memory.id))
            for sql, params in _count_steps(self.namespace, counts):
                db.execute(sql, params)

    def delete(self, memory_id: str) -> None:
        """Remove a memory, its vectors and its keyword terms, in one transaction."""
        with self._transaction() as db:
            if db.execute("DELETE FROM memories WHERE id=? AND +namespace=?", (memory_id, self.namespace)).rowcount == 0:
                return
            counts: Counter[str] = Counter()
            for rowid, words, grams in db.execute("SELECT rowid, words, grams FROM memories_fts WHERE memory_id=?",
                                                  (memory_id,)).fetchall():
                counts.subtract(distinct_terms((words, grams)))
                db.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            for sql, params in _count_steps(self.namespace, counts):
                db.execute(sql, params)

    def set_vectors(self, encoder: str, rows: list[tuple[str, np.ndarray]]) -> None:
        """Store one encoder's vectors for some memories, in one transaction."""
        vec, model = VECTOR_COLUMNS[encoder]
        self._write([(f"UPDATE memories SET {vec}=?, {model}=? WHERE id=? AND +namespace=?",
                      (np.asarray(v, dtype=np.float32).tobytes(), SPECS[encoder].model, mid, self.namespace))
                     for mid, v in rows])

    def touch(self, ids: list[str], at: str) -> None:
        if ids:
            self._write([("UPDATE memories SET activation_count = activation_count + 1, last_active=? "
                          "WHERE id=? AND +namespace=?", (at, i, self.namespace)) for i in ids], changes_vectors=False)

    def log_gate(self, entry: GateEntry) -> None:
        self._write([("INSERT INTO gate_log (namespace, at, day, source, decision, reasons, memory_id, content) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (self.namespace, entry.at, entry.day, entry.source, entry.decision,
                       json.dumps(entry.reasons, ensure_ascii=False), entry.memory_id, entry.content[:500]))],
                    changes_vectors=False)

    def set_meta(self, key: str, value: str) -> None:
        self._write([("INSERT INTO meta (namespace, key, value) VALUES (?, ?, ?) "
                      "ON CONFLICT(namespace, key) DO UPDATE SET value=excluded.value", (self.namespace, key, value))],
                    changes_vectors=False)

    def add_token(self, token_sha256: str, namespace: str, created: str) -> None:
        """A namespace's bearer token (its digest): the token table is the one thing namespaces share."""
        self._write([("INSERT INTO namespaces (token_sha256, namespace, created) VALUES (?, ?, ?)",
                      (token_sha256, namespace, created))], changes_vectors=False)

    def token_namespace(self, token_sha256: str) -> str | None:
        rows = self._query("SELECT namespace FROM namespaces WHERE token_sha256=?", (token_sha256,))
        return rows[0][0] if rows else None

    def namespaces(self) -> list[tuple[str, int, int]]:
        """Every namespace with its memory and token counts."""
        rows = self._query("SELECT n, sum(m), sum(t) FROM (SELECT namespace AS n, count(*) AS m, 0 AS t FROM memories "
                           "GROUP BY namespace UNION ALL SELECT namespace, 0, count(*) FROM namespaces GROUP BY "
                           "namespace) AS x GROUP BY n ORDER BY n")
        return [(r[0], int(r[1]), int(r[2])) for r in rows]

    # -- reads ----------------------------------------------------------------------------------------
    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"memory database read failed: {exc}", hint="check the database file") from exc

    def get(self, memory_id: str) -> Memory | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM memories WHERE id=? AND +namespace=?", (memory_id, self.namespace))
        return row_to_memory(rows[0]) if rows else None

    def _where(self, archived: bool | None = False, pinned: bool | None = None, type: str | None = None,
               min_importance: int | None = None, exclude_commitments: bool = False) -> tuple[str, tuple]:
        where, params = ["+namespace=?"], [self.namespace]  # `+`: the planner keeps choosing by the other terms
        for column, value in (("archived", archived), ("pinned", pinned)):
            if value is not None:
                # with a type given, its index is the selective one: `+` keeps SQLite off the archived index
                where.append(f"{'+' if type is not None else ''}{column}=?")
                params.append(int(value))
        if type is not None:
            where.append("type=?")
            params.append(type)
        if min_importance is not None:
            where.append("importance>=?")
            params.append(min_importance)
        if exclude_commitments:
            where.append(f"type NOT IN ({','.join('?' * len(COMMITMENT_TYPES))})")
            params.extend(COMMITMENT_TYPES)
        return " WHERE " + " AND ".join(where), tuple(params)

    def list(self, *, archived: bool | None = False, pinned: bool | None = None, type: str | None = None,
             limit: int | None = None) -> list[Memory]:
        where, params = self._where(archived, pinned, type)
        sql = f"SELECT {_COLUMNS} FROM memories{where} ORDER BY created DESC, rowid DESC"
        return [row_to_memory(r) for r in self._query(sql + (f" LIMIT {int(limit)}" if limit else ""), params)]

    def count(self, *, pinned: bool | None = None, min_importance: int | None = None) -> int:
        where, params = self._where(pinned=pinned, min_importance=min_importance)
        return self._query(f"SELECT count(*) FROM memories{where}", params)[0][0]

    def least_active(self, *, pinned: bool | None = None, min_importance: int | None = None,
                     exclude_commitments: bool = True) -> Memory | None:
        where, params = self._where(pinned=pinned, min_importance=min_importance,
                                    exclude_commitments=exclude_commitments)
        rows = self._query(f"SELECT {_COLUMNS} FROM memories{where} ORDER BY last_active ASC, rowid ASC LIMIT 1",
                           params)
        return row_to_memory(rows[0]) if rows else None

    def on_month_days(self, month_days: list[str], *, created_before: str | None = None) -> list[Memory]:
        """Live memories whose event date or creation falls on one of these month-days ("MM-DD"); with
        `created_before` (an ISO time), a creation counts only before it (an anniversary needs a year)."""
        if not month_days:
            return []
        marks = ",".join("?" * len(month_days))
        # the same expressions as the indexes of m010, so each side of the OR is an index lookup
        created = f"substr(created, 6, 5) IN ({marks})" + (" AND created < ?" if created_before else "")
        params = (*month_days, *month_days, *((created_before,) if created_before else ()), self.namespace)
        return [row_to_memory(r) for r in self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE (substr(event_date, 6, 5) IN ({marks}) OR ({created})) "
            "AND +archived=0 AND superseded_by IS NULL AND +namespace=?", params)]

    def on_dates(self, dates: list[str]) -> list[Memory]:
        """Live memories whose event falls on one of these days (YYYY-MM-DD): what is due."""
        if not dates:
            return []
        marks = ",".join("?" * len(dates))
        return [row_to_memory(r) for r in self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE event_date IN ({marks}) AND +archived=0 AND superseded_by IS NULL "
            "AND +namespace=? ORDER BY event_date, importance DESC", (*dates, self.namespace))]

    COMMON_SHARE = 0.05  # in a large store, a term in more than 5 % of memories ranks nothing
    LARGE_STORE = 2_000
    MAX_TERMS = 12  # and a long message searches by its rarest terms only: each OR term is a posting scan

    def keyword_search(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """BM25 over words (and bigrams at a quarter weight); archived memories may be among the hits."""
        if not terms:
            return []
        # count(*) on the FTS table reads every row (4 ms at 10k); the memories table keeps one row per
        # indexed memory and counts from its b-tree
        total = self._query("SELECT count(*) FROM memories WHERE namespace=?", (self.namespace,))[0][0]
        if total > self.LARGE_STORE:
            marks = ",".join("?" * len(terms))
            df = dict(self._query(f"SELECT term, docs FROM term_docs WHERE namespace=? AND term IN ({marks})",
                                  (self.namespace, *terms)))
            present = sorted((t for t in terms if df.get(t)), key=lambda t: df[t])
            rare = [t for t in present if df[t] <= self.COMMON_SHARE * total][: self.MAX_TERMS]
            terms = rare or present[:3]
            if not terms:
                return []
        rows = self._query("SELECT f.memory_id, -f.rank FROM memories_fts f JOIN memories m ON m.id = f.memory_id "
                           "WHERE memories_fts MATCH ? AND +m.namespace=? ORDER BY f.rank LIMIT ?",
                           (match_expression(terms), self.namespace, limit))
        return [(r[0], float(r[1])) for r in rows]

    def get_many(self, ids: list[str]) -> dict[str, Memory]:
        out: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = self._query(f"SELECT {_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(chunk))}) "
                               "AND +namespace=?", (*chunk, self.namespace))
            out.update((r[0], row_to_memory(r)) for r in rows)
        return out

    def has_unembedded(self, encoder: str = "e5") -> bool:
        vec = VECTOR_COLUMNS[encoder][0]
        return bool(self._query(f"SELECT 1 FROM memories WHERE {vec} IS NULL AND archived=0 AND +namespace=? LIMIT 1",
                                (self.namespace,)))

    def unembedded_count(self, encoder: str) -> int:
        vec = VECTOR_COLUMNS[encoder][0]
        return self._query(f"SELECT count(*) FROM memories WHERE {vec} IS NULL AND +namespace=?",
                           (self.namespace,))[0][0]

    def vectors(self, encoder: str = "e5") -> VectorIndex:
        # Another process's commit moves data_version; our own vector-changing writes move _generation.
        # A touch (activation) changes neither the vectors nor who is archived, so it keeps the cache.
        version = self._query("PRAGMA data_version")[0][0] * 1_000_003 + self._generation
        cached = self._cache.get(encoder)
        if cached is None or cached[0] != version:
            vec = VECTOR_COLUMNS[encoder][0]
            rows = self._query(f"SELECT id, {vec} FROM memories WHERE archived=0 AND {vec} IS NOT NULL "
                               "AND +namespace=?", (self.namespace,))
            dim = SPECS[encoder].dim
            matrix = (np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                      if rows else np.zeros((0, dim), dtype=np.float32))
            cached = self._cache[encoder] = (version, VectorIndex([r[0] for r in rows], matrix))
        return cached[1]

    def without_vectors(self, encoder: str, limit: int) -> list[Memory]:
        vec = VECTOR_COLUMNS[encoder][0]
        return [row_to_memory(r) for r in self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE {vec} IS NULL AND +namespace=? ORDER BY rowid LIMIT ?",
            (self.namespace, limit))]

    def gate_count(self, day: str, source: str, decisions: tuple[str, ...]) -> int:
        marks = ",".join("?" * len(decisions))
        return self._query(f"SELECT count(*) FROM gate_log WHERE namespace=? AND day=? AND source=? "
                           f"AND decision IN ({marks})", (self.namespace, day, source, *decisions))[0][0]

    def gate_log(self, limit: int) -> list[GateEntry]:
        rows = self._query("SELECT at, day, source, decision, reasons, content, memory_id FROM gate_log "
                           "WHERE +namespace=? ORDER BY seq DESC LIMIT ?", (self.namespace, limit))
        return [GateEntry(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6]) for r in rows]

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE namespace=? AND key=?", (self.namespace, key))
        return rows[0][0] if rows else None

    def close(self) -> None:
        with self._lock:
            self._db.close()
