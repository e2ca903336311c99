"""What the SQLite and the PostgreSQL stores do alike, written once in SQL both speak.

A store subclasses SqlStore and names its placeholder (P), the column that orders rows as they were written
(ORDER), what a memory is read from (ROWS: its table, or on PostgreSQL the table with the recalls counted
beside it), and PLUS: SQLite's unary `+` on a column, which keeps its planner on the selective index (the
primary key, a partial index) instead of the namespace one; PostgreSQL plans by statistics and needs none.
It gives `_query` and `_write`; keyword search, vectors, the bigger writes and migrations stay its own.
"""

from __future__ import annotations

import builtins  # the store has a method named list: annotations after it name the type this way
import json
from collections import Counter

from .model import COMMITMENT_TYPES, Memory
from .rows import COLUMNS, VECTOR_COLUMNS, row_to_memory
from .store import GateEntry, Latents


class SqlStore:
    P = "?"
    ORDER = "rowid"
    PLUS = "+"
    ROWS = "memories"
    namespace: str

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        raise NotImplementedError

    def _write(self, steps: list[tuple[str, tuple]], changes_vectors: bool = True, durable: bool = True) -> None:
        """`durable=False`: a write whose loss in a crash costs nothing (an activation count) need not wait
        for the disk."""
        raise NotImplementedError

    def _in(self, values: list) -> tuple[str, tuple]:
        """`column <this>` matching any of `values`."""
        if self.P == "?":
            return f"IN ({','.join('?' * len(values))})", tuple(values)
        return "= ANY(%s)", (list(values),)

    # -- keywords -------------------------------------------------------------------------------------
    COMMON_SHARE = 0.05  # in a large store, a term in more than 5 % of memories ranks nothing
    LARGE_STORE = 2_000
    MAX_TERMS = 12  # and a long message searches by its rarest terms only: each OR term is a posting scan

    def _count_steps(self, counts: Counter[str], namespace: str | None = None) -> list[tuple[str, tuple]]:
        """term_docs upserts for a change of document counts, in one order, so two transactions counting the
        same terms take their row locks alike."""
        P = self.P
        sql = (
            f"INSERT INTO term_docs (namespace, term, docs) VALUES ({P}, {P}, {P}) "
            "ON CONFLICT (namespace, term) DO UPDATE SET docs = term_docs.docs + excluded.docs"
        )
        return [(sql, (namespace or self.namespace, term, n)) for term, n in sorted(counts.items()) if n]

    def _document_frequencies(self, terms: list[str]) -> dict[str, int]:
        match, params = self._in(terms)
        return dict(
            self._query(
                f"SELECT term, docs FROM term_docs WHERE namespace={self.P} AND term {match}", (self.namespace, *params)
            )
        )

    def _rarest(self, terms: list[str], df: dict[str, int], total: int) -> list[str]:
        """The terms a search uses: in a large store the rarest present ones (or the three least common)."""
        if total <= self.LARGE_STORE:
            return terms
        present = sorted((t for t in terms if df.get(t)), key=lambda t: df[t])
        return [t for t in present if df[t] <= self.COMMON_SHARE * total][: self.MAX_TERMS] or present[:3]

    # -- reads ----------------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory | None:
        P, plus = self.P, self.PLUS
        rows = self._query(
            f"SELECT {COLUMNS} FROM {self.ROWS} WHERE id={P} AND {plus}namespace={P}", (memory_id, self.namespace)
        )
        return row_to_memory(rows[0]) if rows else None

    def get_many(self, ids: list[str]) -> dict[str, Memory]:
        out: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            match, params = self._in(ids[start : start + 500])
            rows = self._query(
                f"SELECT {COLUMNS} FROM {self.ROWS} WHERE id {match} AND {self.PLUS}namespace={self.P}",
                (*params, self.namespace),
            )
            out.update((r[0], row_to_memory(r)) for r in rows)
        return out

    def _where(
        self,
        archived: bool | None = False,
        pinned: bool | None = None,
        type: str | None = None,
        min_importance: int | None = None,
        exclude_commitments: bool = False,
    ) -> tuple[str, tuple]:
        P = self.P
        where = [f"{self.PLUS}namespace={P}"]
        params: list[object] = [self.namespace]
        for column, value in (("archived", archived), ("pinned", pinned)):
            if value is not None:
                # with a type given, its index is the selective one
                where.append(f"{self.PLUS if type is not None else ''}{column}={P}")
                params.append(int(value))
        if type is not None:
            where.append(f"type={P}")
            params.append(type)
        if min_importance is not None:
            where.append(f"importance>={P}")
            params.append(min_importance)
        if exclude_commitments:
            match, kinds = self._in(list(COMMITMENT_TYPES))
            where.append(f"NOT (type {match})")
            params.extend(kinds)
        return " WHERE " + " AND ".join(where), tuple(params)

    def list(
        self,
        *,
        archived: bool | None = False,
        pinned: bool | None = None,
        type: str | None = None,
        limit: int | None = None,
    ) -> list[Memory]:
        where, params = self._where(archived, pinned, type)
        sql = f"SELECT {COLUMNS} FROM {self.ROWS}{where} ORDER BY created DESC, {self.ORDER} DESC"
        return [row_to_memory(r) for r in self._query(sql + (f" LIMIT {int(limit)}" if limit else ""), params)]

    def count(self, *, pinned: bool | None = None, min_importance: int | None = None) -> int:
        where, params = self._where(pinned=pinned, min_importance=min_importance)
        return self._query(f"SELECT count(*) FROM memories{where}", params)[0][0]

    def least_active(
        self, *, pinned: bool | None = None, min_importance: int | None = None, exclude_commitments: bool = True
    ) -> Memory | None:
        where, params = self._where(
            pinned=pinned, min_importance=min_importance, exclude_commitments=exclude_commitments
        )
        rows = self._query(
            f"SELECT {COLUMNS} FROM {self.ROWS}{where} ORDER BY last_active ASC, {self.ORDER} ASC LIMIT 1", params
        )
        return row_to_memory(rows[0]) if rows else None

    def on_month_days(
        self, month_days: builtins.list[str], *, created_before: str | None = None
    ) -> builtins.list[Memory]:
        """Live memories whose event date or creation falls on one of these month-days ("MM-DD"); with
        `created_before` (an ISO time), a creation counts only before it (an anniversary needs a year)."""
        if not month_days:
            return []
        P, plus = self.P, self.PLUS
        match, days = self._in(month_days)
        # the same expressions as the indexes on substr(…, 6, 5), so each side of the OR is an index lookup
        created = f"substr(created, 6, 5) {match}" + (f" AND created < {P}" if created_before else "")
        params = (*days, *days, *((created_before,) if created_before else ()), self.namespace)
        return [
            row_to_memory(r)
            for r in self._query(
                f"SELECT {COLUMNS} FROM {self.ROWS} WHERE (substr(event_date, 6, 5) {match} OR ({created})) "
                f"AND {plus}archived=0 AND superseded_by IS NULL AND {plus}namespace={P}",
                params,
            )
        ]

    def on_dates(self, dates: builtins.list[str]) -> builtins.list[Memory]:
        """Live memories whose event falls on one of these days (YYYY-MM-DD): what is due."""
        if not dates:
            return []
        plus = self.PLUS
        match, days = self._in(dates)
        return [
            row_to_memory(r)
            for r in self._query(
                f"SELECT {COLUMNS} FROM {self.ROWS} WHERE event_date {match} AND {plus}archived=0 "
                f"AND superseded_by IS NULL AND {plus}namespace={self.P} ORDER BY event_date, importance DESC",
                (*days, self.namespace),
            )
        ]

    def has_unembedded(self, encoder: str = "e5") -> bool:
        vec = VECTOR_COLUMNS[encoder][0]
        return bool(
            self._query(
                f"SELECT 1 FROM memories WHERE {vec} IS NULL AND archived=0 AND {self.PLUS}namespace={self.P} LIMIT 1",
                (self.namespace,),
            )
        )

    def unembedded_count(self, encoder: str) -> int:
        vec = VECTOR_COLUMNS[encoder][0]
        return self._query(
            f"SELECT count(*) FROM memories WHERE {vec} IS NULL AND {self.PLUS}namespace={self.P}", (self.namespace,)
        )[0][0]

    def without_vectors(self, encoder: str, limit: int) -> builtins.list[Memory]:
        vec = VECTOR_COLUMNS[encoder][0]
        return [
            row_to_memory(r)
            for r in self._query(
                f"SELECT {COLUMNS} FROM {self.ROWS} WHERE {vec} IS NULL AND {self.PLUS}namespace={self.P} "
                f"ORDER BY {self.ORDER} LIMIT {self.P}",
                (self.namespace, limit),
            )
        ]

    def gate_count(self, day: str, source: str, decisions: tuple[str, ...]) -> int:
        P = self.P
        match, params = self._in(list(decisions))
        return self._query(
            f"SELECT count(*) FROM gate_log WHERE namespace={P} AND day={P} AND source={P} AND decision {match}",
            (self.namespace, day, source, *params),
        )[0][0]

    def gate_log(self, limit: int) -> builtins.list[GateEntry]:
        rows = self._query(
            "SELECT at, day, source, decision, reasons, content, memory_id FROM gate_log "
            f"WHERE {self.PLUS}namespace={self.P} ORDER BY seq DESC LIMIT {self.P}",
            (self.namespace, limit),
        )
        return [GateEntry(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6]) for r in rows]

    def meta(self, key: str) -> str | None:
        rows = self._query(f"SELECT value FROM meta WHERE namespace={self.P} AND key={self.P}", (self.namespace, key))
        return rows[0][0] if rows else None

    def token_namespace(self, token_sha256: str) -> str | None:
        rows = self._query(f"SELECT namespace FROM namespaces WHERE token_sha256={self.P}", (token_sha256,))
        return rows[0][0] if rows else None

    def namespaces(self) -> builtins.list[tuple[str, int, int]]:
        """Every namespace with its memory and token counts."""
        rows = self._query(
            "SELECT n, sum(m), sum(t) FROM (SELECT namespace AS n, count(*) AS m, 0 AS t FROM memories "
            "GROUP BY namespace UNION ALL SELECT namespace, 0, count(*) FROM namespaces GROUP BY "
            "namespace) AS x GROUP BY n ORDER BY n"
        )
        return [(r[0], int(r[1]), int(r[2])) for r in rows]

    # -- small writes ---------------------------------------------------------------------------------
    # -- latent terms (embed.E5Embedder.latents) ------------------------------------------------------
    # One row per memory and latent term it holds, and a marker row (DONE) for every memory whose terms were
    # computed, those with none included (text not in Latin script): the marker is the background's to-do list.
    DONE = -1

    def set_latents(self, rows: builtins.list[tuple[str, Latents]]) -> None:
        """Store some memories' latent terms (replacing any they had), in one transaction."""
        P = self.P
        steps: builtins.list[tuple[str, tuple]] = []
        for mid, (idx, val) in rows:
            steps.append((f"DELETE FROM memory_latents WHERE namespace={P} AND id={P}", (self.namespace, mid)))
            cells = [(self.DONE, 0.0), *zip(map(int, idx), map(float, val))]
            steps.append(
                (
                    "INSERT INTO memory_latents (namespace, id, latent, weight) VALUES "
                    + ", ".join(f"({P}, {P}, {P}, {P})" for _ in cells),
                    tuple(x for latent, weight in cells for x in (self.namespace, mid, latent, weight)),
                )
            )
        self._write(steps, changes_vectors=False)

    # A term's heaviest LATENT_POSTINGS postings are read, no more: the sum is exact in a store where no term
    # has more, and in a large one a memory far down a common term's list gains too little from it to
    # matter (at 10k English memories a question's 64 terms held 110k postings, 5 s summed by a join).
    LATENT_POSTINGS = 256

    def latent_search(self, latents: Latents, limit: int) -> builtins.list[tuple[str, float]]:
        """The memories whose latent terms best meet the query's: the sum of their weights' products (over
        each term's heaviest postings), best first; archived memories left out."""
        idx, val = latents
        if not len(idx):
            return []
        P = self.P
        arms = " UNION ALL ".join(
            f"SELECT * FROM (SELECT id, weight * {P} AS s FROM memory_latents WHERE namespace={P} AND latent={P} "
            f"ORDER BY weight DESC LIMIT {self.LATENT_POSTINGS}) AS a{i}"
            for i in range(len(idx))
        )
        # Archived memories are left out by their ids (few, read from an index), not by a join: a join reads
        # every hit's row, and in SQLite a memory's row holds its vectors (the join was 2/3 of a 10k search).
        rows = self._query(
            f"SELECT id, SUM(s) AS score FROM ({arms}) AS hits WHERE id NOT IN (SELECT id FROM memories "
            f"WHERE namespace={P} AND archived=1) GROUP BY id ORDER BY score DESC, id LIMIT {P}",
            (
                *(x for i, w in zip(map(int, idx), map(float, val)) for x in (w, self.namespace, i)),
                self.namespace,
                limit,
            ),
        )
        return [(r[0], float(r[1])) for r in rows]

    def _without_latents(self) -> str:
        return (
            f"FROM {self.ROWS} WHERE archived=0 AND {self.PLUS}namespace={self.P} AND NOT EXISTS (SELECT 1 FROM "
            f"memory_latents l WHERE l.namespace=memories.namespace AND l.latent={self.DONE} AND l.weight=0 "
            "AND l.id=memories.id)"
        )

    def without_latents(self, limit: int) -> builtins.list[Memory]:
        return [
            row_to_memory(r)
            for r in self._query(
                f"SELECT {COLUMNS} {self._without_latents()} ORDER BY {self.ORDER} LIMIT {self.P}",
                (self.namespace, limit),
            )
        ]

    def latents_pending(self) -> int:
        return self._query(f"SELECT count(*) {self._without_latents()}", (self.namespace,))[0][0]

    def _gate_step(self, entry: GateEntry, namespace: str | None = None) -> tuple[str, tuple]:
        P = self.P
        return (
            f"INSERT INTO gate_log (namespace, at, day, source, decision, reasons, memory_id, content) "
            f"VALUES ({P}, {P}, {P}, {P}, {P}, {P}, {P}, {P})",
            (
                namespace or self.namespace,
                entry.at,
                entry.day,
                entry.source,
                entry.decision,
                json.dumps(entry.reasons, ensure_ascii=False),
                entry.memory_id,
                entry.content[:500],
            ),
        )

    def _meta_step(self, key: str, value: str, namespace: str | None = None) -> tuple[str, tuple]:
        P = self.P
        return (
            f"INSERT INTO meta (namespace, key, value) VALUES ({P}, {P}, {P}) "
            "ON CONFLICT (namespace, key) DO UPDATE SET value=excluded.value",
            (namespace or self.namespace, key, value),
        )

    def log_gate(self, entry: GateEntry) -> None:
        self._write([self._gate_step(entry)], changes_vectors=False)

    def set_meta(self, key: str, value: str) -> None:
        self._write([self._meta_step(key, value)], changes_vectors=False)

    def touch(self, ids: builtins.list[str], at: str) -> None:
        if ids:
            # in one order, so two services touching the same memories take their row locks alike
            self._write(
                [
                    (
                        f"UPDATE memories SET activation_count = activation_count + 1, last_active={self.P} "
                        f"WHERE id={self.P} AND {self.PLUS}namespace={self.P}",
                        (at, i, self.namespace),
                    )
                    for i in sorted(ids)
                ],
                changes_vectors=False,
                durable=False,  # every recall touches its cards: at 100k memories the flush was 10 ms of it
            )

    def add_token(self, token_sha256: str, namespace: str, created: str) -> None:
        """A namespace's bearer token (its digest): the token table is the one thing namespaces share."""
        P = self.P
        self._write(
            [
                (
                    f"INSERT INTO namespaces (token_sha256, namespace, created) VALUES ({P}, {P}, {P})",
                    (token_sha256, namespace, created),
                )
            ],
            changes_vectors=False,
        )
