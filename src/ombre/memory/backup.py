"""Backups of the memory database: a consistent copy while `ombre serve` runs (SQLite's online
backup API, page by page, never a file copy of a live WAL database), a restore that checks the file first
and keeps the current database aside, a daily copy taken by `ombre serve`, and at start a check that names
the newest good backup when the database is damaged.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from pathlib import Path

from ..errors import OmbreError, StoreError, UsageError

PREFIX, SUFFIX = "ombre-", ".db"
DAY = dt.timedelta(days=1)


def folder(backups_dir: Path) -> Path:
    return backups_dir / "memory"


def _stamp(now: dt.datetime) -> str:
    return now.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def backups(backups_dir: Path) -> list[Path]:
    """The database backups, oldest first."""
    where = folder(backups_dir)
    return sorted(where.glob(f"{PREFIX}*{SUFFIX}")) if where.exists() else []


def problem(path: Path, thorough: bool = False) -> str | None:
    """Why `path` is not a usable Ombre memory database, or None when it is (`thorough`: SQLite's full
    integrity check, every index against its table, rather than the quick one)."""
    if path.is_dir():
        return f"{path} is a folder, not a database file"
    if not path.is_file():
        return f"{path} does not exist" if not path.exists() else f"{path} is not a regular file"
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            check = db.execute("PRAGMA integrity_check" if thorough else "PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                return f"{path} is damaged ({check})"
            if db.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone() is None:
                return f"{path} is a SQLite file but not an Ombre memory database (no _migrations table)"
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return f"{path} is not a readable SQLite database ({exc})"
    return None


def take(db_path: Path, backups_dir: Path, keep: int, now: dt.datetime | None = None) -> Path:
    """A consistent copy of the database (safe while other processes write to it), then the oldest beyond
    `keep` are removed. The copy is written under a temporary name and renamed when complete."""
    if not db_path.exists():
        raise UsageError(
            f"there is no memory database at {db_path} to back up", hint="hold something first, or check OMBRE_HOME"
        )
    now = now or dt.datetime.now(dt.timezone.utc)
    where = folder(backups_dir)
    where.mkdir(parents=True, exist_ok=True)
    final = where / f"{PREFIX}{_stamp(now)}{SUFFIX}"
    try:
        _copy(db_path, final)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(
            f"the backup could not be written: {exc}", hint=f"check the space and rights of {where}"
        ) from exc
    for old in backups(backups_dir)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)
    return final


def _copy(source: Path, target: Path) -> None:
    """Copy a database with SQLite's backup API into a temporary file beside `target`, then rename it:
    `target` is either whole or untouched."""
    tmp = target.with_name(target.name + ".part")
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
        dst = sqlite3.connect(tmp)
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def due(backups_dir: Path, now: dt.datetime | None = None) -> bool:
    """Whether a day has passed since the newest backup (or there is none)."""
    newest = backups(backups_dir)[-1:]
    if not newest:
        return True
    now = now or dt.datetime.now(dt.timezone.utc)
    age = now.timestamp() - newest[0].stat().st_mtime
    return age >= DAY.total_seconds()


def daily(db_path: Path, backups_dir: Path, keep: int, check_every_s: float = 3600.0) -> None:
    """`ombre serve`'s backup loop: one a day, the newest `keep` kept. A failed backup is tried again at the
    next check; it never stops the service."""
    while True:
        if due(backups_dir):
            try:
                take(db_path, backups_dir, keep)
            except OmbreError:
                pass
        time.sleep(check_every_s)


def newest_good(backups_dir: Path) -> Path | None:
    return next((b for b in reversed(backups(backups_dir)) if problem(b) is None), None)


def restore(source: Path, db_path: Path, now: dt.datetime | None = None) -> Path | None:
    """Put `source` in place of the database and return where the current one (with its WAL files) was kept
    (None when there was none). Nothing is moved until a copy of `source` sits checked beside the database;
    if putting it in place fails, the current database is put back and the error says so."""
    source = Path(source)
    live = [db_path.with_name(db_path.name + suffix) for suffix in ("", "-wal", "-shm")]
    if any(p.exists() and source.exists() and os.path.samefile(source, p) for p in live):
        raise UsageError(
            f"will not restore: {source} is the live memory database itself",
            hint="give a backup (`ombre backup --list`), not the database it would replace",
        )
    wrong = problem(source, thorough=True)
    if wrong:
        raise UsageError(f"will not restore: {wrong}", hint="pick another file from `ombre backup --list`")
    now = now or dt.datetime.now(dt.timezone.utc)
    staged = db_path.with_name(f"{db_path.name}.restoring-{_stamp(now)}")
    try:
        _copy(source, staged)
        wrong = problem(staged, thorough=True)
        if wrong:
            raise StoreError(f"the copy of {source} did not check out: {wrong}", hint="nothing was changed")
    except (sqlite3.Error, OSError) as exc:
        _remove(staged)
        raise StoreError(
            f"could not copy {source} beside the database: {exc}",
            hint=f"check the space and rights of {db_path.parent}; nothing was changed",
        ) from exc
    except BaseException:
        _remove(staged)
        raise
    _remove(staged, keep_main=True)  # the check's empty -wal/-shm: the copy itself is whole
    aside = db_path.with_name(f"{db_path.name}.before-restore-{_stamp(now)}") if db_path.exists() else None
    moved: list[tuple[Path, Path]] = []
    try:
        for p in live:
            if aside is not None and p.exists():
                kept = aside.with_name(aside.name + p.name[len(db_path.name) :])
                os.replace(p, kept)
                moved.append((kept, p))
        os.replace(staged, db_path)
    except OSError as exc:
        for kept, p in reversed(moved):  # put the live database back as it was
            os.replace(kept, p)
        _remove(staged)
        raise StoreError(
            f"restoring failed ({exc}); the current database was put back as it was",
            hint=f"check the rights of {db_path.parent} and try again",
        ) from exc
    return aside


def _remove(db: Path, keep_main: bool = False) -> None:
    """A database file and its WAL companions (only the companions with `keep_main`)."""
    for suffix in ("-wal", "-shm") if keep_main else ("", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


def check_at_start(db_path: Path, backups_dir: Path) -> None:
    """Refuse to serve a damaged database, naming the newest good backup to restore."""
    if not db_path.exists():
        return
    wrong = problem(db_path)
    if wrong:
        good = newest_good(backups_dir)
        raise StoreError(
            f"the memory database is damaged: {wrong}",
            hint=(
                f"restore the newest good backup: ombre restore {good}"
                if good
                else "no good backup was found; `ombre memories export` from a copy may save what is readable"
            ),
        )
