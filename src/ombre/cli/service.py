"""The long-running processes: the memory service, its dashboard, and the gateway for runtimes without hooks."""

from __future__ import annotations

import dataclasses
import urllib.parse
import webbrowser

import click
import uvicorn

from ..app import open_service
from ..inject.gateway import LocalRecall, create_gateway, remote_recall
from ..serve.http import check_bind
from ..serve.run import ensure_running, serve_http, serve_stdio
from ..settings import Settings
from ..wire import allowed_hosts
from .base import command


@command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--token", envvar="OMBRE_TOKEN", default=None, help="Bearer token (required off loopback).")
@click.option(
    "--allow-host",
    "allow_host",
    multiple=True,
    metavar="NAME",
    help="Another name requests may use for this service (besides 127.0.0.1, localhost, ::1 and --host).",
)
@click.option(
    "--stdio",
    is_flag=True,
    help="Serve MCP over stdio: relayed to the running service (OMBRE_URL), "
    "answered in this process only when that does not answer.",
)
@click.pass_obj
def serve(
    settings: Settings, host: str, port: int, token: str | None, allow_host: tuple[str, ...], stdio: bool
) -> None:
    """Run the memory service: HTTP API (/v1/hold, /v1/breath, /v1/memories/ID, /health) and MCP at /mcp."""
    if stdio:
        serve_stdio(settings, token)
        return
    serve_http(
        settings,
        host=host,
        port=port,
        token=token,
        allow_host=allow_host,
        on_ready=lambda url: click.echo(
            f"ombre serve ready on {url} (MCP at /mcp, health at /health; database {settings.database_label})", err=True
        ),
    )


@command("ui")
@click.option("--no-browser", is_flag=True, help="Print the address only.")
@click.pass_obj
def ui(settings: Settings, no_browser: bool) -> None:
    """Open the dashboard (the running `ombre serve` at OMBRE_URL, started first if nothing answers)."""
    log = ensure_running(settings)
    if log is not None:
        click.echo(f"started ombre serve (log: {log})", err=True)
    url = settings.memory_url + "/ui" + (f"?token={urllib.parse.quote(settings.token)}" if settings.token else "")
    click.echo(url)
    if not no_browser:
        webbrowser.open(url)  # nothing happens on a machine without a browser; the address is printed


@command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8766, show_default=True)
@click.option(
    "--upstream",
    default=None,
    help="Anthropic API base URL to forward to [env OMBRE_UPSTREAM, default https://api.anthropic.com].",
)
@click.option(
    "--memory-url", default=None, help="Recall through this running `ombre serve` instead of in this process."
)
@click.option(
    "--allow-host",
    "allow_host",
    multiple=True,
    metavar="NAME",
    help="Another name requests may use for the gateway (besides 127.0.0.1, localhost, ::1 and --host).",
)
@click.pass_obj
def gateway(
    settings: Settings, host: str, port: int, upstream: str | None, memory_url: str | None, allow_host: tuple[str, ...]
) -> None:
    """Anthropic-compatible proxy that adds the turn's memory block to the last user message only."""
    check_bind(host, None)
    local = None
    if memory_url:
        recall = remote_recall(dataclasses.replace(settings, memory_url=memory_url.rstrip("/")))
    else:
        recall = local = LocalRecall(lambda: open_service(settings, arbitrate=False), settings)
        problem = local.warm()
        if problem:
            click.echo(f"warning: memory side unavailable, forwarding without cards: {problem}", err=True)
    app = create_gateway(
        (upstream or settings.upstream).rstrip("/"),
        recall,
        timeout_s=settings.inject_timeout_ms / 1000,
        hosts=allowed_hosts(host, allow_host),
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        if local is not None:
            local.close()
