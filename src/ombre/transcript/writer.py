"""Writing a new session file atomically: temporary name, verify, then rename into place.

The verify step runs before the file has its final name, so nothing (a bridge, Claude Code's `--resume`)
can ever see a half-written or invalid session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Iterable


def dump_line(obj: dict) -> bytes:
    """Compact JSON as Claude Code writes it (JSON.stringify: no spaces, non-ASCII kept)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (valid in JSON, not in UTF-8): escape it as JSON.stringify does.
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def write_atomic(final: Path, lines: Iterable[bytes], verify: Callable[[Path], None], mode: int = 0o600) -> int:
    """Write `lines` to a temporary file beside `final`, call `verify` on it, then give it its name.

    Returns the number of bytes written. On any failure the temporary file is removed and `final`
    does not exist. `final` must not exist beforehand: a new session never overwrites anything. The file
    is created with `mode` (a session holds a person's conversation: private unless its original was not).
    """
    if final.exists():
        raise FileExistsError(final)
    tmp = final.with_name(f".{final.name}.ombre-tmp")
    size = 0
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        os.fchmod(fd, mode)  # the umask must not widen or narrow what the original had
        with os.fdopen(fd, "wb") as f:
            for line in lines:
                f.write(line)
                f.write(b"\n")
                size += len(line) + 1
            f.flush()
            os.fsync(f.fileno())
        verify(tmp)
        # link() refuses to replace an existing file, unlike rename().
        os.link(tmp, final)
        os.unlink(tmp)
        _fsync_dir(final.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
