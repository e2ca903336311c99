"""What every command shares: the command classes that map errors to a message, JSON and an exit code, the
common options, and the resources a command opens (closed with its click context)."""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from enum import IntEnum
from pathlib import Path

import click

from ..errors import OmbreError, UsageError
from ..settings import Settings
from ..transcript.sessions import find_session


class Exit(IntEnum):
    """Exit codes a script can act on (an OmbreError carries its own: 1, 2 for usage, 6 for a bridge)."""

    CHECKS_FAILED = 1  # `ombre doctor`: a check failed that --fix did not fix
    NOT_HELD = 3  # `ombre hold`: the gate, a cap or arbitration did not store it
    SOME_REFUSED = 4  # `memories import --from ombre-brain`: files were refused by name, the rest imported
    SWAP_FAILED = 6  # `ombre tunnel` / `rebind`: the swap did not complete (the same code as a BridgeError)


def emit(as_json: bool, value: object, human: Callable[[], str]) -> None:
    if as_json:
        data = (
            value.to_dict()
            if hasattr(value, "to_dict")
            else (asdict(value) if is_dataclass(value) and not isinstance(value, type) else value)
        )
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        click.echo(human())


def _say(exc: OmbreError) -> None:
    click.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=True)


class OmbreCommand(click.Command):
    """An OmbreError ends the command as message + hint on stderr (and, under --json, the error as JSON on
    stdout) with its exit code: no tracebacks for users, and no handling repeated in every command."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OmbreError as exc:
            if ctx.params.get("as_json"):
                click.echo(json.dumps(exc.to_dict(), ensure_ascii=False, indent=2))
            _say(exc)
            ctx.exit(exc.exit_code)


class OmbreGroup(click.Group):
    """A group whose commands are OmbreCommands, and the CLI's net for what a person can get wrong outside a
    command — a bad setting read before any command runs, a folder that cannot be created or written.

    `lazy` names the commands that live in other modules, with the one line `--help` shows for each: a module
    is imported only when one of its commands runs, so `ombre --help` does not load what recall needs."""

    command_class = OmbreCommand
    group_class = type  # subgroups are OmbreGroups too

    def __init__(self, *args, lazy: dict[str, tuple[str, str]] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            module, _ = self.lazy[name]
            command = getattr(importlib.import_module(module, __package__), name.replace("-", "_"))
            self.add_command(command, name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (
                name,
                self.lazy[name][1]
                if name in self.lazy and name not in self.commands
                else self.commands[name].get_short_help_str(formatter.width - 6 - len(name)),
            )
            for name in self.list_commands(ctx)
            if name in self.lazy or not self.commands[name].hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OmbreError as exc:
            _say(exc)
            ctx.exit(exc.exit_code)
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            _say(
                UsageError(
                    f"cannot use{where}: {exc.strerror or exc}",
                    hint="check OMBRE_HOME and the paths you gave: each must be a folder or file you can write",
                )
            )
            ctx.exit(2)


json_option = click.option("--json", "as_json", is_flag=True, help="Print a machine-readable result.")
dry_run_option = click.option("--dry-run", is_flag=True, help="Report what would happen; write nothing.")
session_argument = click.argument("session", required=False)


def session_path(settings: Settings, ref: str | None) -> Path:
    return find_session(ref, settings.projects_dir)


def closing(resource):
    """`resource`, closed when the running command's context ends (a return, an error or an exit)."""
    click.get_current_context().call_on_close(resource.close)
    return resource


def read_handoff_file(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the handoff file {path}: {exc}", hint="give a UTF-8 text file") from None
    if not text.strip():
        raise UsageError(f"the handoff file {path} is empty", hint="write the handoff text first")
    return text


def selection_options(fn: Callable) -> Callable:
    """forge's selection options, shared by `forge` and `tunnel`."""
    options = [
        click.option(
            "--retain",
            type=int,
            default=None,
            help="Keep the recent tail up to this many tokens [default: AUTO_FORGE_RETAIN or 60000].",
        ),
        click.option("--keep-days", default=None, help="Keep the turns of these Shanghai days: 2026-08-03,2026-08-04."),
        click.option("--keep-from-idx", type=int, default=None),
        click.option("--keep-from-uuid", default=None),
        click.option("--keep-from-ts", default=None),
        click.option("--keep-to-idx", type=int, default=None),
        click.option("--keep-to-uuid", default=None),
        click.option(
            "--keep-to-ts",
            default=None,
            help="Range ends: one of idx/uuid/ts per end (see `ombre "
            "anchors`); times without a zone are Asia/Shanghai; Unix seconds or ms also work.",
        ),
        click.option(
            "--max-kept",
            type=int,
            default=None,
            help="Trim a larger kept set from its oldest end [default: AUTO_FORGE_MAX_KEPT or 100000].",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


# every command and group of the CLI: errors mapped once, in the classes above
command = functools.partial(click.command, cls=OmbreCommand)
group = functools.partial(click.group, cls=OmbreGroup)
