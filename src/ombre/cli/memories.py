"""`ombre memories`: the memories one by one — list, inspect, edit, pin, archive, forget — and whole stores moved
in and out: export, import (ours, or an Ombre-Brain vault), migrate to PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UsageError
from ..memory.migrate import migrate
from ..settings import Settings, database_url, namespace_name
from ..write.ombre_brain import import_vault
from . import render
from .base import Exit, dry_run_option, emit, group, json_option
from .memory import service


@group()
def memories() -> None:
    """List, inspect, pin, archive, restore, export and import memories."""


@memories.command("list")
@click.option("--archived", is_flag=True, help="Show archived memories instead.")
@click.option("--pinned", is_flag=True, help="Only pinned memories.")
@click.option("--type", "kind", default=None)
@click.option("--limit", type=int, default=50, show_default=True)
@json_option
@click.pass_obj
def memories_list(
    settings: Settings, archived: bool, pinned: bool, kind: str | None, limit: int, as_json: bool
) -> None:
    items = service(settings).store.list(archived=archived, pinned=True if pinned else None, type=kind, limit=limit)
    emit(as_json, [m.to_dict() for m in items], lambda: "\n".join(render.memory_line(m) for m in items) or "(none)")


def _show_memory(settings: Settings, memory_id: str, as_json: bool, **change: object) -> None:
    svc = service(settings)
    edited = svc.edit(memory_id, **change) if change else None
    m = edited.memory if edited else svc.get(memory_id)
    if edited is not None:
        emit(
            as_json,
            {**m.to_dict(), "changed": edited.changed, "notes": edited.notes},
            lambda: "\n".join([render.memory_line(m), *(f"  {n}" for n in edited.changed + edited.notes)]),
        )
        return
    detail = (
        f"\n  created {settings.local(m.created)}, last active {settings.local(m.last_active)}"
        "\n" + render.json_block(m.to_dict())
    )
    emit(as_json, m.to_dict(), lambda: render.memory_line(m) + detail)


memory_id_argument = click.argument("memory_id")


@memories.command("show")
@memory_id_argument
@json_option
@click.pass_obj
def memories_show(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Show one memory with its evidence."""
    _show_memory(settings, memory_id, as_json)


@memories.command("trace")
@memory_id_argument
@json_option
@click.pass_obj
def memories_trace(settings: Settings, memory_id: str, as_json: bool) -> None:
    """A memory's history: what arbitration did to it, and what replaced it."""
    report = service(settings).history(memory_id)
    emit(as_json, report, lambda: render.memory_trace(report, settings))


@memories.command("pin")
@memory_id_argument
@json_option
@click.pass_obj
def memories_pin(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Pin a memory (the pinned core)."""
    _show_memory(settings, memory_id, as_json, pinned=True)


@memories.command("unpin")
@memory_id_argument
@json_option
@click.pass_obj
def memories_unpin(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Unpin a memory."""
    _show_memory(settings, memory_id, as_json, pinned=False)


@memories.command("archive")
@memory_id_argument
@click.option("--force", is_flag=True, help="Archive even a commitment (承诺/约定).")
@json_option
@click.pass_obj
def memories_archive(settings: Settings, memory_id: str, force: bool, as_json: bool) -> None:
    """Archive a memory; commitments need --force."""
    _show_memory(settings, memory_id, as_json, archived=True, force=force)


@memories.command("restore")
@memory_id_argument
@json_option
@click.pass_obj
def memories_restore(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Restore an archived memory; its last_active is refreshed so it does not sink again."""
    _show_memory(settings, memory_id, as_json, archived=False)


@memories.command("edit")
@memory_id_argument
@click.option("--content", default=None, help="New text (the quote, the evidence, stays as it was said).")
@click.option("--title", default=None)
@click.option("--type", "kind", default=None, help="New type (事件 | 偏好 | 承诺 | …).")
@click.option("--importance", type=int, default=None, help="1–10; the caps on 9 and 10 still hold.")
@json_option
@click.pass_obj
def memories_edit(
    settings: Settings,
    memory_id: str,
    content: str | None,
    title: str | None,
    kind: str | None,
    importance: int | None,
    as_json: bool,
) -> None:
    """Correct a memory: the same checks and caps as a hold, a trace entry, a gate-log line."""
    if content is title is kind is importance is None:
        raise UsageError("nothing to change", hint="give --content, --title, --type or --importance")
    _show_memory(settings, memory_id, as_json, content=content, title=title, kind=kind, importance=importance)


@memories.command("forget")
@memory_id_argument
@click.option("--yes", is_flag=True, help="Really delete it (there is no undo but a backup).")
@json_option
@click.pass_obj
def memories_forget(settings: Settings, memory_id: str, yes: bool, as_json: bool) -> None:
    """Delete a memory for good (the gate log keeps one line that it was forgotten)."""
    if not yes:
        raise UsageError(
            f"forgetting {memory_id} deletes it for good",
            hint="add --yes to confirm (`ombre memories archive` only hides it)",
        )
    m = service(settings).forget(memory_id)
    emit(as_json, {"forgotten": m.id, "content": m.content}, lambda: f"forgot {m.id}: {m.content[:60]}")


@memories.command("migrate")
@click.option("--to", "target", required=True, help="The PostgreSQL store: postgresql://user:password@host/dbname.")
@click.option("--namespace", default=None, help="Copy only this namespace [default: every one].")
@click.option(
    "--as",
    "rename",
    default=None,
    metavar="NAME",
    help="Land the store's one namespace under this name (several people's stores into one database).",
)
@json_option
@click.pass_obj
def memories_migrate(settings: Settings, target: str, namespace: str | None, rename: str | None, as_json: bool) -> None:
    """Copy this SQLite store into PostgreSQL, where its namespaces must still be empty (one transaction,
    verified; the source untouched)."""
    url = database_url(target)
    if url is None:
        raise UsageError("--to is empty", hint="give postgresql://user:password@host/dbname")
    report = migrate(settings.memory_db, url, namespace, None if rename is None else namespace_name(rename))
    emit(
        as_json,
        report,
        lambda: (
            f"copied {report.memories} memories ({report.vectors} vectors), "
            f"{report.gate_log} gate-log lines and {report.meta} meta rows of {', '.join(report.namespaces) or 'no'} "
            f"namespace(s) to {report.target}; counts and checksums "
            f"match ({report.checksum[:12]}). Set OMBRE_DB to use it."
        ),
    )


@memories.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--follow-symlinks", is_flag=True, help="PATH may be a symbolic link: write the file it points to.")
@click.pass_obj
def memories_export(settings: Settings, path: Path, follow_symlinks: bool) -> None:
    """Write every memory as JSON lines into the regular file PATH (never over a device, pipe or folder)."""
    n = service(settings).export(path, follow_symlinks)
    click.echo(f"exported {n} memories to {path.resolve() if follow_symlinks else path}")


@memories.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--from",
    "source",
    type=click.Choice(["ombre", "ombre-brain"]),
    default="ombre",
    show_default=True,
    help="ombre: our own export (JSON lines); ombre-brain: an Ombre-Brain buckets folder or export zip.",
)
@dry_run_option
@json_option
@click.pass_obj
def memories_import(settings: Settings, path: Path, source: str, dry_run: bool, as_json: bool) -> None:
    """Add memories from an export; every line is checked as hold checks it (a refused line is named by its
    number and the rest still import); ids already present are skipped.

    With --from ombre-brain, PATH is an Ombre-Brain vault (its buckets folder) or its export zip: each
    memory, plan, feel and letter is brought over with its meaning (see docs/guide.md), the source is only
    read, a file that cannot be imported is named with the reason, and a second run adds nothing."""
    if source == "ombre-brain":
        return _import_brain(settings, path, dry_run, as_json)
    if path.is_dir():
        raise UsageError(
            f"{path} is a folder, not an export file",
            hint="give the .jsonl file from `ombre memories export`, or add --from ombre-brain "
            "for an Ombre-Brain vault",
        )
    if dry_run:
        raise UsageError("--dry-run is for --from ombre-brain", hint="an export's import shows what it refused")
    result = service(settings).import_(path)
    emit(
        as_json,
        result,
        lambda: (
            f"imported {result.added} memories, skipped {result.skipped} already present"
            + (f", refused {len(result.refused)} line(s)" if result.refused else "")
        ),
    )
    if result.refused:
        for n, why in result.refused[:50]:
            click.echo(f"  {path}:{n}: {why}", err=True)
        raise UsageError(
            f"{len(result.refused)} line(s) of {path} were refused (listed above); the others were imported",
            hint="fix those lines and import again: what is already in is skipped",
        )


def _import_brain(settings: Settings, path: Path, dry_run: bool, as_json: bool) -> None:
    done: dict[str, int] = {}

    def progress(encoder: str, batch: int) -> None:  # a large vault takes minutes to embed: say so
        before = done.get(encoder, 0)
        done[encoder] = before + batch
        if not as_json and (before == 0 or before // 1000 != done[encoder] // 1000):
            click.echo(f"  {encoder} vectors: {done[encoder]:,}", err=True)

    report = import_vault(service(settings), path, dry_run=dry_run, progress=progress)
    emit(as_json, report, lambda: render.brain_import(report))
    if report.refused:
        click.get_current_context().exit(Exit.SOME_REFUSED)
