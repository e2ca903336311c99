"""Replacing a small file atomically: settings.json, CLAUDE.md, exports, state files.

A reader (Claude Code, cc-connect, another ombre) sees either the old bytes or the new ones, never half.
"""
from __future__ import annotations

import os
from pathlib import Path


def replace_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` beside `path`, fsync it, then rename it over `path` (keeping the old file's mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    tmp = path.with_name(f".{path.name}.ombre-tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
