"""The wiring layer: the one place that turns Settings into working parts.

The CLI, the HTTP and MCP servers, the dashboard, the gateway and the keeper ask here for a store, a memory
service (with its commitment arbiter), and the callables the keeper
runs. Below this module nothing builds another layer's parts from settings; above it nothing builds them twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .memory.postgres_store import PostgresStore
from .memory.service import MemoryService
from .memory.sqlite_store import SQLiteStore
from .memory.store import MemoryStore
from .settings import Settings
from .tunnel.bridges import Bridge
from .tunnel.bridges import from_settings as bridge_from_settings
from .tunnel.tunnel import Holder, memory_holder
from .write.async_distill import Distiller
from .write.commitment_arbitrate import arbiter
from .write.llm import JsonModel
from .write.llm import from_settings as model_from_settings


def open_store(settings: Settings) -> MemoryStore:
    """The store OMBRE_DB names (PostgreSQL for a postgresql:// address, else the SQLite file in OMBRE_HOME),
    reading and writing the namespace OMBRE_NAMESPACE names."""
    if settings.db:
        return PostgresStore(
            settings.db,
            settings.namespace,
            pool=(settings.pg_pool_min, settings.pg_pool_max),
            timeout_s=settings.pg_pool_timeout_ms / 1000,
            hnsw_from=settings.pg_hnsw_from,
        )
    return SQLiteStore(settings.memory_db, settings.namespace)


def open_service(
    settings: Settings, *, arbitrate: bool = True, store: MemoryStore | None = None, **encoders: Any
) -> MemoryService:
    """The memory service as every adapter (CLI, HTTP, MCP, dashboard) uses it: on the configured store, with
    commitment arbitration (rules, or the configured model). `arbitrate=False` for one that only recalls (the
    gateway's) or whose holds skip arbitration; `embedder=` / `encoders=` as MemoryService takes them."""
    return MemoryService(settings, store or open_store(settings), arbiter=arbiter if arbitrate else None, **encoders)


def bridge(settings: Settings) -> Bridge | None:
    """The chat bridge OMBRE_BRIDGE names (cc-connect, command, file), or None when there is none."""
    return bridge_from_settings(settings)


def model(settings: Settings) -> JsonModel | None:
    """The model behind arbitration and distillation (OMBRE_LLM), or None for the rules."""
    return model_from_settings(settings)


def distiller(settings: Settings, service: MemoryService) -> Distiller:
    """Distillation on `service`, with the configured model (the rules when there is none)."""
    return Distiller(settings, service, model(settings))


def holder(settings: Settings) -> Holder:
    """Where a swap's handoff is held: the running service, else the store directly (vectors follow when the
    service next warms up)."""
    return memory_holder(settings, lambda: open_service(settings, encoders={}))


def keeper_distill(settings: Settings) -> Callable[[Path, bool], None]:
    """What the keeper calls each idle pass (distils when due) and right before a forge (forced)."""

    def run(path: Path, force: bool) -> None:
        service = open_service(settings)
        try:
            distiller(settings, service).run(path, force=force)
        finally:
            service.close()

    return run
