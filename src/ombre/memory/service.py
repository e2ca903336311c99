"""The memory service: one object the CLI, HTTP and MCP adapters share (store + embedder + settings)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from typing import Callable

from ..errors import MemoryInputError
from ..files import replace_atomic
from ..settings import Settings
from .arbitration import Verdict
from .breath import BreathRequest, BreathResult, breath
from .embed import E5Embedder, Embedder
from .hold import HoldRequest, HoldResult, enrich_pending, hold
from .model import Memory, iso, now_utc
from .segment import document
from .sqlite_store import SQLiteStore
from .store import MemoryStore


class MemoryService:
    def __init__(self, settings: Settings, store: MemoryStore | None = None, embedder: Embedder | None = None,
                 use_vectors: bool | None = None) -> None:
        self.settings = settings
        self.store = store or SQLiteStore(settings.memory_db)
        self._embedder = embedder
        self._use_vectors = settings.use_vectors if use_vectors is None else use_vectors  # OMBRE_VECTORS
        self.embedder_error: str | None = None
        # commitment arbitration, attached by the write layer (write/commitment_arbitrate.open_service)
        self.arbitrate: Callable[[Memory], Verdict] | None = None

    @property
    def embedder(self) -> Embedder | None:
        """Loaded on first use; a model that cannot load degrades recall to keywords, never fails it."""
        if self._embedder is None and self._use_vectors and self.embedder_error is None:
            try:
                self._embedder = E5Embedder()
            except Exception as exc:  # noqa: BLE001
                self.embedder_error = f"embedding model unavailable: {exc}"
        return self._embedder

    def warm(self) -> None:
        """Load the model and the vector matrix now, so the first turn's recall is not the slow one."""
        if self.embedder is not None:
            try:
                self.embedder.query("预热")
                enrich_pending(self.store, self.embedder)  # memories written while the model was away
            except Exception as exc:  # noqa: BLE001 — a broken model degrades recall, it does not stop serving
                self.embedder_error = f"embedding model unavailable: {exc}"
        self.store.vectors()

    def hold(self, req: HoldRequest, now: dt.datetime | None = None) -> HoldResult:
        s = self.settings
        return hold(self.store, req, embedder=self.embedder, max_chars=s.max_content_chars,
                    extra_types=s.extra_types, auto_daily=s.auto_hold_daily, max_pinned=s.max_pinned,
                    max_10=s.max_importance_10, max_9=s.max_importance_9, now=now, arbitrate=self.arbitrate)

    def breath(self, req: BreathRequest, now: dt.datetime | None = None, touch: bool = True,
               query_chars: int | None = None) -> BreathResult:
        result = breath(self.store, req, embedder=self.embedder, now=now, touch=touch, query_chars=query_chars)
        if self.embedder_error:
            result.degraded.append(self.embedder_error)
        return result

    def get(self, memory_id: str) -> Memory:
        m = self.store.get(memory_id)
        if m is None:
            raise MemoryInputError(f"no memory with id {memory_id!r}", hint="list ids with `ombre memories list`")
        return m

    def history(self, memory_id: str) -> dict:
        """A memory's trace and the chain of memories that replaced it, newest last (`memories trace`)."""
        m = self.get(memory_id)
        chain, seen, nxt = [], {m.id}, m.superseded_by
        while nxt and nxt not in seen:
            seen.add(nxt)
            successor = self.store.get(nxt)
            if successor is None:
                break
            chain.append(successor.to_dict())
            nxt = successor.superseded_by
        return {"memory": m.to_dict(), "current": m.current, "replaced_by": chain, "trace": m.trace}

    def set_flag(self, memory_id: str, *, pinned: bool | None = None, archived: bool | None = None,
                 force: bool = False) -> Memory:
        m = self.get(memory_id)
        if archived and m.is_commitment and not force:
            raise MemoryInputError(f"{memory_id} is a commitment (承诺/约定): commitments are not archived",
                                   hint="pass --force if the person really withdrew it")
        if pinned is not None:
            m.pinned = pinned
        if archived is not None:
            m.archived = archived
            if not archived:
                m.last_active = iso(now_utc())  # a restored memory must not sink straight back
        self.store.update(m)
        return m

    def export(self, path: Path) -> int:
        memories = self.store.list(archived=None)
        lines = (json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in reversed(memories))
        replace_atomic(path, "".join(lines).encode("utf-8"))
        return len(memories)

    def import_(self, path: Path) -> tuple[int, int]:
        """Add memories from an export (JSON lines); ids already present are skipped."""
        added = skipped = 0
        rows = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(Memory.from_dict(json.loads(line)))
            except (ValueError, TypeError) as exc:
                raise MemoryInputError(f"{path}:{n}: not a memory: {exc}", hint="nothing was imported") from None
        present = self.store.get_many([m.id for m in rows])
        fresh = []
        for m in rows:
            if m.id in present:
                skipped += 1
                continue
            fresh.append((m, document(" ".join([m.title, m.content, " ".join(m.tags)])), None))
        self.store.add_many(fresh)  # one transaction: a bad file imports nothing, not half
        added = len(fresh)
        if self.embedder is not None:
            enrich_pending(self.store, self.embedder)
        return added, skipped

    def health(self) -> dict:
        try:
            total = self.store.count()
        except Exception as exc:  # noqa: BLE001
            return {"status": "degraded", "reason": f"store unavailable: {exc}"}
        if self.embedder is None and self.embedder_error:
            return {"status": "degraded", "reason": self.embedder_error, "memories": total}
        return {"status": "ok", "memories": total}

    def close(self) -> None:
        self.store.close()

