"""Window swaps: the handoff pack, the tunnel, the bridge it re-binds, and the keeper that swaps by itself."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..app import bridge as bridge_of
from ..app import holder, keeper_distill
from ..errors import OmbreError, UsageError
from ..settings import Settings
from ..transcript.sessions import recorded_cwd
from ..tunnel import keeper as keeping
from ..tunnel import new_window
from ..tunnel.handoff import prepare
from ..tunnel.tunnel import TunnelOptions
from ..tunnel.tunnel import rebind as do_rebind
from ..tunnel.tunnel import run as run_tunnel
from ..window.select import parse_days
from . import render
from .base import (
    Exit,
    command,
    dry_run_option,
    emit,
    group,
    json_option,
    read_handoff_file,
    selection_options,
    session_argument,
    session_path,
)
from .window import selector


@group()
def handoff() -> None:
    """Handoff packs for a window swap."""


@handoff.command("prepare")
@session_argument
@click.option("--days", default=None, help="Build it from these Shanghai days only: 2026-08-03,2026-08-04.")
@click.option(
    "--write",
    "write_file",
    is_flag=True,
    help="For /new: put it in the work dir as SESSION_HANDOFF.md and wait for the session id to change.",
)
@click.option(
    "--to",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The folder for SESSION_HANDOFF.md [default: the work dir the session recorded].",
)
@json_option
@click.pass_obj
def handoff_prepare(
    settings: Settings, session: str | None, days: str | None, write_file: bool, folder: Path | None, as_json: bool
) -> None:
    """Print the handoff pack (fixed fields, Chinese); edit it and pass it to `ombre tunnel --handoff-file`,
    or --write it for the person's own /new (the keeper then sends the continuation once)."""
    path = session_path(settings, session)
    pack = prepare(path, parse_days(days) if days else ())
    if not write_file:
        emit(as_json, pack, pack.render)
        return
    folder = folder or recorded_cwd(path)
    if folder is None:
        raise UsageError(f"{path.name} records no work dir", hint="say where with --to DIR")
    flag = new_window.write(settings, path.stem, pack.render(), folder)
    emit(
        as_json,
        {**pack.to_dict(), "written": flag.handoff, "waiting_for_new": flag.old_sid},
        lambda: (
            f"wrote {flag.handoff}\nwaiting for /new: when the chat leaves {flag.old_sid}, the keeper sends "
            "the continuation once (a forge or tunnel before that cancels it)"
        ),
    )


@command()
@session_argument
@click.option("--diet", "as_diet", is_flag=True, help="Diet instead of forge (squash, keep the dialogue).")
@selection_options
@click.option("--squash", type=int, default=None, help="Cap tool payloads [default: AUTO_FORGE_DIET_SQUASH].")
@click.option(
    "--handoff-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Use this (edited) handoff pack instead of preparing one.",
)
@click.option("--handoff-days", default=None, help="Prepare the handoff from these Shanghai days.")
@click.option("--no-hold", is_flag=True, help="Do not hold the handoff as a 会话交接 memory.")
@click.option("--no-nudge", is_flag=True, help="Do not send the continuation nudge.")
@dry_run_option
@json_option
@click.pass_obj
def tunnel(
    settings: Settings,
    session: str | None,
    as_diet: bool,
    squash: int | None,
    handoff_file: Path | None,
    handoff_days: str | None,
    no_hold: bool,
    no_nudge: bool,
    dry_run: bool,
    as_json: bool,
    **selection,
) -> None:
    """Swap windows: backup → handoff → hold → forge (or diet) → stop bridge → re-bind → start → nudge."""
    options = TunnelOptions(
        mode="diet" if as_diet else "forge",
        selector=None if as_diet else selector(settings, **selection),
        squash=squash,
        handoff_days=parse_days(handoff_days) if handoff_days else (),
        handoff_text=read_handoff_file(handoff_file) if handoff_file else None,
        hold=not no_hold,
        nudge=not no_nudge,
        dry_run=dry_run,
    )
    result = run_tunnel(
        settings,
        session_path(settings, session),
        options,
        bridge=bridge_of(settings),
        holder=None if dry_run else holder(settings),
        on_step=(lambda step: None) if as_json else (lambda step: click.echo(f"… {step}", err=True)),
    )
    emit(as_json, result, lambda: render.tunnel(result))
    if not result.ok:
        click.get_current_context().exit(Exit.SWAP_FAILED)


@command()
@click.argument("new_sid")
@json_option
@click.pass_obj
def rebind(settings: Settings, new_sid: str, as_json: bool) -> None:
    """Bind the bridge to a session a tunnel already wrote (after a failed re-bind), without cutting again."""
    bridge = bridge_of(settings)
    if bridge is None:
        raise UsageError("no bridge is configured", hint="set OMBRE_BRIDGE (cc-connect, command or file)")
    result = do_rebind(settings, bridge, new_sid, settings.projects_dir)
    emit(as_json, result, lambda: render.tunnel(result))
    if not result.ok:
        click.get_current_context().exit(Exit.SWAP_FAILED)


@group()
def bridge() -> None:
    """The chat bridge that resumes the session (cc-connect, command, file)."""


@bridge.command("status")
@json_option
@click.pass_obj
def bridge_status(settings: Settings, as_json: bool) -> None:
    """Compare the bound session id with the newest one a diet/forge/tunnel wrote."""
    b = bridge_of(settings)
    bound = b.bound_sid() if b is not None else None
    newest = keeping.newest_written(settings)
    report = {
        "bridge": b.name if b else "none",
        "bound_sid": bound,
        "newest_sid": newest,
        "differ": bool(bound and newest and bound != newest),
    }
    emit(as_json, report, lambda: render.bridge_status(report))


@group()
def keeper() -> None:
    """The sidecar that runs diet and forge by itself."""


@keeper.command("run")
@session_argument
@click.option("--once", is_flag=True, help="One pass of the state machine, then exit.")
@click.option("--interval", type=int, default=30, show_default=True, help="Seconds between passes.")
@click.pass_obj
def keeper_run(settings: Settings, session: str | None, once: bool, interval: int) -> None:
    """Watch the session; diet at AUTO_FORGE_DIET_PCT, forge at AUTO_FORGE_PCT, when idle, within cooldowns."""
    b = bridge_of(settings)
    k = keeping.Keeper(settings, b, holder(settings), distill=keeper_distill(settings))
    keeping.run_forever(
        k, session, interval=interval, once=once, report=lambda entry: click.echo(json.dumps(entry, ensure_ascii=False))
    )


@keeper.command("status")
@session_argument
@json_option
@click.pass_obj
def keeper_status(settings: Settings, session: str | None, as_json: bool) -> None:
    """Used %, last diet and forge, cooldowns left, today's count, bound vs newest sid, last 20 outcomes."""
    b = bridge_of(settings)
    try:
        path = keeping.watched(settings, b, session)
    except OmbreError:
        path = None
    report = keeping.status(settings, path, b)
    emit(as_json, report, lambda: render.keeper_status(report, settings))


@keeper.command("seed")
@json_option
@click.pass_obj
def keeper_seed(settings: Settings, as_json: bool) -> None:
    """Start both cooldowns now (after a deploy or a parser change), so the keeper cannot fire back to back;
    today's count, failures and the breaker are kept as they are."""
    stamp = keeping.seed(settings)
    report = {
        "state": str(settings.keeper_state),
        "seeded": stamp,
        "diet_cooldown_mins": settings.diet_cooldown_mins,
        "forge_cooldown_mins": settings.forge_cooldown_mins,
    }
    emit(
        as_json,
        report,
        lambda: (
            f"cooldowns seeded at {settings.local(stamp)}: no diet for "
            f"{settings.diet_cooldown_mins} min, no forge for {settings.forge_cooldown_mins} "
            f"min ({settings.keeper_state})"
        ),
    )


@keeper.command("reset")
@click.pass_obj
def keeper_reset(settings: Settings) -> None:
    """Close the breaker after fixing what made the automatic runs fail."""
    keeping.reset(settings)
    click.echo("breaker closed; automatic runs resume on the next pass")
