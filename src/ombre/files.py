"""Replacing a small file atomically (settings.json, CLAUDE.md, exports, state files), and choosing the file a
command may write.

A reader (Claude Code, cc-connect, another ombre) sees either the old bytes or the new ones, never half.
"""

from __future__ import annotations

import os
import stat
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


def output_file(path: Path, follow_symlinks: bool = False) -> Path:
    """The regular file a command may (re)write at `path`: `path` itself, or with `follow_symlinks` the file
    a symbolic link there points to. A device, a FIFO, a socket or a folder is never replaced by a file (as
    root, `export /dev/full` would have put a regular file where the device was), and a link is written
    through only when asked (replacing it would cut the link instead)."""
    from .errors import UsageError

    path = Path(path)
    if path.is_symlink():
        if not follow_symlinks:
            raise UsageError(
                f"{path} is a symbolic link (to {os.readlink(path)})",
                hint="give the file it points to, or pass --follow-symlinks to write through it",
            )
        path = path.resolve()
    try:
        st = path.stat()
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise UsageError(
                f"the folder {path.parent} does not exist", hint="create it first, or pick another path"
            ) from None
        return path
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path} is a folder", hint="give a file name inside it")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(
            f"{path} is not a regular file (a device, a pipe or a socket)",
            hint="give the path of an ordinary file; nothing was written",
        )
    return path
