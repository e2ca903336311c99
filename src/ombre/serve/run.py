"""The service's lifecycle: `ombre serve` over HTTP or stdio, and starting one for `ombre ui` when none
answers. The CLI parses the options and calls these."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import uvicorn

from ..app import open_service
from ..client import health
from ..errors import UsageError
from ..memory import backup
from ..memory.service import MemoryService
from ..settings import Settings
from ..wire import allowed_hosts
from .http import check_bind, create_app
from .mcp import Relay, build_mcp

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# glibc gives each thread that contends for malloc an arena of its own, up to eight per core, and a freed
# block returns only to its own arena: the server's request threads and the encoders' OpenMP teams grew RSS
# for the whole of bench/load.py's run (262 → 360 MB in ten minutes, still rising). With two arenas it rose
# to 329 and levelled (the last five minutes +5 MB), at the same latencies. MALLOC_ARENA_MAX, when set, wins.
MALLOC_ARENAS = 2
M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def cap_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Limit glibc's malloc arenas (see MALLOC_ARENAS) before the service starts its threads; elsewhere (musl,
    macOS) nothing to do. Returns whether the limit was set."""
    chosen = "MALLOC_ARENA_MAX" in os.environ or "arena_max" in os.environ.get("GLIBC_TUNABLES", "")
    if chosen or not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(M_ARENA_MAX, arenas))  # the process's own symbols: its libc
    except (OSError, AttributeError):  # not glibc
        return False


def checked_service(settings: Settings) -> MemoryService:
    """The memory service, its SQLite file checked (and backed up) first; PostgreSQL has its own server for that."""
    if not settings.db:
        backup.check_at_start(settings.memory_db, settings.backups_dir)
    return open_service(settings)


def serve_stdio(settings: Settings, token: str | None) -> None:
    """MCP over stdio, as Claude Code starts it for each of its processes: relayed to the running service
    (OMBRE_URL), the store opened in this process only when that service does not answer."""
    relay = Relay(settings.memory_url + "/mcp", token or settings.token, lambda: checked_service(settings))
    try:
        build_mcp(relay=relay).run("stdio")
    finally:
        relay.close()


def serve_http(
    settings: Settings,
    *,
    host: str,
    port: int,
    token: str | None,
    allow_host: tuple[str, ...],
    on_ready: Callable[[str], None],
) -> None:
    """The HTTP API, MCP at /mcp and the dashboard, until stopped. `on_ready` gets the address once the socket
    listens; a port that cannot be bound is a UsageError."""
    check_bind(host, token)
    cap_malloc_arenas()
    service = checked_service(settings)
    try:
        service.warm()
        # memories without a vector from every encoder (an older store, a model that was away) are embedded
        # while serving; recall finds them by their other signals meanwhile (progress: GET /health)
        threading.Thread(target=service.embed_pending, name="ombre-embed", daemon=True).start()
        if not settings.db:
            daily = (settings.memory_db, settings.backups_dir, settings.backups_keep)
            threading.Thread(target=backup.daily, args=daily, name="ombre-backup", daemon=True).start()
        config = uvicorn.Config(
            create_app(service, token, allowed_hosts(host, allow_host)), host=host, port=port, log_level="warning"
        )
        server = uvicorn.Server(config)

        def ready() -> None:  # uvicorn's own "started" line is at log level info
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
                on_ready(f"http://{host}:{bound}")

        threading.Thread(target=ready, name="ombre-ready", daemon=True).start()
        server.run()
        if not server.started:
            raise UsageError(
                f"ombre serve could not listen on {host}:{port} (is the port in use?)",
                hint="stop what holds the port, or pick another with --port",
            )
    finally:
        service.close()


def ensure_running(settings: Settings, wait_s: float = 90) -> Path | None:
    """A service answering at OMBRE_URL: when none does (and the address is this machine's), one is started in
    the background and waited for; returns its log file then, None when one was already up."""
    if health(settings.memory_url, timeout=2) is not None:
        return None
    where = urllib.parse.urlsplit(settings.memory_url)
    if where.hostname not in LOOPBACK:
        raise UsageError(f"nothing answers at {settings.memory_url}", hint="start `ombre serve` on that machine")
    logs = settings.ombre_home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "serve.log", "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "ombre.cli", "serve", "--host", where.hostname, "--port", str(where.port or 8765)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + wait_s
    while health(settings.memory_url, timeout=2) is None:
        if time.monotonic() > deadline:
            raise UsageError(
                f"ombre serve did not answer at {settings.memory_url} within {wait_s:.0f} s",
                hint=f"read {logs / 'serve.log'}",
            )
        time.sleep(0.3)
    return logs / "serve.log"
