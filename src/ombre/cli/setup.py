"""Setting Ombre up and checking it: install / uninstall, the hooks Claude Code runs, doctor, config, demo."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .. import doctor as checkup
from ..demo import run_demo
from ..inject import install as claude_code
from ..inject.hooks import main as run_hook
from ..settings import Settings
from ..transcript.usage import UsageReport
from ..tunnel import units
from ..window.forge import ForgeResult
from ..write.async_distill import mark_started, reads_from
from ..write.llm import ledger
from . import render
from .base import Exit, command, dry_run_option, emit, group, json_option


def _claude_code(settings: Settings, install: bool, dry_run: bool, as_json: bool, cache_1h: bool = True) -> None:
    changes = [
        c for c in claude_code.plan(settings, install=install, env=dict(os.environ), cache_1h=cache_1h) if c.changed
    ]
    backups = [] if dry_run else claude_code.apply(changes)
    if install and not dry_run:
        claude_code.precompile()
        mark_started(settings)
    summary = {
        "dry_run": dry_run,
        "changed": [{"path": str(c.path), "what": c.what} for c in changes],
        "backups": [str(b) for b in backups],
        "background_model": settings.llm,
    }
    # distillation and arbitration use rules unless told otherwise; this Claude Code can be their model
    notes = (
        ""
        if not install or settings.llm == "claude-code"
        else "\nbackground model: rules (the default). To let distillation and arbitration ask this Claude Code\n"
        "with its own login (no API key; a small model, capped per day), set OMBRE_LLM=claude-code\n"
        "(OMBRE_LLM_MODEL=haiku, OMBRE_LLM_DAILY_CALLS / OMBRE_LLM_DAILY_TOKENS) for `ombre serve` and the "
        "keeper."
    )
    if install:
        summary["distillation"] = reads_from(settings)
        notes += f"\ndistillation: {reads_from(settings)}"
    emit(as_json, summary, lambda: render.install_plan(changes, backups, dry_run=dry_run, install=install, notes=notes))


def _units(install: bool, dry_run: bool, as_json: bool) -> None:
    changes = [
        c
        for c in units.plan(
            install=install,
            env=dict(os.environ),
            exe=claude_code.ombre_executable() if install else None,
            workdir=Path.cwd(),
        )
        if c.changed
    ]
    if not dry_run:
        units.apply(changes)
    emit(
        as_json,
        {"dry_run": dry_run, "changed": [str(c.path) for c in changes]},
        lambda: render.units_plan(
            changes,
            dry_run=dry_run,
            install=install,
            units=list(units.UNITS),
            how_to_enable=units.how_to_enable(list(units.UNITS)),
        ),
    )


@group()
def install() -> None:
    """Wire Ombre into an agent runtime."""


@install.command("claude-code")
@click.option(
    "--cache-1h/--no-cache-1h",
    default=True,
    show_default=True,
    help="Set ENABLE_PROMPT_CACHING_1H=1 for Claude Code sessions (1-hour prompt cache).",
)
@dry_run_option
@json_option
@click.pass_obj
def install_claude_code(settings: Settings, cache_1h: bool, dry_run: bool, as_json: bool) -> None:
    """Add the hooks to settings.json, register the MCP server, import the memory discipline in CLAUDE.md."""
    _claude_code(settings, True, dry_run, as_json, cache_1h)


@install.command("service")
@dry_run_option
@json_option
@click.pass_obj
def install_service(settings: Settings, dry_run: bool, as_json: bool) -> None:
    """Write systemd user units for `ombre serve` and `ombre keeper run` (restart on failure, journal logs)."""
    _units(True, dry_run, as_json)


@group()
def uninstall() -> None:
    """Take Ombre out of an agent runtime."""


@uninstall.command("service")
@dry_run_option
@json_option
@click.pass_obj
def uninstall_service(settings: Settings, dry_run: bool, as_json: bool) -> None:
    """Remove the systemd user units `ombre install service` wrote (and only those)."""
    _units(False, dry_run, as_json)


@uninstall.command("claude-code")
@dry_run_option
@json_option
@click.pass_obj
def uninstall_claude_code(settings: Settings, dry_run: bool, as_json: bool) -> None:
    """Remove what `ombre install claude-code` added (each changed file is backed up first)."""
    _claude_code(settings, False, dry_run, as_json)


@group()
def hook() -> None:
    """Claude Code hooks (installed by `ombre install claude-code`). They read the hook's JSON on stdin and
    print the turn's memory block; on any failure they print nothing and exit 0."""


@hook.command("user-prompt-submit")
def hook_user_prompt_submit() -> None:
    """Recalled cards for this prompt, as UserPromptSubmit additionalContext."""
    sys.exit(run_hook("user-prompt-submit"))


@hook.command("session-start")
def hook_session_start() -> None:
    """The handoff context after a window swap, as SessionStart additionalContext."""
    sys.exit(run_hook("session-start"))


@command()
@click.option("--fix", is_flag=True, help="Do the safe fixes: seed the keeper's cooldowns, take a backup.")
@json_option
@click.pass_obj
def doctor(settings: Settings, fix: bool, as_json: bool) -> None:
    """Check the whole set-up: service, hooks, bridge, keeper, distillation, database, backup."""
    checks = checkup.run(settings, fix=fix)
    emit(as_json, checkup.as_dicts(checks), lambda: checkup.report(checks))
    if any(not c.ok and not c.fixed for c in checks):
        click.get_current_context().exit(Exit.CHECKS_FAILED)


@command()
@json_option
@click.pass_obj
def config(settings: Settings, as_json: bool) -> None:
    """Show the effective settings (from the environment and OMBRE_HOME/service.env)."""
    data = settings.as_dict()
    data["llm_today"] = ledger(settings).today()  # background model spend beside the caps that bound it
    emit(as_json, data, lambda: "\n".join(f"{k:<22} {v}" for k, v in data.items()))


@command()
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the demo's Claude home in this folder instead of a temporary one.",
)
@click.pass_obj
def demo(settings: Settings, keep: Path | None) -> None:
    """Show diet, forge, distillation, the per-turn block and the handoff, on bundled sessions in a temporary home."""
    for step in run_demo(settings, keep):
        click.echo(f"\n== {step.title}")
        value = step.value
        if isinstance(value, ForgeResult):
            click.echo(render.rewrite(value))
        elif isinstance(value, UsageReport):
            click.echo(value.format())
        elif isinstance(value, list):
            click.echo("\n".join(render.anchor_line(a) for a in value))
        elif isinstance(value, str) and value:
            click.echo(value)
