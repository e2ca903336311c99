"""The PostgreSQL + pgvector store, selected by OMBRE_DB=postgresql://…; the same protocol as the
embedded SQLite store, so nothing above it changes.

- Schema by named migrations recorded in `_migrations`, applied under a transaction-level advisory lock, so
  two services starting at once against one database neither race nor apply a step twice.
- Vectors in pgvector columns (both encoders), each with an HNSW index (inner product: vectors are unit
  length). Recall still scores the whole matrix the way the SQLite store does; the indexes keep a nearest-
  neighbour query cheap for a caller that wants one.
- Keywords: the same Python segmentation as SQLite (rjieba words, CJK bigrams), stored as lexemes with no
  parser in between (array_to_tsvector: PostgreSQL's own parser would cut Chinese differently) in a tsvector
  with a GIN index; ranking is BM25 computed from term counts (words weight 1, bigrams 0.25, as FTS5's bm25
  is configured), with document frequencies in term_docs, as in SQLite.
- Writes are transactions; activation counts are incremented in SQL, so concurrent services lose none.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..errors import StoreError
from .embed import SPECS
from .model import Memory
from .rows import FIELDS, VECTOR_COLUMNS, VECTOR_NAMES, distinct_terms, document_of, row_values
from .segment import token_count
from .sql_store import SqlStore
from .store import GateEntry, VectorIndex

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

LOCK_KEY = 0x6F6D627265  # "ombre": the advisory lock migrations take
HOLD_CLASS = 0x6F6D62  # with the namespace's hash: the lock writes that check before they write take (exclusive)
K1, B, GRAM_WEIGHT = 1.2, 0.75, 0.25
HNSW = (("memories_embedding", "embedding"), ("memories_embedding_use", "embedding_use"))


def _schema() -> list[tuple[str, list]]:
    """Named steps, each a list of SQL statements or callables given the connection (a re-index)."""
    e5, use = SPECS["e5"].dim, SPECS["use"].dim
    return [
        (
            "m001_schema",
            [
                "CREATE EXTENSION IF NOT EXISTS vector",
                f"""CREATE TABLE memories (
                seq BIGSERIAL UNIQUE,
                id TEXT PRIMARY KEY,
                namespace TEXT NOT NULL DEFAULT 'default',
                content TEXT NOT NULL, title TEXT NOT NULL DEFAULT '', type TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                importance INTEGER NOT NULL CHECK (importance BETWEEN 1 AND 10),
                pinned INTEGER NOT NULL DEFAULT 0, valence REAL NOT NULL DEFAULT 0.5, arousal REAL NOT NULL DEFAULT 0.3,
                domain TEXT NOT NULL DEFAULT '', event_date TEXT, created TEXT NOT NULL, last_active TEXT NOT NULL,
                activation_count INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, archived INTEGER NOT NULL DEFAULT 0,
                from_session TEXT, evidence_date TEXT, quote TEXT, superseded_by TEXT,
                situation TEXT NOT NULL DEFAULT '', conflicts TEXT NOT NULL DEFAULT '[]',
                trace TEXT NOT NULL DEFAULT '[]', earlier_quotes TEXT NOT NULL DEFAULT '[]',
                embedding vector({e5}), embed_model TEXT, embedding_use vector({use}), use_model TEXT,
                words TEXT NOT NULL DEFAULT '', grams TEXT NOT NULL DEFAULT '', length INTEGER NOT NULL DEFAULT 0,
                terms tsvector)""",
                "CREATE INDEX memories_active ON memories(namespace, archived, pinned, importance)",
                "CREATE INDEX memories_terms ON memories USING gin(terms)",
                # what recall asks on every call: is anything still waiting for a vector (usually nothing)
                "CREATE INDEX memories_unembedded ON memories(namespace) WHERE embedding IS NULL",
                "CREATE INDEX memories_unembedded_use ON memories(namespace) WHERE embedding_use IS NULL",
                *(f"CREATE INDEX {name} ON memories USING hnsw ({column} vector_ip_ops)" for name, column in HNSW),
                "CREATE INDEX memories_event_date ON memories(event_date)",
                "CREATE INDEX memories_type_created ON memories(namespace, type, created)",
                "CREATE INDEX memories_event_md ON memories(substr(event_date, 6, 5))",
                "CREATE INDEX memories_created_md ON memories(substr(created, 6, 5))",
                """CREATE TABLE gate_log (seq BIGSERIAL PRIMARY KEY, namespace TEXT NOT NULL DEFAULT 'default',
                at TEXT NOT NULL, day TEXT NOT NULL,
                source TEXT NOT NULL, decision TEXT NOT NULL, reasons TEXT NOT NULL, memory_id TEXT,
                content TEXT NOT NULL)""",
                "CREATE INDEX gate_log_day ON gate_log(namespace, day, source, decision)",
                "CREATE TABLE meta (namespace TEXT NOT NULL DEFAULT 'default', key TEXT NOT NULL, value TEXT NOT NULL, "
                "PRIMARY KEY (namespace, key))",
                "CREATE TABLE term_docs (namespace TEXT NOT NULL DEFAULT 'default', term TEXT NOT NULL, "
                "docs INTEGER NOT NULL, PRIMARY KEY (namespace, term))",
                "CREATE TABLE namespaces (token_sha256 TEXT PRIMARY KEY, namespace TEXT NOT NULL, "
                "created TEXT NOT NULL)",
            ],
        ),
        # A memory id is unique within its namespace, not across them: two people's stores that began as
        # copies of one SQLite file keep the same ids, and both must migrate into one database.
        (
            "m002_namespace_ids",
            [
                "ALTER TABLE memories DROP CONSTRAINT memories_pkey",
                "ALTER TABLE memories ADD PRIMARY KEY (namespace, id)",
            ],
        ),
        # English words indexed as their stems without function words (segment.keys), as on SQLite
        ("m003_english_keys", [_reindex_terms]),
    ]


def _reindex_terms(db) -> None:
    """Every memory's keyword columns made again from its text, and the term counts with them."""
    rows = db.execute("SELECT namespace, id, title, content, tags, words, grams FROM memories").fetchall()
    counts: Counter[tuple[str, str]] = Counter()
    for namespace, mid, title, content, tags, old_words, old_grams in rows:
        terms = document_of(title, content, tags)
        if terms != (old_words, old_grams):
            db.execute(
                f"UPDATE memories SET words=%s, grams=%s, length=%s, terms={_TERMS} WHERE namespace=%s AND id=%s",
                (*terms, token_count(terms), *terms, namespace, mid),
            )
        counts.update((namespace, t) for t in distinct_terms(terms))
    db.execute("DELETE FROM term_docs")
    for (namespace, term), n in counts.items():
        db.execute("INSERT INTO term_docs (namespace, term, docs) VALUES (%s, %s, %s)", (namespace, term, n))


_LEXEMES = "array_to_tsvector(regexp_split_to_array(nullif(btrim(%s), ''), '\\s+'))"
_TERMS = f"coalesce(setweight({_LEXEMES}, 'A'), ''::tsvector) || coalesce(setweight({_LEXEMES}, 'D'), ''::tsvector)"
_INSERT = (
    f"INSERT INTO memories (namespace, id, {', '.join(FIELDS)}, {', '.join(VECTOR_NAMES)}, words, grams, "
    f"length, terms) VALUES ({', '.join(['%s'] * (len(FIELDS) + len(VECTOR_NAMES) + 5))}, {_TERMS})"
)
# readers cache the vector matrix while this stays the same; every write that can change it moves it
_BUMP = (
    "INSERT INTO meta (namespace, key, value) VALUES (%s, 'vectors_version', '1') ON CONFLICT (namespace, key) "
    "DO UPDATE SET value = (meta.value::bigint + 1)::text"
)


def _array(value) -> np.ndarray:
    """A pgvector value as float32 (pgvector returns its own Vector type, or numpy once registered)."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def _any(terms: list[str]) -> str:
    """A tsquery matching any of the terms, each a quoted lexeme (no term is read as query syntax)."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def _bm25(words: str, grams: str, length: float, idf: dict[str, float]) -> float:
    """FTS5's bm25(1.0, 0.25) of one memory: words count 1, bigrams a quarter; `length` relative to the
    average."""
    tf: dict[str, float] = dict(Counter(t for t in words.split() if t in idf))  # bigrams add fractions
    for t in grams.split():
        if t in idf:
            tf[t] = tf.get(t, 0) + GRAM_WEIGHT
    return sum(idf[t] * f * (K1 + 1) / (f + K1 * (1 - B + B * length)) for t, f in tf.items())


_UPDATE = f"UPDATE memories SET {', '.join(f'{c}=%s' for c in FIELDS)} WHERE id=%s AND namespace=%s"


def _unlock_all(db) -> None:
    db.execute("SELECT pg_advisory_unlock_all()")


class PostgresStore(SqlStore):
    P, ORDER, PLUS = "%s", "seq", ""
    # the pool and the bound on holds keeping a connection: __init__ takes them from `share`, or opens them
    _psycopg: ModuleType
    _pool: ConnectionPool
    _lockers: threading.BoundedSemaphore

    def __init__(
        self,
        url: str,
        namespace: str = "default",
        *,
        share: "PostgresStore | None" = None,
        pool: tuple[int, int] = (1, 10),
        timeout_s: float = 10.0,
    ) -> None:
        self.namespace = namespace  # every row this store reads or writes belongs to it
        self._cache: dict[str, tuple[str | None, VectorIndex]] = {}
        self._stats_cache: tuple[str | None, tuple[int, float]] | None = None
        self._holding = threading.RLock()
        if share is not None:  # another namespace on the same pool (see beside)
            self.url, self._psycopg, self._pool, self._lockers = url, share._psycopg, share._pool, share._lockers
            self._owner = False
            return
        self._owner = True
        try:
            import psycopg
            from pgvector.psycopg import register_vector
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                "OMBRE_DB is a PostgreSQL address, but psycopg, psycopg_pool and pgvector are not installed",
                hint="pip install 'ombre[postgres]'",
            ) from None

        self.url = url
        self._psycopg = psycopg
        # A pool, not one connection: every namespace of a service shares it, and a slow query in one (a
        # large keyword search, a hold waiting on its lock) holds one connection, not everyone's.
        self._pool = ConnectionPool(
            url,
            min_size=pool[0],
            max_size=max(pool),
            timeout=timeout_s,
            open=False,
            kwargs={"autocommit": True},
            configure=register_vector,
            # a connection the server dropped (a restart) is found before it is lent, not by a failed request
            check=ConnectionPool.check_connection,
            # and one lent back still holding a hold's lock (an interrupted hold) gives it up
            reset=_unlock_all,
            name="ombre",
        )
        # A hold keeps one connection for its lock and works on others: at most all but one connection
        # may be kept so, or every hold would wait for a connection another keeps
        self._lockers = threading.BoundedSemaphore(max(1, max(pool) - 1))
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout_s))) as db:
                self._migrate(db)  # before the pool: its connections need the vector type migration creates
            self._pool.open(wait=True, timeout=timeout_s)
        except (psycopg.Error, self._pool_timeout()) as exc:
            self._pool.close()
            raise StoreError(
                f"cannot open the PostgreSQL memory store: {exc}".strip(),
                hint="check OMBRE_DB (postgresql://user:password@host/dbname) and that the pgvector "
                "extension is installed there",
            ) from exc

    @staticmethod
    def _pool_timeout() -> type[Exception]:
        from psycopg_pool import PoolTimeout

        return PoolTimeout

    def _migrate(self, db) -> list[str]:
        applied = []
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            done = {r[0] for r in db.execute("SELECT name FROM _migrations").fetchall()}
            for name, statements in _schema():
                if name in done:
                    continue
                for sql in statements:
                    if callable(sql):  # a step that computes in Python (a re-index), in the same transaction
                        sql(db)
                    else:
                        db.execute(sql)
                db.execute("INSERT INTO _migrations VALUES (%s, now()::text)", (name,))
                applied.append(name)
        return applied

    def pool_stats(self) -> dict:
        """The shared pool as `ombre doctor` and /health show it: its bounds, connections open and idle, and
        requests waiting for one now."""
        stats = self._pool.get_stats()
        return {
            "min": self._pool.min_size,
            "max": self._pool.max_size,
            "open": stats.get("pool_size", 0),
            "idle": stats.get("pool_available", 0),
            "waiting": stats.get("requests_waiting", 0),
            "timeouts": stats.get("requests_errors", 0),
        }

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        # One hold at a time in this process (_holding) and across services: a session advisory lock, held on
        # a connection of its own for the whole hold (which runs several transactions on others, and may
        # wait seconds on an arbitration model while recall goes on through the rest of the pool).
        with self._holding, self._lockers, self._connection() as db:
            try:
                db.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (HOLD_CLASS, self.namespace))
            except self._psycopg.Error as exc:
                raise StoreError(
                    f"memory database lock failed: {exc}", hint="check OMBRE_DB; nothing was written"
                ) from exc
            try:
                yield
            finally:
                try:
                    db.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (HOLD_CLASS, self.namespace))
                except self._psycopg.Error:
                    pass  # the connection is gone, and its session's lock with it; what the hold wrote stands

    @contextmanager
    def _connection(self) -> Iterator:
        try:
            with self._pool.connection() as db:
                yield db
        except self._pool_timeout() as exc:
            raise StoreError(
                f"the memory database is busy: no connection free within {self._pool.timeout:g} s",
                hint="raise OMBRE_PG_POOL_MAX (PostgreSQL's max_connections permitting), or look "
                "for a query that holds one",
            ) from exc

    # -- writes ---------------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self) -> Iterator:
        try:
            with self._connection() as db, db.transaction():
                yield db
        except self._psycopg.Error as exc:
            raise StoreError(f"memory database write failed: {exc}", hint="nothing was written; try again") from exc

    def _write(self, steps: list[tuple[str, tuple]], changes_vectors: bool = True) -> None:
        # what changes the live vectors moves vectors_version itself (_BUMP), inside its own transaction
        with self._transaction() as db:
            for sql, params in steps:
                db.execute(sql, params)

    def add(self, memory: Memory, terms: tuple[str, str]) -> None:
        self.add_many([(memory, terms, None)])

    def add_many(self, rows: list[tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]]) -> None:
        with self._transaction() as db:
            self._insert(db, self.namespace, rows)

    def load(
        self,
        batches: dict[
            str,
            tuple[list[tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]], list[GateEntry], dict[str, str]],
        ],
        tokens: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """Whole stores at once (`ombre memories migrate`), by namespace: memories, the gate log in order, meta
        rows; one transaction, so a failure leaves the target as it was. The HNSW indexes are dropped for the
        load and built once after it (inside the same transaction): maintaining them row by row costs about
        20 ms a memory, building them a fraction of that."""
        with self._transaction() as db:
            for name, _ in HNSW:
                db.execute(f"DROP INDEX IF EXISTS {name}")
            for token in tokens:
                db.execute("INSERT INTO namespaces (token_sha256, namespace, created) VALUES (%s, %s, %s)", token)
            for namespace, (ns_rows, ns_gate, ns_meta) in batches.items():
                self._insert(db, namespace, ns_rows)
                for entry in ns_gate:
                    db.execute(*self._gate_step(entry, namespace))
                for key, value in ns_meta.items():
                    db.execute(*self._meta_step(key, value, namespace))
            db.execute("SET LOCAL maintenance_work_mem = '512MB'")  # the default 64MB makes a 100k build crawl
            for name, column in HNSW:
                db.execute(f"CREATE INDEX {name} ON memories USING hnsw ({column} vector_ip_ops)")
            # the planner's statistics now, not at autovacuum's next round: until then it plans for the
            # empty table and walks the whole namespace through the primary key on every keyword search
            db.execute("ANALYZE memories")

    def _insert(
        self, db, namespace: str, rows: list[tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]]
    ) -> None:
        counts: Counter[str] = Counter()
        for memory, terms, vectors in rows:
            cells: list = []  # each row written once: an update would index its vectors in HNSW twice
            for key in VECTOR_COLUMNS:
                vector = (vectors or {}).get(key)
                cells += [None, None] if vector is None else [np.asarray(vector, dtype=np.float32), SPECS[key].model]
            db.execute(
                _INSERT,
                (namespace, memory.id, *row_values(memory), *cells, *terms, token_count(terms), terms[0], terms[1]),
            )
            counts.update(distinct_terms(terms))
        for sql, params in self._count_steps(counts, namespace):
            db.execute(sql, params)
        db.execute(_BUMP, (namespace,))

    def update(self, memory: Memory, terms: tuple[str, str] | None = None) -> None:
        with self._transaction() as db:
            db.execute(_BUMP, (self.namespace,))  # an archive or restore changes which vectors are live
            old = db.execute(
                "SELECT words, grams FROM memories WHERE id=%s AND namespace=%s FOR UPDATE", (memory.id, self.namespace)
            ).fetchone()
            if old is None:
                return  # another namespace's memory: not this store's to change
            db.execute(_UPDATE, (*row_values(memory), memory.id, self.namespace))
            if terms is None:
                return
            db.execute(
                f"UPDATE memories SET words=%s, grams=%s, length=%s, terms={_TERMS} WHERE id=%s AND namespace=%s",
                (*terms, token_count(terms), *terms, memory.id, self.namespace),
            )
            counts: Counter[str] = Counter(distinct_terms(terms))
            counts.subtract(distinct_terms((old[0], old[1])))
            for sql, params in self._count_steps(counts):
                db.execute(sql, params)

    def delete(self, memory_id: str) -> None:
        with self._transaction() as db:
            db.execute(_BUMP, (self.namespace,))
            old = db.execute(
                "DELETE FROM memories WHERE id=%s AND namespace=%s RETURNING words, grams", (memory_id, self.namespace)
            ).fetchone()
            if old is not None:
                counts: Counter[str] = Counter()
                counts.subtract(distinct_terms((old[0], old[1])))
                for sql, params in self._count_steps(counts):
                    db.execute(sql, params)

    def set_vectors(self, encoder: str, rows: list[tuple[str, np.ndarray]]) -> None:
        vec, model = VECTOR_COLUMNS[encoder]
        self._write(
            [(_BUMP, (self.namespace,))]
            + [
                (
                    f"UPDATE memories SET {vec}=%s, {model}=%s WHERE id=%s AND namespace=%s",
                    (np.asarray(v, dtype=np.float32), SPECS[encoder].model, mid, self.namespace),
                )
                for mid, v in rows
            ]
        )

    def occupied(self, namespaces: list[str]) -> list[str]:
        """Which of these namespaces already hold memories or gate-log lines (a migration lands only in empty
        ones)."""
        return [
            r[0]
            for r in self._query(
                "SELECT DISTINCT namespace FROM memories WHERE namespace = ANY(%s) UNION "
                "SELECT DISTINCT namespace FROM gate_log WHERE namespace = ANY(%s) ORDER BY 1",
                (namespaces, namespaces),
            )
        ]

    # -- reads ----------------------------------------------------------------------------------------
    def _query(self, sql: str, params: tuple = (), binary: bool = False) -> list[tuple]:
        try:
            with self._connection() as db, db.cursor(binary=binary) as cursor:
                return cursor.execute(sql, params).fetchall()
        except self._psycopg.Error as exc:
            raise StoreError(f"memory database read failed: {exc}", hint="check OMBRE_DB") from exc

    ROWS_PER_FETCH = 2_000  # the rarest terms go in one query while they match about this many memories
    # Rows read at most per search. The pruning often ends before; when the terms are all fairly common in
    # a large store it would not, and reading every match cost 100k memories a p95 of 640 ms
    # (bench/breath_latency.py). Past this the memories of the rarest terms are the ones ranked (before the
    # pruning, an arbitrary 2,000 matches were).
    MOST_ROWS = 2_000

    def _stats(self) -> tuple[int, float]:
        """How many memories, of what average length: read again only after a write that changed them (every
        insert, edit and delete moves vectors_version)."""
        version = self.meta("vectors_version")
        if self._stats_cache is None or self._stats_cache[0] != version:
            total, avg = self._query(
                "SELECT count(*), avg(length) FROM memories WHERE namespace=%s", (self.namespace,)
            )[0]
            self._stats_cache = (version, (int(total), float(avg or 1.0)))
        return self._stats_cache[1]

    def keyword_search(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """BM25 over words (and bigrams at a quarter weight), the scores SQLite's FTS5 gives, and the same top
        `limit` without scoring every match (max-score pruning; exact unless it would read past MOST_ROWS).

        The terms are taken rarest first, a few at a time, and the memories holding them (found by the GIN
        index, never the same memory twice) are scored on every term. A term adds less than idf·(k1+1) to
        any memory's score, so once the limit-th best score reaches what the terms not yet taken could add
        together, no memory holding only those can enter the top: the search stops. Common terms are then
        never fetched — in a large store they match thousands of memories."""
        if not terms:
            return []
        total, avgdl = self._stats()
        df = self._document_frequencies(terms)  # BM25 needs them in a store of any size
        order = sorted((t for t in self._rarest(terms, df, total) if df.get(t)), key=lambda t: (df[t], t))
        if not order:
            return []
        idf = {t: max(math.log((total - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in order}
        scored: list[tuple[str, float]] = []
        taken = fetched = 0
        while taken < len(order) and fetched < self.MOST_ROWS:
            end, rows_ahead = taken + 1, df[order[taken]]
            while end < len(order) and rows_ahead + df[order[end]] <= self.ROWS_PER_FETCH:
                rows_ahead += df[order[end]]
                end += 1
            sql = "SELECT id, words, grams, length FROM memories WHERE namespace=%s AND terms @@ %s::tsquery"
            params: tuple = (self.namespace, _any(order[taken:end]))
            if taken:
                sql += " AND NOT terms @@ %s::tsquery"
                params += (_any(order[:taken]),)
            rows = self._query(sql, params)
            fetched += len(rows)
            scored += [(mid, _bm25(words, grams, length / avgdl, idf)) for mid, words, grams, length in rows]
            taken = end
            left = (K1 + 1) * sum(idf[t] for t in order[taken:])
            if len(scored) >= limit and heapq.nlargest(limit, (x for _, x in scored))[-1] >= left:
                break
        return heapq.nsmallest(limit, scored, key=lambda r: (-r[1], r[0]))

    def vectors(self, encoder: str = "e5") -> VectorIndex:
        # Another service may have written: the cache holds while vectors_version is unchanged (every write
        # that can change the live vectors moves it; a touch does not).
        vec = VECTOR_COLUMNS[encoder][0]
        version = self.meta("vectors_version")
        cached = self._cache.get(encoder)
        if cached is None or cached[0] != version:
            # in binary: parsing the text form of 10k vectors took 2.0 s an encoder, the binary one 0.18 s
            rows = self._query(
                f"SELECT id, {vec} FROM memories WHERE archived=0 AND {vec} IS NOT NULL AND namespace=%s ORDER BY seq",
                (self.namespace,),
                binary=True,
            )
            dim = SPECS[encoder].dim
            matrix = np.stack([_array(r[1]) for r in rows]) if rows else np.zeros((0, dim), dtype=np.float32)
            cached = self._cache[encoder] = (version, VectorIndex([r[0] for r in rows], matrix))
        return cached[1]

    def beside(self, namespace: str) -> "PostgresStore":
        """Another namespace on this store's pool: a service answering many people holds one pool, not a
        connection a person (PostgreSQL allows 100 by default). Its holds lock their own namespace; it never
        closes the pool (the first store does)."""
        return PostgresStore(self.url, namespace, share=self)

    def close(self) -> None:
        if self._owner:
            self._pool.close()
