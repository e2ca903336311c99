"""The memory service: one object the CLI, HTTP and MCP adapters share (store + embedder + settings)."""
from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path
from typing import Callable, Mapping

from .. import wire
from ..errors import MemoryInputError
from ..files import replace_atomic
from ..settings import Settings
from .arbitration import Verdict, clear_conflicts
from .breath import BreathRequest, BreathResult, breath
from .embed import LOADERS, ORDER, Embedder
from .hold import HoldRequest, HoldResult, enrich_pending, hold
from .model import Memory, iso, now_utc
from .segment import document
from .sqlite_store import SQLiteStore
from .store import MemoryStore


class MemoryService:
    def __init__(self, settings: Settings, store: MemoryStore | None = None, embedder: Embedder | None = None,
                 encoders: Mapping[str, Embedder] | None = None) -> None:
        """`encoders` fixes exactly which encoders recall uses; otherwise settings.encoders (OMBRE_ENCODERS,
        OMBRE_VECTORS) name them and each loads on first use, `embedder` standing in for e5."""
        self.settings = settings
        self.store = store or SQLiteStore(settings.memory_db)
        self._fixed = encoders is not None
        self._encoders: dict[str, Embedder] = dict(encoders or {})
        if embedder is not None and not self._fixed:
            self._encoders["e5"] = embedder
        self.encoder_errors: dict[str, str] = {}
        self._load_lock = threading.Lock()
        # background embedding (embed_pending): per encoder, how many memories still had no vector, and
        # how many have been done since
        self.embedding: dict[str, dict] = {}
        # commitment arbitration, attached by the write layer (write/commitment_arbitrate.open_service)
        self.arbitrate: Callable[[Memory], Verdict] | None = None

    @property
    def encoders(self) -> dict[str, Embedder]:
        """The encoders recall and hold use, each loaded on first use; one that cannot load is left out
        (recall goes on with the other and with keywords) and its error is kept for /health."""
        if not self._fixed:
            wanted = self.settings.encoders if self.settings.use_vectors else ()
            for key in wanted:
                if key in self._encoders or key in self.encoder_errors or key not in LOADERS:
                    continue
                with self._load_lock:  # the server's threads must not load a model twice
                    if key in self._encoders or key in self.encoder_errors:
                        continue
                    try:
                        self._encoders[key] = LOADERS[key]()
                    except Exception as exc:  # noqa: BLE001
                        self.encoder_errors[key] = f"{key} model unavailable: {exc}"
        return {k: self._encoders[k] for k in ORDER if k in self._encoders}

    @property
    def embedder(self) -> Embedder | None:
        """The e5 encoder (arbitration's thresholds are set for its similarities), if it is in use."""
        return self.encoders.get("e5")

    def warm(self) -> None:
        """Load the models and the vector matrices now, so the first turn's recall is not the slow one."""
        for key, encoder in list(self.encoders.items()):
            try:
                encoder.query("预热")
            except Exception as exc:  # noqa: BLE001 — a broken model degrades recall, it does not stop serving
                self.encoder_errors[key] = f"{key} model unavailable: {exc}"
                self._encoders.pop(key, None)
            else:
                self.store.vectors(key)

    def embed_pending(self, batch: int = 64) -> int:
        """Give every memory a vector from every encoder in use: memories written while a model was away,
        and a whole existing store when an encoder is added (`ombre serve` runs this in the background).
        Resumable: the memories without a vector are the to-do list. Progress is in `self.embedding`."""
        encoders = self.encoders
        for key in encoders:
            self.embedding[key] = {"todo": self.store.unembedded_count(key), "done": 0}

        def progress(key: str, n: int) -> None:
            self.embedding[key]["done"] += n

        return enrich_pending(self.store, encoders, batch=batch, progress=progress)

    def hold(self, req: HoldRequest, now: dt.datetime | None = None) -> HoldResult:
        s = self.settings
        return hold(self.store, req, encoders=self.encoders, max_chars=s.max_content_chars,
                    extra_types=s.extra_types, auto_daily=s.auto_hold_daily, max_pinned=s.max_pinned,
                    max_10=s.max_importance_10, max_9=s.max_importance_9, now=now, arbitrate=self.arbitrate)

    def breath(self, req: BreathRequest, now: dt.datetime | None = None, touch: bool = True,
               deadline: float | None = None) -> BreathResult:
        wire.check([req.query, req.context, req.valence, req.arousal], "the breath request")
        result = breath(self.store, req, encoders=self.encoders, now=now, touch=touch, deadline=deadline)
        result.degraded += list(self.encoder_errors.values())
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
            if archived and not m.archived:
                clear_conflicts(self.store, m, "已归档", now_utc())
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
        enrich_pending(self.store, self.encoders)
        return added, skipped

    def health(self) -> dict:
        try:
            total = self.store.count()
        except Exception as exc:  # noqa: BLE001
            return {"status": "degraded", "reason": f"store unavailable: {exc}"}
        from importlib.metadata import PackageNotFoundError, version

        from . import backup

        try:
            ours = version("ombre")
        except PackageNotFoundError:
            ours = "unknown"
        newest = backup.backups(self.settings.backups_dir)[-1:]
        state = {"version": ours, "database": str(self.settings.memory_db), "backend": "sqlite", "memories": total,
                 "encoders": list(self.encoders), "models": {k: "loaded" for k in self.encoders} | {
                     k: f"unavailable: {v}" for k, v in self.encoder_errors.items()},
                 "embedding": self.embedding, "last_backup": str(newest[0]) if newest else None}
        if self.encoder_errors:
            return {"status": "degraded", "reason": "; ".join(self.encoder_errors.values()), **state}
        return {"status": "ok", **state}

    def close(self) -> None:
        self.store.close()

