"""Schema history, one small named function per step, applied names recorded in `_migrations`.

Never edit an applied migration: add the next one.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from typing import Callable

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []
migration = MIGRATIONS.append


@migration
def m001_memories(db: sqlite3.Connection) -> None:
    db.execute("""
        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            type TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            importance INTEGER NOT NULL CHECK (importance BETWEEN 1 AND 10),
            pinned INTEGER NOT NULL DEFAULT 0,
            valence REAL NOT NULL DEFAULT 0.5,
            arousal REAL NOT NULL DEFAULT 0.3,
            domain TEXT NOT NULL DEFAULT '',
            event_date TEXT,
            created TEXT NOT NULL,
            last_active TEXT NOT NULL,
            activation_count INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL,
            archived INTEGER NOT NULL DEFAULT 0,
            from_session TEXT,
            evidence_date TEXT,
            quote TEXT,
            embedding BLOB,
            embed_model TEXT
        )""")
    db.execute("CREATE INDEX memories_active ON memories(archived, pinned, importance)")
    db.execute("CREATE VIRTUAL TABLE memories_fts USING fts5(words, grams, memory_id UNINDEXED)")


@migration
def m002_gate_log(db: sqlite3.Connection) -> None:
    db.execute("""
        CREATE TABLE gate_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at TEXT NOT NULL,
            day TEXT NOT NULL,
            source TEXT NOT NULL,
            decision TEXT NOT NULL,
            reasons TEXT NOT NULL,
            memory_id TEXT,
            content TEXT NOT NULL
        )""")
    db.execute("CREATE INDEX gate_log_day ON gate_log(day, source, decision)")


@migration
def m003_meta(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


@migration
def m004_unembedded_index(db: sqlite3.Connection) -> None:
    # breath asks "is any memory still without a vector?" on every call: answer it from a tiny index.
    db.execute("CREATE INDEX memories_unembedded ON memories(archived) WHERE embedding IS NULL")


@migration
def m005_fts_rank_and_vocab(db: sqlite3.Connection) -> None:
    # `rank` carries the column weights so ORDER BY rank uses FTS5's own fast path: a bigram match counts
    # a quarter of a word match (bigrams rescue queries whose words segment differently from the
    # memory's without drowning exact words). The vocabulary table tells how many memories hold a term,
    # so recall can skip terms that match nearly all.
    db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', 'bm25(1.0, 0.25)')")
    db.execute("CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row')")


@migration
def m006_event_date_index(db: sqlite3.Connection) -> None:
    # every injected turn asks what is due today or tomorrow
    db.execute("CREATE INDEX memories_event_date ON memories(event_date) WHERE event_date IS NOT NULL")


@migration
def m007_arbitration(db: sqlite3.Connection) -> None:
    # commitment arbitration: who replaced a memory, the situation it holds in, what it contradicts, its history
    db.execute("ALTER TABLE memories ADD COLUMN superseded_by TEXT")
    db.execute("ALTER TABLE memories ADD COLUMN situation TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE memories ADD COLUMN conflicts TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE memories ADD COLUMN trace TEXT NOT NULL DEFAULT '[]'")


@migration
def m008_type_and_date_indexes(db: sqlite3.Connection) -> None:
    # every injected turn asks for the latest 会话交接 and for what is due; both must not scan the store
    db.execute("DROP INDEX memories_event_date")
    db.execute("CREATE INDEX memories_event_date ON memories(event_date)")
    db.execute("CREATE INDEX memories_type_created ON memories(type, created)")


@migration
def m009_term_docs(db: sqlite3.Connection) -> None:
    # How many memories hold each term, kept beside the index in the same transactions. fts5vocab counted a
    # term by reading its whole posting list (10–25 ms a search at 100k memories), and the search needs the
    # counts only to drop the terms nearly every memory holds.
    db.execute("CREATE TABLE term_docs (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID")
    counts: Counter[str] = Counter()
    for words, grams in db.execute("SELECT words, grams FROM memories_fts"):
        counts.update(set(f"{words} {grams}".split()))
    db.executemany("INSERT INTO term_docs (term, docs) VALUES (?, ?)", counts.items())
    db.execute("DROP TABLE IF EXISTS memories_vocab")


@migration
def m010_second_encoder_and_month_days(db: sqlite3.Connection) -> None:
    # A second, fast encoder (USE, memory/embed.py) beside e5: its vectors in their own columns, filled for
    # existing memories in the background by `ombre serve` (service.embed_pending), resumably, since the
    # empty column is the to-do list.
    db.execute("ALTER TABLE memories ADD COLUMN embedding_use BLOB")
    db.execute("ALTER TABLE memories ADD COLUMN use_model TEXT")
    db.execute("CREATE INDEX memories_unembedded_use ON memories(archived) WHERE embedding_use IS NULL")
    # Birthdays and anniversaries recur by month and day: every breath and every turn asks which fall on
    # today or tomorrow, so the month-day of the event and of the creation are indexed.
    db.execute("CREATE INDEX memories_event_md ON memories(substr(event_date, 6, 5))")
    db.execute("CREATE INDEX memories_created_md ON memories(substr(created, 6, 5))")


@migration
def m011_earlier_quotes(db: sqlite3.Connection) -> None:
    # a merged memory keeps the quotes of what it merged (Evidence.earlier)
    db.execute("ALTER TABLE memories ADD COLUMN earlier_quotes TEXT NOT NULL DEFAULT '[]'")


@migration
def m012_namespaces(db: sqlite3.Connection) -> None:
    """Every row belongs to a namespace (one person or companion); what is there already, to 'default'."""
    db.execute("ALTER TABLE memories ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default'")
    db.execute("CREATE INDEX memories_namespace ON memories(namespace, archived)")
    db.execute("ALTER TABLE gate_log ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default'")
    db.execute("DROP INDEX gate_log_day")
    db.execute("CREATE INDEX gate_log_day ON gate_log(namespace, day, source, decision)")
    db.execute(
        "CREATE TABLE meta_ns (namespace TEXT NOT NULL DEFAULT 'default', key TEXT NOT NULL, "
        "value TEXT NOT NULL, PRIMARY KEY (namespace, key))"
    )
    db.execute("INSERT INTO meta_ns (key, value) SELECT key, value FROM meta")
    db.execute("DROP TABLE meta")
    db.execute("ALTER TABLE meta_ns RENAME TO meta")
    db.execute(
        "CREATE TABLE term_docs_ns (namespace TEXT NOT NULL DEFAULT 'default', term TEXT NOT NULL, "
        "docs INTEGER NOT NULL, PRIMARY KEY (namespace, term)) WITHOUT ROWID"
    )
    db.execute("INSERT INTO term_docs_ns (term, docs) SELECT term, docs FROM term_docs")
    db.execute("DROP TABLE term_docs")
    db.execute("ALTER TABLE term_docs_ns RENAME TO term_docs")
    # bearer tokens of `ombre namespace add`, stored as their SHA-256 only
    db.execute(
        "CREATE TABLE namespaces (token_sha256 TEXT PRIMARY KEY, namespace TEXT NOT NULL, created TEXT NOT NULL)"
    )


@migration
def m013_english_keys(db: sqlite3.Connection) -> None:
    """English words are indexed as their stems, without function words (segment.keys)."""
    _reindex_keywords(db)


@migration
def m014_english_word_parts(db: sqlite3.Connection) -> None:
    """A Latin word joined by a hyphen or a dot is indexed as its parts (segment.keys: mid-June → mid, june)."""
    _reindex_keywords(db)


@migration
def m015_latent_terms(db: sqlite3.Connection) -> None:
    """English memories' latent terms (embed.E5Embedder.latents), one row per memory and term, and a marker row
    per memory whose terms were computed (SqlStore.DONE); the service fills them in the background. Keyed by
    weight within a term: a search reads each term's heaviest postings only (SqlStore.latent_search)."""
    db.execute(
        # the columns in the key's order: SQLite 3.40's quick_check misreads a WITHOUT ROWID table whose key
        # is in another order (it reported "NULL value in memory_latents.id" on a sound file)
        "CREATE TABLE memory_latents (namespace TEXT NOT NULL, latent INTEGER NOT NULL, weight REAL NOT NULL, "
        "id TEXT NOT NULL, PRIMARY KEY (namespace, latent, weight, id)) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX memory_latents_id ON memory_latents(namespace, id)")


@migration
def m016_archived_ids(db: sqlite3.Connection) -> None:
    """A namespace's archived ids read from an index alone (SqlStore.latent_search leaves them out by id; a
    row of memories holds its vectors and is slow to visit). Same prefix as the index it replaces."""
    db.execute("DROP INDEX memories_namespace")
    db.execute("CREATE INDEX memories_namespace ON memories(namespace, archived, id)")


def _reindex_keywords(db: sqlite3.Connection) -> None:
    """Every memory's keyword columns made again from its text, and the term counts with them (a memory
    whose terms did not change is not rewritten)."""
    rows = db.execute(
        "SELECT f.rowid, f.words, f.grams, m.title, m.content, m.tags, m.namespace "
        "FROM memories_fts f JOIN memories m ON m.id = f.memory_id"
    ).fetchall()
    counts: Counter[tuple[str, str]] = Counter()
    from .rows import document_of

    for rowid, old_words, old_grams, title, content, tags, namespace in rows:
        words, grams = document_of(title, content, tags)
        if (words, grams) != (old_words, old_grams):
            db.execute("UPDATE memories_fts SET words = ?, grams = ? WHERE rowid = ?", (words, grams, rowid))
        counts.update((namespace, t) for t in set(f"{words} {grams}".split()))
    db.execute("DELETE FROM term_docs")
    db.executemany(
        "INSERT INTO term_docs (namespace, term, docs) VALUES (?, ?, ?)",
        [(ns, term, n) for (ns, term), n in counts.items()],
    )


def apply(db: sqlite3.Connection) -> list[str]:
    """Apply the steps not yet recorded. Each step is one transaction taken with the write lock at once
    (BEGIN IMMEDIATE; the connection is in autocommit mode) and checks again under that lock whether another
    process applied it meanwhile, so two processes opening a new store together (`ombre serve` and
    `ombre hold`) neither fail nor apply a step twice."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    applied = []
    for step in MIGRATIONS:
        if step.__name__ in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (step.__name__,)).fetchone() is None:
                step(db)
                db.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", (step.__name__,))
                applied.append(step.__name__)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    return applied
