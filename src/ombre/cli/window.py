"""The hot window: anchors, usage, diet, forge, and the bill they keep low."""

from __future__ import annotations

from pathlib import Path

import click

from ..settings import Settings
from ..transcript.bill import compute
from ..transcript.usage import read_usage
from ..tunnel import new_window
from ..window.anchors import anchors as list_anchors
from ..window.diet import DietOptions
from ..window.diet import run as run_diet
from ..window.forge import ForgeOptions
from ..window.forge import run as run_forge
from ..window.select import build_selector
from . import render
from .base import (
    command,
    dry_run_option,
    emit,
    json_option,
    read_handoff_file,
    selection_options,
    session_argument,
    session_path,
)


@command()
@session_argument
@click.option("--limit", default=20, show_default=True, help="How many recent user messages to show.")
@json_option
@click.pass_obj
def anchors(settings: Settings, session: str | None, limit: int, as_json: bool) -> None:
    """Recent real user messages with idx, short uuid and Shanghai time (for --keep-from/--keep-to)."""
    path = session_path(settings, session)
    items = list_anchors(path, limit)
    emit(
        as_json,
        {"session": path.stem, "path": str(path), "anchors": [a.to_dict() for a in items]},
        lambda: render.anchors(path, items),
    )


@command()
@session_argument
@click.option(
    "--retain",
    type=int,
    default=None,
    help="Tokens of recent dialogue to keep [default: AUTO_FORGE_DIET_RETAIN or 150000].",
)
@click.option(
    "--squash",
    type=int,
    default=None,
    help="Cap, in characters, for each tool payload [default: AUTO_FORGE_DIET_SQUASH or 2000].",
)
@dry_run_option
@json_option
@click.pass_obj
def diet(
    settings: Settings, session: str | None, retain: int | None, squash: int | None, dry_run: bool, as_json: bool
) -> None:
    """Squash tool output and images, keep the dialogue and thinking; write a new session id."""
    path = session_path(settings, session)
    result = run_diet(path, DietOptions.from_settings(settings, retain=retain, squash=squash, dry_run=dry_run))
    new_window.rewritten(settings, result, "diet")
    emit(as_json, result, lambda: render.rewrite(result))


def selector(settings: Settings, **selection):
    return build_selector(settings.forge_retain, settings.forge_max_kept, **selection)


@command()
@session_argument
@selection_options
@click.option("--squash", type=int, default=None, help="Also cap each tool payload at this many characters.")
@click.option(
    "--inject",
    "inject_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Put this handoff text in as the first (clearly marked) user event.",
)
@dry_run_option
@json_option
@click.pass_obj
def forge(
    settings: Settings,
    session: str | None,
    squash: int | None,
    inject_file: Path | None,
    dry_run: bool,
    as_json: bool,
    **selection,
) -> None:
    """Cut to the recent raw tail (thinking kept) or a chosen range; write a new session id."""
    chosen = selector(settings, **selection)
    inject_text = read_handoff_file(inject_file) if inject_file is not None else None
    path = session_path(settings, session)
    result = run_forge(
        path,
        ForgeOptions(
            selector=chosen,
            squash=squash,
            inject_text=inject_text,
            inject_source=str(inject_file) if inject_file else None,
            dry_run=dry_run,
            window=settings.context_window,
            history=settings.history_log,
        ),
    )
    new_window.rewritten(settings, result, "forge")
    emit(as_json, result, lambda: render.rewrite(result))


@command()
@session_argument
@json_option
@click.pass_obj
def usage(settings: Settings, session: str | None, as_json: bool) -> None:
    """How full the session's context window is (stored usage) and what our estimate says."""
    report = read_usage(session_path(settings, session), settings.context_window)
    emit(as_json, report, lambda: report.format())


@command()
@click.option("--days", type=int, default=None, help="Only the last N days (today included) [default: all].")
@json_option
@click.pass_obj
def stats(settings: Settings, days: int | None, as_json: bool) -> None:
    """The bill per day from the usage stored in the transcripts: tokens, cache hits, cost, swaps, background."""
    bill = compute(settings, days)
    emit(as_json, bill.to_dict(), lambda: render.bill(bill, settings))
