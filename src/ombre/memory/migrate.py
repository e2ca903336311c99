"""`ombre memories migrate --to postgresql://…`: a SQLite store copied into PostgreSQL.

The source is opened read-only (never migrated, never written); the copy — memories with their vectors,
traces and evidence, keyword terms, the gate log, cursors and other meta rows — lands in one transaction, into
namespaces of the target that must be empty; then both sides are counted and checksummed, and a mismatch says
so. Several people's stores join one database one by one: each lands under a name of its own (`--as`).
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
    namespaces: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def _checksum(rows: list[tuple]) -> str:
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r[0]):
        digest.update(json.dumps(row, ensure_ascii=False, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def _read_source(path: Path, only: str | None):
    if not path.is_file():
        raise UsageError(f"no memory database at {path}", hint="check OMBRE_HOME")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        done = {r[0] for r in db.execute("SELECT name FROM _migrations")}
        missing = [m.__name__ for m in migrations.MIGRATIONS if m.__name__ not in done]
        if missing:
            raise UsageError(
                f"{path} is an older store (missing {', '.join(missing)})",
                hint="open it once with this ombre (e.g. `ombre memories list`), then migrate",
            )
        vec_columns = [vec for vec, _ in VECTOR_COLUMNS.values()]
        keep = " WHERE namespace = ?" if only else ""
        args = (only,) if only else ()
        rows = db.execute(
            f"SELECT namespace, id, {', '.join(FIELDS)}, {', '.join(vec_columns)} FROM memories{keep}", args
        ).fetchall()
        terms = dict((r[0], (r[1], r[2])) for r in db.execute("SELECT memory_id, words, grams FROM memories_fts"))
        gate = db.execute(
            "SELECT namespace, at, day, source, decision, reasons, content, memory_id FROM gate_log"
            f"{keep} ORDER BY seq",
            args,
        ).fetchall()
        meta = db.execute(f"SELECT namespace, key, value FROM meta{keep}", args).fetchall()
        tokens = db.execute(f"SELECT token_sha256, namespace, created FROM namespaces{keep}", args).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}", hint="check the file with `ombre doctor`") from exc
    finally:
        db.close()
    return rows, terms, gate, meta, tokens


def migrate(source: Path, target_url: str, only: str | None = None, rename: str | None = None) -> MigrateReport:
    """Copy every namespace of the SQLite store (or only `only`) into PostgreSQL, where those namespaces must
    still be empty; with `rename`, the store's one namespace lands under that name."""
    rows, terms, gate, meta, tokens = _read_source(source, only)
    if rename is not None:
        found = {r[0] for r in rows} | {g[0] for g in gate} | {m[0] for m in meta}
        if len(found) > 1:
            raise UsageError(
                f"this store holds {len(found)} namespaces ({', '.join(sorted(found))}); --as renames one",
                hint="add --namespace NAME to pick the one to copy",
            )
        rows = [(rename, *r[1:]) for r in rows]
        gate = [(rename, *g[1:]) for g in gate]
        meta = [(rename, *m[1:]) for m in meta]
        tokens = [(t[0], rename, t[2]) for t in tokens]
    keys = list(VECTOR_COLUMNS)
    batches: dict[str, tuple[list, list, dict]] = {}
    for row in rows:
        m = row_to_memory(row[1 : 2 + len(FIELDS)])
        blobs = row[2 + len(FIELDS) :]
        vectors = {k: np.frombuffer(b, dtype=np.float32) for k, b in zip(keys, blobs) if b is not None}
        batches.setdefault(row[0], ([], [], {}))[0].append((m, terms.get(m.id, ("", "")), vectors or None))
    for g in gate:
        batches.setdefault(g[0], ([], [], {}))[1].append(
            GateEntry(g[1], g[2], g[3], g[4], json.loads(g[5]), g[6], g[7])
        )
    for namespace, key, value in meta:
        if key != "vectors_version":
            batches.setdefault(namespace, ([], [], {}))[2][key] = value
    target = PostgresStore(target_url)
    try:
        taken = target.occupied(sorted(batches))
        if taken:
            raise UsageError(
                f"the PostgreSQL store already holds memories of namespace {', '.join(taken)}",
                hint="nothing was copied; copy this store under another name with --as NAME, or into an empty database",
            )
        target.load(batches, tokens)
        problems, vectors_total = [], {k: 0 for k in keys}
        for namespace, (copied, gate_rows, _) in sorted(batches.items()):
            problems += _verify(target.url, namespace, copied, gate_rows, keys, vectors_total)
        if problems:
            raise StoreError(
                "the copy does not match the source: " + "; ".join(problems),
                hint="the source is untouched; empty the target database and try again",
            )
        checksum = _checksum([(ns, m.id, *row_values(m)) for ns, b in batches.items() for m, _, _ in b[0]])
        return MigrateReport(
            str(source),
            redact(target.url),
            sum(len(b[0]) for b in batches.values()),
            vectors_total,
            len(gate),
            len(meta),
            checksum,
            sorted(batches),
        )
    finally:
        target.close()


def _verify(url: str, namespace: str, copied: list, gate: list, keys: list[str], totals: dict[str, int]) -> list[str]:
    """What differs between one namespace's source rows and what landed."""
    store = PostgresStore(url, namespace)
    try:
        problems = []
        landed = store.list(archived=None)
        if len(landed) != len(copied):
            problems.append(f"{namespace}: {len(landed)} memories landed of {len(copied)}")
        if _checksum([(m.id, *row_values(m)) for m in landed]) != _checksum(
            [(m.id, *row_values(m)) for m, _, _ in copied]
        ):
            problems.append(f"{namespace}: the memories' checksums differ")
        if len(store.gate_log(len(gate) + 1)) != len(gate):
            problems.append(f"{namespace}: the gate log did not land whole")
        for k in keys:
            index = store.vectors(k)
            expected = {m.id: v[k] for m, _, v in copied if v and k in v}
            totals[k] += len(expected)
            archived = sum(1 for m in landed if m.archived and k in m.vectors)
            if len(index) + archived != len(expected):
                problems.append(f"{namespace}: {len(index) + archived} {k} vectors landed of {len(expected)}")
            for mid, i in index.positions.items():
                want = expected.get(mid)  # None: a vector landed that was never copied
                if want is None or not np.array_equal(index.matrix[i], want):
                    problems.append(f"{namespace}: the {k} vector of {mid} differs")
                    break
        return problems
    finally:
        store.close()
