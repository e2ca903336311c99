"""The PostgreSQL + pgvector store, selected by OMBRE_DB=postgresql://…; the same protocol as the
embedded SQLite store, so nothing above it changes.

- Schema by named migrations recorded in `_migrations`, applied under a transaction-level advisory lock, so
  two services starting at once against one database neither race nor apply a step twice.
- Vectors in pgvector columns (both encoders). The service holds none of them: recall scores a small
  namespace's vectors in SQL and reads back only the scores; a namespace of HNSW_FROM vectors or more gets
  an HNSW index of its own (partial, inner product: vectors are unit length) and recall re-scores its
  candidates exactly.
- Keywords: the same Python segmentation as SQLite (rjieba words, CJK bigrams), each memory's term counts
  kept as postings (memory_terms; PostgreSQL's own parser would cut Chinese differently); ranking is BM25
  summed in SQL from them (words weight 1, bigrams 0.25, as FTS5's bm25 is configured), with document
  frequencies in term_docs, as in SQLite.
- Writes are transactions; activation counts are incremented in SQL, so concurrent services lose none, in a
  table of their own (memory_use): a recall does not rewrite a memory's row and its index entries.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..errors import StoreError
from .embed import SPECS
from .model import Memory
from .rows import FIELDS, VECTOR_COLUMNS, VECTOR_NAMES, distinct_terms, document_of, row_values
from .segment import token_count
from .sql_store import SqlStore
from .store import GateEntry, ScoredRows, VectorHits, VectorIndex

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

LOCK_KEY = 0x6F6D627265  # "ombre": the advisory lock migrations take
HOLD_CLASS = 0x6F6D62  # with the namespace's hash: the lock writes that check before they write take (exclusive)
K1, B, GRAM_WEIGHT = 1.2, 0.75, 0.25
HNSW = (("memories_embedding", "embedding"), ("memories_embedding_use", "embedding_use"))  # before m004
# A namespace with this many live vectors of an encoder is searched by an HNSW index of its own (partial:
# its rows only); below it every vector is scored in SQL, exactly. Scoring in SQL costs ~4 ms an encoder at
# 2,000 memories and ~40 at 10,000, an index search ~17 at 100,000 (bench/breath_latency.py --db postgresql).
HNSW_FROM = 5_000
# How far an index scan looks: twice recall's 50 candidates. On 100k MemDaily memories the index's top 5 of
# a query were the exact top 5 in 4.75 of 5 at 100, 4.9 at 200, which took 27 ms an encoder instead of 18.
EF_SEARCH = 100
VERSION_TTL_S = 0.25
MEAN_DRIFT = 0.01  # the mean vector (lift's baseline) is read again once the live count moved by this share


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
        # pgvector 0.6 filters an HNSW scan after it, so one index over every namespace finds another
        # person's neighbours: recall scores small namespaces exactly and large ones by an index of their own.
        # Vectors kept in the row: a USE vector (2 KB) went to the TOAST table, and scoring 2,000 memories in
        # SQL read 14k pages (18 ms) where the rows alone are 1.2k (4 ms). The text round trip rewrites the
        # stored ones in place (float4 prints exactly).
        (
            "m004_namespace_vectors",
            [
                *(f"DROP INDEX IF EXISTS {name}" for name, _ in HNSW),
                "ALTER TABLE memories ALTER COLUMN embedding SET STORAGE PLAIN, "
                "ALTER COLUMN embedding_use SET STORAGE PLAIN",
                "UPDATE memories SET embedding = embedding::text::vector, embedding_use = embedding_use::text::vector "
                "WHERE embedding IS NOT NULL OR embedding_use IS NOT NULL",
            ],
        ),
        # Keyword ranking in SQL: each memory's term counts in a table of postings (the tsvector kept no
        # counts, so rows of text were read back to rank); the GIN index and tsvector go with it.
        (
            "m005_postings",
            [
                # the counts ride in the key's index: a search reads the index only, never the table
                # and `ord`, in the order postings were written: equal scores are ordered by it, as FTS5 orders
                # them by rowid (a memory whose terms change is written again, last, on both)
                "CREATE TABLE memory_terms (namespace TEXT NOT NULL, term TEXT NOT NULL, id TEXT NOT NULL, "
                "tf REAL NOT NULL, dl INTEGER NOT NULL, ord BIGSERIAL, "
                "PRIMARY KEY (namespace, term, id) INCLUDE (tf, dl, ord))",
                "CREATE INDEX memory_terms_id ON memory_terms(namespace, id)",
                _post_all,
                "DROP INDEX IF EXISTS memories_terms",
                "ALTER TABLE memories DROP COLUMN IF EXISTS terms",
                "ANALYZE memory_terms",
            ],
        ),
        # The anniversary's month-day lookups within the namespace: with the month-day alone the planner
        # ANDed it with the namespace index, reading all 100k of a large namespace's entries (15 ms a turn)
        (
            "m006_namespace_days",
            [
                "CREATE INDEX memories_ns_event_md ON memories(namespace, substr(event_date, 6, 5))",
                "CREATE INDEX memories_ns_created_md ON memories(namespace, substr(created, 6, 5))",
                "DROP INDEX IF EXISTS memories_event_md",
                "DROP INDEX IF EXISTS memories_created_md",
                "ANALYZE memories",  # an expression index's statistics come with ANALYZE only
            ],
        ),
        # a Latin word joined by a hyphen or a dot is indexed as its parts (segment.keys), as on SQLite
        ("m007_english_word_parts", [_reindex_terms, "ANALYZE memory_terms"]),
        # English memories' latent terms (SqlStore.set_latents), filled by the service in the background
        (
            "m008_latent_terms",
            [
                "CREATE TABLE memory_latents (namespace TEXT NOT NULL, latent INTEGER NOT NULL, weight REAL NOT NULL, "
                "id TEXT NOT NULL, PRIMARY KEY (namespace, latent, weight, id))",
                "CREATE INDEX memory_latents_id ON memory_latents(namespace, id)",
            ],
        ),
        # What recall counts (touch) in a table of its own. A memory's row holds its vectors (m004) and fills
        # half a page, so an update of its count found no room beside it and wrote a new version, with new
        # entries in the namespace's HNSW indexes: 10–25 ms a recall at 100k memories, and indexes that grew
        # with every recall. A write of the memory itself takes its counts back into the row (update).
        (
            "m009_memory_use",
            [
                "CREATE TABLE memory_use (namespace TEXT NOT NULL, id TEXT NOT NULL, "
                "activation_count INTEGER NOT NULL, last_active TEXT NOT NULL, PRIMARY KEY (namespace, id))",
            ],
        ),
    ]


def _postings(terms: tuple[str, str]) -> dict[str, float]:
    """A memory's term counts as its BM25 reads them: a word counts 1, a bigram GRAM_WEIGHT (one string can
    be both: FTS5's bm25 with the columns weighted 1 and 0.25 adds them)."""
    tf: Counter[str] = Counter(terms[0].split())
    out: dict[str, float] = {t: float(n) for t, n in tf.items()}
    for t in terms[1].split():
        out[t] = out.get(t, 0.0) + GRAM_WEIGHT
    return out


def _copy_postings(db, rows: list[tuple[str, str, tuple[str, str], int]]) -> None:
    """The postings of (namespace, id, terms, length) rows, by COPY (a 100k load writes millions)."""
    with db.cursor().copy("COPY memory_terms (namespace, term, id, tf, dl) FROM STDIN") as copy:
        for namespace, mid, terms, length in rows:
            for term, tf in _postings(terms).items():
                copy.write_row((namespace, term, mid, tf, length))


def _post_all(db) -> None:
    rows = db.execute("SELECT namespace, id, words, grams, length FROM memories ORDER BY seq").fetchall()
    _copy_postings(db, [(namespace, mid, (words, grams), length) for namespace, mid, words, grams, length in rows])


def _reindex_terms(db) -> None:
    """Every memory's keyword columns made again from its text, and the term counts with them."""
    rows = db.execute("SELECT namespace, id, title, content, tags, words, grams FROM memories").fetchall()
    counts: Counter[tuple[str, str]] = Counter()
    for namespace, mid, title, content, tags, old_words, old_grams in rows:
        terms = document_of(title, content, tags)
        if terms != (old_words, old_grams):
            db.execute(
                "UPDATE memories SET words=%s, grams=%s, length=%s WHERE namespace=%s AND id=%s",
                (*terms, token_count(terms), namespace, mid),
            )
        counts.update((namespace, t) for t in distinct_terms(terms))
    db.execute("DELETE FROM term_docs")
    for (namespace, term), n in counts.items():
        db.execute("INSERT INTO term_docs (namespace, term, docs) VALUES (%s, %s, %s)", (namespace, term, n))
    if db.execute("SELECT to_regclass('memory_terms')").fetchone()[0] is not None:  # a store past m005
        db.execute("DELETE FROM memory_terms")
        _post_all(db)


_INSERT = (
    f"INSERT INTO memories (namespace, id, {', '.join(FIELDS)}, {', '.join(VECTOR_NAMES)}, words, grams, "
    f"length) VALUES ({', '.join(['%s'] * (len(FIELDS) + len(VECTOR_NAMES) + 5))})"
)
# readers keep the namespace's counts while this stays the same; every write that can change them moves it
_BUMP = (
    "INSERT INTO meta (namespace, key, value) VALUES (%s, 'vectors_version', '1') ON CONFLICT (namespace, key) "
    "DO UPDATE SET value = (meta.value::bigint + 1)::text"
)


def _array(value) -> np.ndarray:
    """A pgvector value as float32 (pgvector returns its own Vector type, or numpy once registered)."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


_UPDATE = f"UPDATE memories SET {', '.join(f'{c}=%s' for c in FIELDS)} WHERE id=%s AND namespace=%s"
# A memory as it is read: its row, with the recalls counted since it was last written (memory_use) added in.
# A subquery, not a view: it follows FIELDS, and the planner takes its conditions into the table's indexes.
_USED = {
    "last_active": "greatest(m.last_active, u.last_active)",  # ISO times of one format order as text
    "activation_count": "m.activation_count + coalesce(u.activation_count, 0)",
}
_ROWS = (
    "(SELECT m.seq, m.id, m.namespace, "
    + ", ".join(f"{_USED[c]} AS {c}" if c in _USED else f"m.{c}" for c in FIELDS)
    + "".join(f", m.{vec}" for vec, _ in VECTOR_COLUMNS.values())
    + " FROM memories m LEFT JOIN memory_use u ON u.namespace = m.namespace AND u.id = m.id) AS memories"
)


def _configure(db) -> None:
    from pgvector.psycopg import register_vector

    register_vector(db)
    db.execute(f"SET hnsw.ef_search = {EF_SEARCH}")


def _index_name(column: str, namespace: str) -> str:
    return f"memories_{column}_{hashlib.sha256(namespace.encode()).hexdigest()[:16]}"


def _index_sql(sql, column: str, name: str, namespace: str, concurrently: bool = False):
    """The HNSW index of one namespace's live vectors of one encoder (partial: a scan reads its rows only)."""
    return sql.SQL(
        "CREATE INDEX " + ("CONCURRENTLY " if concurrently else "") + "IF NOT EXISTS {} ON memories "
        "USING hnsw ({} vector_ip_ops) WHERE namespace = {} AND archived = 0"
    ).format(sql.Identifier(name), sql.Identifier(column), sql.Literal(namespace))


def _unlock_all(db) -> None:
    db.execute("SELECT pg_advisory_unlock_all()")


class PostgresStore(SqlStore):
    P, ORDER, PLUS, ROWS = "%s", "seq", "", _ROWS
    # the pool and the bound on holds keeping a connection: __init__ takes them from `share`, or opens them
    _psycopg: ModuleType
    _pool: ConnectionPool
    _lockers: threading.BoundedSemaphore
    _indexing: set[str]  # the namespace indexes this service is building now (_index_ready)

    def __init__(
        self,
        url: str,
        namespace: str = "default",
        *,
        share: "PostgresStore | None" = None,
        pool: tuple[int, int] = (1, 10),
        timeout_s: float = 10.0,
        hnsw_from: int = HNSW_FROM,
    ) -> None:
        self.namespace = namespace  # every row this store reads or writes belongs to it
        self._shape: tuple[str | None, _Shape] | None = None
        self._seen: tuple[float, str | None] | None = None  # (when, vectors_version) as last read
        self._means: dict[str, tuple[int, np.ndarray]] = {}
        self._days: dict[tuple, tuple[str | None, list[Memory]]] = {}  # on_month_days' answers, by version
        self._ready: set[str] = set()  # this namespace's HNSW indexes known to be built
        self.hnsw_from = hnsw_from
        self._holding = threading.RLock()
        if share is not None:  # another namespace on the same pool (see beside)
            self.url, self._psycopg, self._pool, self._lockers = url, share._psycopg, share._pool, share._lockers
            self._indexing, self.hnsw_from = share._indexing, share.hnsw_from
            self._owner = False
            return
        self._owner = True
        try:
            import pgvector.psycopg  # noqa: F401 — _configure registers its types on each connection
            import psycopg
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
            configure=_configure,
            # a connection the server dropped (a restart) is found before it is lent, not by a failed request
            check=ConnectionPool.check_connection,
            # and one lent back still holding a hold's lock (an interrupted hold) gives it up
            reset=_unlock_all,
            name="ombre",
        )
        # A hold keeps one connection for its lock and works on others: at most all but one connection
        # may be kept so, or every hold would wait for a connection another keeps
        self._lockers = threading.BoundedSemaphore(max(1, max(pool) - 1))
        self._indexing = set()
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
        finally:
            self._seen = None  # what this store wrote, it reads at once

    def _write(self, steps: list[tuple[str, tuple]], changes_vectors: bool = True, durable: bool = True) -> None:
        # what changes the live vectors moves vectors_version itself (_BUMP), inside its own transaction
        with self._transaction() as db:
            if not durable:
                db.execute("SET LOCAL synchronous_commit = off")
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
        rows; one transaction, so a failure leaves the target as it was. A namespace large enough for its own
        HNSW indexes has them built once after its rows (inside the same transaction): maintaining them row by
        row costs about 20 ms a memory, building them a fraction of that."""
        with self._transaction() as db:
            for token in tokens:
                db.execute("INSERT INTO namespaces (token_sha256, namespace, created) VALUES (%s, %s, %s)", token)
            for namespace, (ns_rows, ns_gate, ns_meta) in batches.items():
                self._insert(db, namespace, ns_rows)
                for entry in ns_gate:
                    db.execute(*self._gate_step(entry, namespace))
                for key, value in ns_meta.items():
                    db.execute(*self._meta_step(key, value, namespace))
            db.execute("SET LOCAL maintenance_work_mem = '512MB'")  # the default 64MB makes a 100k build crawl
            for namespace, (ns_rows, _, _) in batches.items():
                for key, (column, _) in VECTOR_COLUMNS.items():
                    live = sum(1 for m, _, v in ns_rows if not m.archived and v and v.get(key) is not None)
                    if live >= self.hnsw_from:
                        db.execute(_index_sql(self._psycopg.sql, column, _index_name(column, namespace), namespace))
            # the planner's statistics now, not at autovacuum's next round: until then it plans for the
            # empty table and walks the whole namespace through the primary key on every keyword search
            db.execute("ANALYZE memories")
        try:
            with self._connection() as db:  # outside the transaction: VACUUM cannot run in one
                # the visibility map set, so a keyword search reads the postings' index only (6 ms, not 15,
                # at 100k memories) from the first search on, not from autovacuum's next round
                db.execute("VACUUM (ANALYZE) memory_terms")
        except self._psycopg.Error:
            pass  # what was loaded stands; autovacuum does it later

    def _insert(
        self, db, namespace: str, rows: list[tuple[Memory, tuple[str, str], dict[str, np.ndarray] | None]]
    ) -> None:
        counts: Counter[str] = Counter()
        postings = []
        for memory, terms, vectors in rows:
            cells: list = []  # each row written once: an update would index its vectors in HNSW twice
            for key in VECTOR_COLUMNS:
                vector = (vectors or {}).get(key)
                cells += [None, None] if vector is None else [np.asarray(vector, dtype=np.float32), SPECS[key].model]
            length = token_count(terms)
            db.execute(_INSERT, (namespace, memory.id, *row_values(memory), *cells, *terms, length))
            counts.update(distinct_terms(terms))
            postings.append((namespace, memory.id, terms, length))
        _copy_postings(db, postings)
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
            # the memory was read with its counts added in (_ROWS): they are in the row now
            db.execute("DELETE FROM memory_use WHERE namespace=%s AND id=%s", (self.namespace, memory.id))
            if terms is None:
                return
            length = token_count(terms)
            db.execute(
                "UPDATE memories SET words=%s, grams=%s, length=%s WHERE id=%s AND namespace=%s",
                (*terms, length, memory.id, self.namespace),
            )
            db.execute("DELETE FROM memory_terms WHERE namespace=%s AND id=%s", (self.namespace, memory.id))
            _copy_postings(db, [(self.namespace, memory.id, terms, length)])
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
            db.execute("DELETE FROM memory_terms WHERE namespace=%s AND id=%s", (self.namespace, memory_id))
            db.execute("DELETE FROM memory_latents WHERE namespace=%s AND id=%s", (self.namespace, memory_id))
            db.execute("DELETE FROM memory_use WHERE namespace=%s AND id=%s", (self.namespace, memory_id))
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

    def on_month_days(self, month_days: list[str], *, created_before: str | None = None) -> list[Memory]:
        """As SqlStore's, kept until the namespace is written again (vectors_version): every recall asks it for
        the day's anniversary, and in a namespace of 100k memories it reads ~400 rows (15 ms a recall)."""
        key, version = (tuple(month_days), created_before), self._version()
        cached = self._days.get(key)
        if cached is None or cached[0] != version:
            if len(self._days) > 8:  # a day's keys: today's card, today's and tomorrow's reminders
                self._days.clear()
            cached = self._days[key] = (version, super().on_month_days(month_days, created_before=created_before))
        return list(cached[1])

    def touch(self, ids: list[str], at: str) -> None:
        """Count a recall of these memories in memory_use (see m009), one statement; only memories of this
        namespace are counted, in one order, so two services touching the same ones take their locks alike."""
        counts = Counter(ids)  # a memory named twice is counted twice, as one UPDATE a name would
        if counts:
            self._write(
                [
                    (
                        "INSERT INTO memory_use (namespace, id, activation_count, last_active) "
                        "SELECT m.namespace, m.id, c.n, %s FROM unnest(%s::text[], %s::int[]) AS c(id, n) "
                        "JOIN memories m ON m.namespace = %s AND m.id = c.id ORDER BY m.id "
                        "ON CONFLICT (namespace, id) DO UPDATE SET activation_count = "
                        "memory_use.activation_count + excluded.activation_count, last_active = excluded.last_active",
                        (at, list(counts), list(counts.values()), self.namespace),
                    )
                ],
                changes_vectors=False,
                durable=False,
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
    def _query(self, sql: str, params: tuple = (), binary: bool = False, prepare: bool | None = None) -> list[tuple]:
        try:
            with self._connection() as db, db.cursor(binary=binary) as cursor:
                return cursor.execute(sql, params, prepare=prepare).fetchall()
        except self._psycopg.Error as exc:
            raise StoreError(f"memory database read failed: {exc}", hint="check OMBRE_DB") from exc

    # Postings read at most per search: the rarest terms are taken until their postings reach this. In a
    # large store a few common terms would otherwise have PostgreSQL sum tens of thousands of postings.
    MOST_POSTINGS = 10_000

    def _version(self) -> str | None:
        """vectors_version, read at most once per VERSION_TTL_S: one recall asks for it in several places, and
        each read is a round trip (our own writes forget it at once; another service's show within the TTL)."""
        now = time.monotonic()
        if self._seen is None or now - self._seen[0] > VERSION_TTL_S:
            self._seen = (now, self.meta("vectors_version"))
        return self._seen[1]

    def _shaped(self) -> _Shape:
        """The namespace's counts, read again only after a write that changed them (every insert, edit,
        archive and delete moves vectors_version)."""
        version = self._version()
        if self._shape is None or self._shape[0] != version:
            live = ", ".join(f"count({vec}) FILTER (WHERE archived=0)" for vec, _ in VECTOR_COLUMNS.values())
            row = self._query(
                f"SELECT count(*), avg(length), count(*) FILTER (WHERE archived=0), {live} FROM memories "
                "WHERE namespace=%s",
                (self.namespace,),
            )[0]
            total, avg, active, *vectors = row
            shape = _Shape(int(total), float(avg or 1.0), int(active), dict(zip(VECTOR_COLUMNS, map(int, vectors))))
            self._shape = (version, shape)
        return self._shape[1]

    def _stats(self) -> tuple[int, float]:
        shape = self._shaped()
        return shape.total, shape.average_length

    def has_unembedded(self, encoder: str = "e5") -> bool:
        shape = self._shaped()
        return shape.vectors[encoder] < shape.active

    def keyword_search(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """BM25 over words (and bigrams at a quarter weight), the scores SQLite's FTS5 gives, summed in SQL
        from the postings of the rarest terms (up to MOST_POSTINGS of them): only the top `limit` come back."""
        if not terms:
            return []
        total, avgdl = self._stats()
        df = self._document_frequencies(terms)  # BM25 needs them in a store of any size
        order = sorted((t for t in self._rarest(terms, df, total) if df.get(t)), key=lambda t: (df[t], t))
        taken: list[str] = []
        postings = 0
        for t in order:
            if taken and postings + df[t] > self.MOST_POSTINGS:
                break
            taken.append(t)
            postings += df[t]
        if not taken:
            return []
        idf = [max(math.log((total - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in taken]
        rows = self._query(
            "SELECT id, score FROM (SELECT p.id, sum(q.idf * p.tf * %s / (p.tf + %s * (1 - %s + %s * p.dl / %s))) "
            "AS score, min(p.ord) AS ord FROM unnest(%s::text[], %s::float8[]) AS q(term, idf) "
            "JOIN memory_terms p ON p.namespace = %s AND p.term = q.term GROUP BY p.id) scored "
            # equal scores differ in their last bits by the order the terms were summed: ties go by the order
            # the memories were indexed in, as FTS5's go by rowid
            "ORDER BY floor(score * 1e9 + 0.5) DESC, ord LIMIT %s",
            (K1 + 1, K1, B, B, avgdl, taken, idf, self.namespace, limit),
        )
        return [(mid, float(score)) for mid, score in rows]

    def vectors(self, encoder: str = "e5") -> VectorIndex:
        """Every live vector, read whole each time (a migration's check): recall never holds them."""
        vec = VECTOR_COLUMNS[encoder][0]
        # in binary: parsing the text form of 10k vectors took 2.0 s an encoder, the binary one 0.18 s
        rows = self._query(
            f"SELECT id, {vec} FROM memories WHERE archived=0 AND {vec} IS NOT NULL AND namespace=%s ORDER BY seq",
            (self.namespace,),
            binary=True,
        )
        dim = SPECS[encoder].dim
        matrix = np.stack([_array(r[1]) for r in rows]) if rows else np.zeros((0, dim), dtype=np.float32)
        return VectorIndex([r[0] for r in rows], matrix)

    def vector_count(self, encoder: str) -> int:
        return self._shaped().vectors[encoder]

    def search_vectors(self, encoder: str, queries: np.ndarray, limit: int, gap_rank: int) -> VectorHits:
        """Small namespaces: every live vector scored in SQL and only the scores read back (exact, as the
        SQLite store scores its matrix). From HNSW_FROM vectors on, the namespace's own HNSW index gives each
        query's nearest, the candidates are scored exactly, and lift is measured against the mean vector."""
        vec = VECTOR_COLUMNS[encoder][0]
        queries = np.asarray(queries, dtype=np.float32)
        size = self.vector_count(encoder)
        if size >= self.hnsw_from and self._index_ready(vec):
            return self._nearest(encoder, vec, queries, limit, gap_rank, size)
        ids, rows = self._cosines(vec, queries, "ORDER BY seq")
        return ScoredRows.of(ids, rows, limit, gap_rank)

    def _nearest(self, encoder: str, vec: str, queries: np.ndarray, limit: int, gap_rank: int, size: int) -> VectorHits:
        # one statement for every query; unprepared, so the planner sees the namespace and takes its index
        each = (
            f"(SELECT %s::int, id, {vec} <#> %s FROM memories WHERE namespace=%s AND archived=0 "
            f"ORDER BY {vec} <#> %s LIMIT %s)"
        )
        params: list = []
        for i, q in enumerate(queries):
            params += [i, q, self.namespace, q, max(limit, gap_rank)]
        found: list[list[tuple[str, float]]] = [[] for _ in queries]
        for i, mid, distance in self._query(" UNION ALL ".join([each] * len(queries)), tuple(params), prepare=False):
            found[i].append((mid, -float(distance)))
        rankings, nearest = [], []
        for hits in found:
            hits.sort(key=lambda h: -h[1])
            rankings.append([mid for mid, _ in hits[:limit]])
            nearest.append(hits[min(gap_rank, len(hits)) - 1][1] if hits else 0.0)
        return _Nearest(
            rankings=rankings,
            means=queries @ self._mean(encoder, size),
            nearest=np.array(nearest, dtype=np.float32),
            size=size,
            store=self,
            column=vec,
            queries=queries,
        )

    def _cosines(self, vec: str, queries: np.ndarray, rest: str, params: tuple = ()) -> tuple[list[str], np.ndarray]:
        """The namespace's live memories with a `vec` vector (narrowed or ordered by `rest`), and their
        cosines with each query (queries × memories), computed in the database."""
        scores = ", ".join(f"{vec} <#> %s" for _ in queries)  # <#> is the negative inner product
        rows = self._query(
            f"SELECT id, {scores} FROM memories WHERE namespace=%s AND archived=0 AND {vec} IS NOT NULL {rest}",
            (*queries, self.namespace, *params),
            binary=True,
        )
        matrix = -np.array([r[1:] for r in rows], dtype=np.float32).reshape(len(rows), len(queries))
        return [r[0] for r in rows], np.ascontiguousarray(matrix.T)

    def _mean(self, encoder: str, size: int) -> np.ndarray:
        """The mean live vector, read again once the count moved by MEAN_DRIFT: a few writes among tens of
        thousands move every lift by far less than one memory's cosine differs from another's."""
        cached = self._means.get(encoder)
        if cached is None or abs(cached[0] - size) > MEAN_DRIFT * size:
            vec = VECTOR_COLUMNS[encoder][0]
            row = self._query(
                f"SELECT avg({vec}) FROM memories WHERE namespace=%s AND archived=0", (self.namespace,), binary=True
            )[0]
            mean = _array(row[0]) if row[0] is not None else np.zeros(SPECS[encoder].dim, dtype=np.float32)
            cached = self._means[encoder] = (size, mean)
        return cached[1]

    def _index_ready(self, column: str) -> bool:
        """Whether this namespace's HNSW index on `column` is built; if not, it is built now in the background
        (CREATE INDEX CONCURRENTLY: writes go on) while recall scores exactly, as before it."""
        name = _index_name(column, self.namespace)
        if name in self._ready:
            return True
        valid = self._query(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s", (name,)
        )
        if valid and valid[0][0]:
            self._ready.add(name)  # an index once built stays: the catalogue is not asked again
            return True
        with self._holding:
            if name in self._indexing:
                return False
            self._indexing.add(name)
        threading.Thread(target=self._build_index, args=(column, name, bool(valid)), daemon=True).start()
        return False

    def _build_index(self, column: str, name: str, invalid: bool) -> None:
        sql = self._psycopg.sql
        try:
            with self._psycopg.connect(self.url, autocommit=True) as db:
                if invalid:  # a build that was interrupted leaves an invalid index behind
                    db.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
                db.execute("SET maintenance_work_mem = '256MB'")
                db.execute(_index_sql(sql, column, name, self.namespace, concurrently=True))
        except self._psycopg.Error:
            pass  # another service is building it, or the database went away: the next recall looks again
        finally:
            with self._holding:
                self._indexing.discard(name)

    def beside(self, namespace: str) -> "PostgresStore":
        """Another namespace on this store's pool: a service answering many people holds one pool, not a
        connection a person (PostgreSQL allows 100 by default). Its holds lock their own namespace; it never
        closes the pool (the first store does)."""
        return PostgresStore(self.url, namespace, share=self)

    def close(self) -> None:
        if self._owner:
            self._pool.close()


@dataclass
class _Shape:
    total: int  # memories, archived ones too (keyword search reads them all)
    average_length: float
    active: int  # memories not archived
    vectors: dict[str, int]  # encoder → active memories with its vector


@dataclass
class _Nearest(VectorHits):
    """Hits from a namespace's HNSW index: the candidates' cosines are read exactly when asked for."""

    store: PostgresStore
    column: str
    queries: np.ndarray

    def at(self, ids: list[str]) -> tuple[list[str], np.ndarray]:
        return self.store._cosines(self.column, self.queries, "AND id = ANY(%s)", (ids,))
