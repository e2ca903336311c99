"""`ombre memories migrate --to postgresql://…` (issue #19 item 3): a SQLite store copied into PostgreSQL.

The source is opened read-only (never migrated, never written); the copy — memories with their vectors,
traces and evidence, keyword terms, the gate log, cursors and other meta rows — lands in one transaction, into
a target that must be empty; then both sides are counted and checksummed, and a mismatch says so.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import StoreError, UsageError
from ..settings import redact
from . import migrations
from .postgres_store import PostgresStore
from .rows import FIELDS, VECTOR_COLUMNS, row_to_memory, row_values
from .store import GateEntry


@dataclass
class MigrateReport:
    source: str
    target: str
    memories: int
    vectors: dict[str, int]
    gate_log: int
    meta: int
    checksum: str  # of the memories' rows, equal on both sides

    def to_dict(self) -> dict:
        return asdict(self)


def _checksum(rows: list[tuple]) -> str:
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r[0]):
        digest.update(json.dumps(row, ensure_ascii=False, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def _read_source(path: Path):
    if not path.is_file():
        raise UsageError(f"no memory database at {path}", hint="check OMBRE_HOME")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        done = {r[0] for r in db.execute("SELECT name FROM _migrations")}
        missing = [m.__name__ for m in migrations.MIGRATIONS if m.__name__ not in done]
        if missing:
            raise UsageError(f"{path} is an older store (missing {', '.join(missing)})",
                             hint="open it once with this ombre (e.g. `ombre memories list`), then migrate")
        vec_columns = [vec for vec, _ in VECTOR_COLUMNS.values()]
        rows = db.execute(f"SELECT id, {', '.join(FIELDS)}, {', '.join(vec_columns)} FROM memories").fetchall()
        terms = dict((r[0], (r[1], r[2])) for r in db.execute("SELECT memory_id, words, grams FROM memories_fts"))
        gate = db.execute("SELECT at, day, source, decision, reasons, content, memory_id FROM gate_log "
                          "ORDER BY seq").fetchall()
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}", hint="check the file with `ombre doctor`") from exc
    finally:
        db.close()
    return rows, terms, gate, meta


def migrate(source: Path, target_url: str) -> MigrateReport:
    rows, terms, gate, meta = _read_source(source)
    target = PostgresStore(target_url)
    try:
        if target.count(pinned=None) or target.list(archived=True, limit=1) or target.gate_log(1):
            raise UsageError("the PostgreSQL store already holds memories", hint="migrate into an empty database; "
                             "nothing was copied")
        keys = list(VECTOR_COLUMNS)
        copied = []
        for row in rows:
            m = row_to_memory(row[: 1 + len(FIELDS)])
            blobs = row[1 + len(FIELDS):]
            vectors = {k: np.frombuffer(b, dtype=np.float32) for k, b in zip(keys, blobs) if b is not None}
            copied.append((m, terms.get(m.id, ("", "")), vectors or None))
        target.load(copied, [GateEntry(g[0], g[1], g[2], g[3], json.loads(g[4]), g[5], g[6]) for g in gate],
                    {k: v for k, v in meta.items() if k != "vectors_version"})
        source_sum = _checksum([(m.id, *row_values(m)) for m, _, _ in copied])
        landed = target.list(archived=None)
        target_sum = _checksum([(m.id, *row_values(m)) for m in landed])
        counts = {k: sum(1 for _, _, v in copied if v and k in v) for k in keys}
        landed_vectors = {k: len(target.vectors(k)) + sum(1 for m in landed if m.archived and k in m.vectors)
                          for k in keys}
        problems = []
        if len(landed) != len(copied):
            problems.append(f"{len(landed)} memories landed of {len(copied)}")
        if target_sum != source_sum:
            problems.append("the memories' checksums differ")
        if landed_vectors != counts:
            problems.append(f"vectors {landed_vectors} landed of {counts}")
        if len(target.gate_log(len(gate) + 1)) != len(gate):
            problems.append("the gate log did not land whole")
        for k in keys:
            index = target.vectors(k)
            for m, _, v in copied:
                if v and k in v and m.id in index.positions and not np.array_equal(index.matrix[index.positions[m.id]],
                                                                                   v[k]):
                    problems.append(f"the {k} vector of {m.id} differs")
                    break
        if problems:
            raise StoreError("the copy does not match the source: " + "; ".join(problems),
                             hint="the source is untouched; empty the target database and try again")
        return MigrateReport(str(source), redact(target.url), len(copied), counts, len(gate), len(meta), source_sum)
    finally:
        target.close()
