"""The memory service from the command line: hold, breath, namespaces, backups, distillation."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from ..app import distiller, open_service
from ..client import health, via_serve
from ..errors import OmbreError, UsageError
from ..memory import backup as backups
from ..memory import namespaces
from ..memory.breath import BreathRequest
from ..memory.hold import HoldRequest, HoldResult
from ..settings import Settings
from ..write.async_distill import status as distill_state
from . import render
from .base import Exit, closing, command, dry_run_option, emit, group, json_option, session_path


def service(settings: Settings):
    """The memory service, closed when the command ends."""
    return closing(open_service(settings))


@command()
@click.argument("content")
@click.option("--title", default="")
@click.option(
    "--type", "kind", default="事件", show_default=True, help="偏好 | 事件 | 规则 | 承诺 | 约定 | 会话交接 | …"
)
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--importance", type=int, default=5, show_default=True)
@click.option("--pinned", is_flag=True)
@click.option("--valence", type=float, default=0.5, show_default=True)
@click.option("--arousal", type=float, default=0.3, show_default=True)
@click.option("--domain", default="")
@click.option("--event-date", default=None, help="The day it happened, YYYY-MM-DD.")
@click.option("--quote", default=None, help="The person's own words (≤ 2 sentences); without it: 未确认.")
@click.option("--from-session", default=None, help="The session the words come from.")
@click.option("--auto", "auto", is_flag=True, help="Judge it as an automatic write (stricter gate).")
@json_option
@click.pass_obj
def hold(
    settings: Settings,
    content: str,
    title: str,
    kind: str,
    tags: tuple[str, ...],
    importance: int,
    pinned: bool,
    valence: float,
    arousal: float,
    domain: str,
    event_date: str | None,
    quote: str | None,
    from_session: str | None,
    auto: bool,
    as_json: bool,
) -> None:
    """Remember one thing (write_gate, scarcity and the evidence chain apply)."""
    req = HoldRequest(
        content=content,
        title=title,
        type=kind,
        tags=list(tags),
        importance=importance,
        pinned=pinned,
        valence=valence,
        arousal=arousal,
        domain=domain,
        event_date=event_date,
        quote=quote,
        from_session=from_session,
        source="auto" if auto else "manual",
    )
    served = via_serve(settings, "/v1/hold", asdict(req))
    result = HoldResult(**served) if served is not None else service(settings).hold(req)
    emit(as_json, result, lambda: render.hold(result))
    if not result.stored:
        click.get_current_context().exit(Exit.NOT_HELD)


@command()
@click.argument("query", required=False, default="")
@click.option("--max-results", type=int, default=5, show_default=True)
@click.option("--max-tokens", type=int, default=1800, show_default=True)
@click.option("--domain", default=None)
@click.option("--valence", type=float, default=None)
@click.option("--arousal", type=float, default=None)
@click.option("--session-start", is_flag=True, help="With no query: the handoff block for a new window.")
@click.option(
    "--context",
    "context",
    multiple=True,
    help="An earlier utterance of the person (repeat, oldest first): what a fragment of a query is about.",
)
@json_option
@click.pass_obj
def breath(
    settings: Settings,
    query: str,
    max_results: int,
    max_tokens: int,
    domain: str | None,
    valence: float | None,
    arousal: float | None,
    session_start: bool,
    context: tuple[str, ...],
    as_json: bool,
) -> None:
    """Recall memories for a query (keywords and two encoders, rank-fused), or the handoff block at
    session start."""
    req = BreathRequest(
        query=query,
        max_results=max_results,
        max_tokens=max_tokens,
        domain=domain,
        valence=valence,
        arousal=arousal,
        is_session_start=session_start,
        context=list(context) or None,
    )
    served = via_serve(settings, "/v1/breath", asdict(req))
    if served is not None:
        emit(as_json, served, lambda: render.breath(served.get("text", ""), served.get("degraded", [])))
        return
    result = service(settings).breath(req)
    emit(as_json, result, lambda: render.breath(result.render(), result.degraded))


def _sqlite_only(settings: Settings, what: str) -> None:
    if settings.db:
        raise UsageError(
            f"`ombre {what}` works on the SQLite file; OMBRE_DB is a PostgreSQL store",
            hint="back it up with its server's tools (pg_dump, or the managed service's backups)",
        )


@command()
@click.option("--list", "listing", is_flag=True, help="List the backups instead of taking one.")
@json_option
@click.pass_obj
def backup(settings: Settings, listing: bool, as_json: bool) -> None:
    """Back up the memory database (a consistent copy, safe while `ombre serve` runs)."""
    _sqlite_only(settings, "backup")
    if listing:
        found = [{"path": str(p), "bytes": p.stat().st_size} for p in backups.backups(settings.backups_dir)]
        emit(as_json, found, lambda: "\n".join(f"{f['path']}  {f['bytes']:,} bytes" for f in found) or "no backups yet")
        return
    made = backups.take(settings.memory_db, settings.backups_dir, settings.backups_keep)
    report = {"backup": str(made), "bytes": made.stat().st_size, "kept": len(backups.backups(settings.backups_dir))}
    emit(as_json, report, lambda: f"backed up to {made} ({report['bytes']:,} bytes; {report['kept']} kept)")


@command()
@click.argument("file", type=click.Path(path_type=Path))
@json_option
@click.pass_obj
def restore(settings: Settings, file: Path, as_json: bool) -> None:
    """Put a backup in place of the memory database (checked first; the current one is kept aside)."""
    _sqlite_only(settings, "restore")
    # the service of this OMBRE_HOME holds the database open; one of another home on that port does not
    running = health(settings.memory_url, timeout=1, token=settings.token)
    if running is not None:
        home = running.get("home")
        if home is None or Path(home).resolve() == settings.ombre_home.resolve():
            raise UsageError(
                f"ombre serve is running at {settings.memory_url} and holds the database open"
                + ("" if home else " (it does not say which OMBRE_HOME it serves)"),
                hint="stop it, run `ombre restore` again, then start it",
            )
    aside = backups.restore(file, settings.memory_db)
    report = {
        "restored": str(file),
        "database": str(settings.memory_db),
        "previous_kept_at": str(aside) if aside else None,
    }
    emit(
        as_json,
        report,
        lambda: (
            f"restored {file} to {settings.memory_db}"
            + (f"; the previous database is kept at {aside}" if aside else "")
        ),
    )


@group()
def namespace() -> None:
    """Namespaces: one person or companion each, on one store (a token per namespace for `ombre serve`)."""


@namespace.command("add")
@click.argument("name")
@json_option
@click.pass_obj
def namespace_add(settings: Settings, name: str, as_json: bool) -> None:
    """Make a bearer token for namespace NAME (printed once; the store keeps only its digest)."""
    token = namespaces.add(service(settings), name)
    emit(
        as_json,
        {"namespace": name, "token": token},
        lambda: f"{token}\nnamespace {name}: give this token to its clients as OMBRE_TOKEN (shown only now)",
    )


@namespace.command("list")
@json_option
@click.pass_obj
def namespace_list(settings: Settings, as_json: bool) -> None:
    """Every namespace on this store, with its memories and tokens."""
    rows = service(settings).store.namespaces()
    emit(
        as_json,
        [{"namespace": n, "memories": m, "tokens": t} for n, m, t in rows],
        lambda: "\n".join(f"{n:<20} {m:>6} memories  {t} token(s)" for n, m, t in rows) or "(none)",
    )


@group(invoke_without_command=True)
@click.option("--session", default=None, help="The session to read [default: the current project's newest].")
@click.option("--force", is_flag=True, help="Run even if not due (5 new turns or 10 idle minutes).")
@click.option(
    "--explain",
    is_flag=True,
    help="Also print how the rules read each clause: the act, what decided it, what took it back.",
)
@dry_run_option
@json_option
@click.pass_context
def distill(ctx: click.Context, session: str | None, force: bool, explain: bool, dry_run: bool, as_json: bool) -> None:
    """Settle what the person said into memory (0–3 candidates, quoted, through write_gate)."""
    if ctx.invoked_subcommand is not None:
        return
    settings = ctx.obj
    result = distiller(settings, service(settings)).run(
        session_path(settings, session), force=force, dry_run=dry_run, explain=explain
    )
    emit(as_json, result, lambda: render.distilled(result, dry_run=dry_run, explain=explain))


@distill.command("status")
@click.option("--session", default=None)
@json_option
@click.pass_obj
def distill_status(settings: Settings, session: str | None, as_json: bool) -> None:
    """The cursor, today's automatic holds against the cap, and the last outcomes."""
    try:
        path = session_path(settings, session)
    except OmbreError:
        path = None
    report = distill_state(settings, service(settings), path)
    emit(as_json, report, lambda: render.distill_status(report, settings))
