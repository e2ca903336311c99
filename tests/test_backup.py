"""Backups of the memory database: a consistent copy while writers hold, restore that
checks first and keeps the current database aside, the daily rule, and a damaged database at start naming
the newest good backup."""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import threading

import pytest

from ombre.app import open_service
from ombre.errors import StoreError, UsageError
from ombre.memory import backup
from ombre.memory.hold import HoldRequest
from ombre.settings import Settings


def _env(tmp_path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0",
            "OMBRE_URL": "http://127.0.0.1:9"}


def _cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ombre.cli", *args], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120)


def test_a_backup_taken_while_two_writers_hold_is_consistent_and_restores(tmp_path):
    settings = Settings.from_env(_env(tmp_path))
    svc = open_service(settings, arbitrate=False)
    svc.hold(HoldRequest(content="她的猫叫年糕", quote="我家猫叫年糕"))
    stop = threading.Event()

    def writer(tag: str) -> None:
        own = open_service(settings, arbitrate=False)
        n = 0
        while not stop.is_set():
            own.hold(HoldRequest(content=f"{tag} 第{n}件事：她去了第{n}家店", quote=f"第{n}家店"))
            n += 1
        own.close()

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("甲", "乙")]
    for t in threads:
        t.start()
    try:
        made = [json.loads(_cli(tmp_path, "backup", "--json").stdout)["backup"] for _ in range(3)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    for path in made:
        assert backup.problem(__import__("pathlib").Path(path)) is None
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM memories WHERE content = '她的猫叫年糕'").fetchone()[0] == 1
    listed = _cli(tmp_path, "backup", "--list")
    assert all(p in listed.stdout for p in made)
    before = svc.store.count()
    svc.close()
    out = _cli(tmp_path, "restore", made[0])
    assert out.returncode == 0 and "previous database is kept at" in out.stdout, out.stderr
    kept_aside = [p for p in (tmp_path / "ombre").iterdir() if ".before-restore-" in p.name]
    assert kept_aside and sqlite3.connect(kept_aside[0]).execute("SELECT count(*) FROM memories").fetchone()[0] == before
    restored = open_service(settings, arbitrate=False)
    assert restored.store.count() >= 1 and restored.store.count() <= before
    restored.close()


def test_restore_refuses_a_file_that_is_not_a_good_backup(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(UsageError, match="will not restore"):
        backup.restore(bad, tmp_path / "ombre.db")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    with pytest.raises(UsageError, match="not an Ombre memory database"):
        backup.restore(other, tmp_path / "ombre.db")
    assert not (tmp_path / "ombre.db").exists()


def test_serve_takes_one_a_day_and_keeps_the_newest(tmp_path):
    settings = Settings.from_env({**_env(tmp_path), "OMBRE_BACKUPS_KEEP": "3"})
    svc = open_service(settings, arbitrate=False)
    svc.hold(HoldRequest(content="她喜欢桂花乌龙", quote="我最喜欢桂花乌龙"))
    svc.close()
    assert backup.due(settings.backups_dir)
    start = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    for day in range(5):
        backup.take(settings.memory_db, settings.backups_dir, settings.backups_keep, now=start + dt.timedelta(days=day))
    assert len(backup.backups(settings.backups_dir)) == 3
    assert not backup.due(settings.backups_dir)  # the newest file was written just now


def test_a_damaged_database_at_start_names_the_newest_good_backup(tmp_path):
    settings = Settings.from_env(_env(tmp_path))
    svc = open_service(settings, arbitrate=False)
    svc.hold(HoldRequest(content="她喜欢桂花乌龙", quote="我最喜欢桂花乌龙"))
    svc.close()
    good = backup.take(settings.memory_db, settings.backups_dir, 5)
    data = bytearray(settings.memory_db.read_bytes())
    data[100:4096] = b"\x00garbage" * ((4096 - 100) // 8) + b"\x00" * ((4096 - 100) % 8)
    settings.memory_db.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        settings.memory_db.with_name(settings.memory_db.name + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreError) as err:
        backup.check_at_start(settings.memory_db, settings.backups_dir)
    assert str(good) in err.value.hint
    out = _cli(tmp_path, "serve", "--port", "0")
    assert out.returncode != 0 and "Traceback" not in out.stderr and str(good) in out.stderr
