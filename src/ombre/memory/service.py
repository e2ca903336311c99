"""The memory service: one object the CLI, HTTP and MCP adapters share (store + embedder + settings)."""

from __future__ import annotations

import datetime as dt
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from .. import wire
from ..clock import iso, now_utc, shanghai_date
from ..errors import MemoryInputError
from ..files import output_file, replace_atomic
from ..settings import Settings
from . import scarcity
from .arbitration import Verdict, clear_conflicts
from .breath import BreathRequest, BreathResult, breath
from .embed import LOADERS, ORDER, Embedder
from .hold import HoldRequest, HoldResult, enrich, enrich_pending, hold, validate
from .model import BUILTIN_TYPES, CONFIRMED, UNCONFIRMED, Evidence, Memory
from .rows import terms_of
from .store import GateEntry, MemoryStore, NewRow

MAX_IMPORT_LINE = 100_000  # an exported memory is a few KB (content is capped at OMBRE_MAX_CONTENT_CHARS)
_EVIDENCE_FIELDS = set(Evidence.__dataclass_fields__)


@dataclass
class Imported:
    added: int = 0
    skipped: int = 0  # ids already present
    refused: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)


@dataclass
class Edited:
    memory: Memory
    changed: list[str]  # what the edit changed, for the trace and the person
    notes: list[str]  # what the scarcity caps did


class MemoryService:
    def __init__(
        self,
        settings: Settings,
        store: MemoryStore,
        embedder: Embedder | None = None,
        encoders: Mapping[str, Embedder] | None = None,
        arbiter: Callable[[Settings, "MemoryService"], Callable[[Memory], Verdict]] | None = None,
    ) -> None:
        """`encoders` fixes exactly which encoders recall uses; otherwise settings.encoders (OMBRE_ENCODERS,
        OMBRE_VECTORS) name them and each loads on first use, `embedder` standing in for e5. `arbiter` builds
        the commitment arbitration hold asks (the write layer's; app.open_service passes it)."""
        self.settings = settings
        self.store = store
        self._fixed = encoders is not None
        self._encoders: dict[str, Embedder] = dict(encoders or {})
        if embedder is not None and not self._fixed:
            self._encoders["e5"] = embedder
        self.encoder_errors: dict[str, str] = {}
        self._load_lock = threading.Lock()
        # background embedding (embed_pending): per encoder, how many memories still had no vector, and
        # how many have been done since
        self.embedding: dict[str, dict] = {}
        self.arbitrate: Callable[[Memory], Verdict] | None = arbiter(settings, self) if arbiter else None

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
                    except Exception as exc:  # noqa: BLE001 — a model that will not load leaves the other
                        self.encoder_errors[key] = f"{key} model unavailable: {exc}"
        return {k: self._encoders[k] for k in ORDER if k in self._encoders}

    @property
    def embedder(self) -> Embedder | None:
        """The e5 encoder (arbitration's thresholds are set for its similarities), if it is in use."""
        return self.encoders.get("e5")

    def warm(self) -> None:
        """Load the models and the vectors now (SQLite's matrices, PostgreSQL's pages), so the first turn's
        recall is not the slow one."""
        for key, encoder in list(self.encoders.items()):
            try:
                vector = encoder.query("预热")
            except Exception as exc:  # noqa: BLE001 — a broken model degrades recall, it does not stop serving
                self.encoder_errors[key] = f"{key} model unavailable: {exc}"
                self._encoders.pop(key, None)
            else:
                self.store.search_vectors(key, np.asarray(vector, dtype=np.float32)[None, :], 1, 1)

    def share_encoders(self, other: "MemoryService") -> None:
        """Use the models another service already loaded (one `ombre serve`, many namespaces)."""
        self._fixed, self._encoders = True, other.encoders

    def embed_pending(self, batch: int = 64) -> int:
        """Give every memory a vector from every encoder in use: memories written while a model was away,
        and a whole existing store when an encoder is added (`ombre serve` runs this in the background).
        Resumable: the memories without a vector are the to-do list. Progress is in `self.embedding`."""
        encoders = self.encoders
        for key in encoders:
            self.embedding[key] = {"todo": self.store.unembedded_count(key), "done": 0}
        if "e5" in encoders:  # and the latent terms the e5 model reads (hold.enrich_latents)
            self.embedding["latent"] = {"todo": self.store.latents_pending(), "done": 0}

        def progress(key: str, n: int) -> None:
            self.embedding[key]["done"] += n

        return enrich_pending(self.store, encoders, batch=batch, progress=progress)

    def hold(self, req: HoldRequest, now: dt.datetime | None = None) -> HoldResult:
        s = self.settings
        encoders = self.encoders  # loaded before the lock: a model load must not hold other writers up
        with self.store.exclusive():
            return hold(
                self.store,
                req,
                encoders=encoders,
                max_chars=s.max_content_chars,
                extra_types=s.extra_types,
                auto_daily=s.auto_hold_daily,
                max_pinned=s.max_pinned,
                max_10=s.max_importance_10,
                max_9=s.max_importance_9,
                now=now,
                arbitrate=self.arbitrate,
            )

    def breath(
        self, req: BreathRequest, now: dt.datetime | None = None, touch: bool = True, deadline: float | None = None
    ) -> BreathResult:
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

    def set_flag(
        self, memory_id: str, *, pinned: bool | None = None, archived: bool | None = None, force: bool = False
    ) -> Memory:
        return self.edit(memory_id, pinned=pinned, archived=archived, force=force).memory

    def edit(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        title: str | None = None,
        kind: str | None = None,
        importance: int | None = None,
        pinned: bool | None = None,
        archived: bool | None = None,
        force: bool = False,
        now: dt.datetime | None = None,
    ) -> "Edited":
        """The person's own change to a memory (CLI, the dashboard): the same checks as a manual hold, the
        same scarcity caps (a pin or a higher importance past a cap demotes the longest-inactive holder),
        a trace entry, and a line in the gate log."""
        with self.store.exclusive():
            return self._edit(
                memory_id,
                content=content,
                title=title,
                kind=kind,
                importance=importance,
                pinned=pinned,
                archived=archived,
                force=force,
                now=now,
            )

    def _edit(
        self,
        memory_id: str,
        *,
        content: str | None,
        title: str | None,
        kind: str | None,
        importance: int | None,
        pinned: bool | None,
        archived: bool | None,
        force: bool,
        now: dt.datetime | None,
    ) -> "Edited":
        m = self.get(memory_id)
        now = now or now_utc()
        s = self.settings
        changed: list[str] = []
        if content is not None or title is not None or kind is not None or importance is not None:
            validate(
                HoldRequest(
                    content=m.content if content is None else content,
                    type=m.type if kind is None else kind,
                    importance=m.importance if importance is None else importance,
                ),
                max_chars=s.max_content_chars,
                types=BUILTIN_TYPES + tuple(s.extra_types),
            )
        if archived and m.is_commitment and not force:
            raise MemoryInputError(
                f"{memory_id} is a commitment (承诺/约定): commitments are not archived",
                hint="pass --force if the person really withdrew it",
            )
        reindex = False
        for name, value in (("content", content), ("title", title), ("type", kind)):
            if value is not None and value.strip() != getattr(m, name):
                changed.append(f"{name}: {getattr(m, name)!r} → {value.strip()!r}")
                setattr(m, name, value.strip())
                reindex = True
        notes: list[str] = []
        raised = importance is not None and importance > m.importance
        if importance is not None and importance != m.importance:
            changed.append(f"importance: {m.importance} → {importance}")
            m.importance = importance
        pinning = pinned is True and not m.pinned
        if pinned is not None and pinned != m.pinned:
            changed.append("pinned" if pinned else "unpinned")
            m.pinned = pinned
        if pinning or raised:
            notes = scarcity.enforce(
                self.store,
                m,
                manual=True,
                max_pinned=s.max_pinned,
                max_10=s.max_importance_10,
                max_9=s.max_importance_9,
            )
        if archived is not None and archived != m.archived:
            changed.append("archived" if archived else "restored")
            if archived:
                clear_conflicts(self.store, m, "已归档", now)
            m.archived = archived
            if not archived:
                m.last_active = iso(now)  # a restored memory must not sink straight back
        if not changed:
            return Edited(m, [], notes)
        m.trace.append({"at": iso(now), "action": "edited", "other": "", "by": "person", "reason": "; ".join(changed)})
        self.store.update(m, terms_of(m) if reindex else None)
        if reindex:
            enrich(self.store, self.encoders, [m])  # new text, new vectors (a failure leaves the old ones)
        self._log(now, "edit", changed + notes, m)
        return Edited(m, changed, notes)

    def forget(self, memory_id: str, now: dt.datetime | None = None) -> Memory:
        """Delete a memory for good: its vectors and keywords go with it; what it contradicted is cleared and
        the gate log keeps one line saying it was forgotten (and what it said)."""
        m = self.get(memory_id)
        now = now or now_utc()
        clear_conflicts(self.store, m, "已删除", now)
        self.store.delete(m.id)
        self._log(now, "forget", ["对方要求忘掉"], m)
        return m

    def _log(self, now: dt.datetime, decision: str, reasons: list[str], m: Memory) -> None:
        self.store.log_gate(GateEntry(iso(now), shanghai_date(now), "manual", decision, reasons, m.content, m.id))

    def export(self, path: Path, follow_symlinks: bool = False) -> int:
        """Every memory as JSON lines in `path` (a regular file, replaced whole; see files.output_file)."""
        target = output_file(path, follow_symlinks)
        memories = self.store.list(archived=None)
        lines = (json.dumps(m.to_dict(), ensure_ascii=False) + "\n" for m in reversed(memories))
        replace_atomic(target, "".join(lines).encode("utf-8"))
        return len(memories)

    def import_(self, path: Path) -> "Imported":
        """Add memories from an export (JSON lines). Every line gets hold's checks; a line that fails them is
        refused and named by number, the rest are added in one transaction; ids already present are skipped."""
        data = path.read_bytes()
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise MemoryInputError(
                f"{path} is UTF-16 text", hint="save it as UTF-8 (an export is); nothing was imported"
            )
        result = Imported()
        rows = []
        for n, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                rows.append(self._imported(raw))
            except (MemoryInputError, ValueError, TypeError, UnicodeDecodeError) as exc:
                reason = (
                    exc.message
                    if isinstance(exc, MemoryInputError)
                    else ("not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc))
                )
                result.refused.append((n, reason))
        present = self.store.get_many([m.id for m in rows])
        fresh: list[NewRow] = []
        for m in rows:
            if m.id in present or any(m.id == f.id for f, _, _ in fresh):
                result.skipped += 1
                continue
            fresh.append((m, terms_of(m), None))
        self.store.add_many(fresh)  # one transaction: what was accepted goes in whole, or not at all
        result.added = len(fresh)
        enrich_pending(self.store, self.encoders)
        return result

    def _imported(self, raw: bytes) -> Memory:
        """One exported line as a memory, checked as hold checks what it writes."""
        if len(raw) > MAX_IMPORT_LINE:
            raise MemoryInputError(f"the line is {len(raw):,} bytes, over the limit of {MAX_IMPORT_LINE:,}")
        data = wire.loads(raw.decode("utf-8"), "the line")
        if not isinstance(data, dict):
            raise MemoryInputError(f"expected a JSON object, found {type(data).__name__}")
        wire.check(data, "the line")
        evidence = data.get("evidence") or {}
        if not isinstance(evidence, dict):
            raise MemoryInputError("evidence is not an object")
        m = Memory.from_dict({**data, "evidence": {k: v for k, v in evidence.items() if k in _EVIDENCE_FIELDS}})
        if not isinstance(m.id, str) or not m.id.strip():
            raise MemoryInputError("the line has no id")
        for name in ("content", "title", "domain", "created", "last_active", "status"):
            if not isinstance(getattr(m, name), str):
                raise MemoryInputError(f"{name} is {type(getattr(m, name)).__name__}, not text")
        s = self.settings
        validate(
            HoldRequest(
                content=m.content,
                title=m.title,
                type=m.type,
                tags=m.tags,
                importance=m.importance,
                pinned=bool(m.pinned),
                valence=m.valence,
                arousal=m.arousal,
                domain=m.domain,
                event_date=m.event_date,
                quote=m.evidence.quote,
                from_session=m.evidence.from_session,
                evidence_date=m.evidence.date,
            ),
            max_chars=s.max_content_chars,
            types=BUILTIN_TYPES + tuple(s.extra_types),
        )
        for name in ("created", "last_active"):
            try:
                dt.datetime.fromisoformat(getattr(m, name))
            except ValueError:
                raise MemoryInputError(f"{name} {getattr(m, name)!r} is not a time") from None
        if m.status not in (CONFIRMED, UNCONFIRMED):
            raise MemoryInputError(f"status {m.status!r} is neither confirmed nor {UNCONFIRMED}")
        return m

    def health(self) -> dict:
        try:
            total = self.store.count()
        except Exception as exc:  # noqa: BLE001 — health reports any store failure, never raises it
            return {"status": "degraded", "reason": f"store unavailable: {exc}"}
        from importlib.metadata import PackageNotFoundError, version

        from . import backup

        try:
            ours = version("ombre")
        except PackageNotFoundError:
            ours = "unknown"
        # `ombre backup` copies the SQLite file; a PostgreSQL store is backed up by its own server
        newest = [] if self.settings.db else backup.backups(self.settings.backups_dir)[-1:]
        state = {
            "version": ours,
            "database": self.settings.database_label,
            "backend": "postgresql" if self.settings.db else "sqlite",
            "namespace": self.settings.namespace,
            "memories": total,
            "encoders": list(self.encoders),
            "models": {k: "loaded" for k in self.encoders}
            | {k: f"unavailable: {v}" for k, v in self.encoder_errors.items()},
            "embedding": self.embedding,
            "last_backup": str(newest[0]) if newest else None,
        }
        pool = getattr(self.store, "pool_stats", None)  # PostgreSQL's shared connections
        if pool is not None:
            state["pool"] = pool()
        if self.encoder_errors:
            return {"status": "degraded", "reason": "; ".join(self.encoder_errors.values()), **state}
        return {"status": "ok", **state}

    def close(self) -> None:
        self.store.close()
