"""JSON-lines logs: one JSON object a line, appended whole and read back from the end.

The ground floor under every log Ombre keeps (the window runs' history, the keeper's, the hook's, the
distiller's, the model ledger), so it imports nothing above the wire format.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from .wire import loads


def append(path: Path, entry: dict, max_bytes: int | None = None) -> dict:
    """Append one line, stamped with `at` (UTC) unless it has one, and return it as written. A single write()
    of a short line keeps concurrent appends whole. With `max_bytes`, a log past that size is first moved to
    `<name>.1` (one generation kept), so a sidecar that writes a line every pass cannot fill the disk."""
    entry = entry if "at" in entry else {"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **entry}
    path.parent.mkdir(parents=True, exist_ok=True)
    if max_bytes is not None:
        try:
            if path.stat().st_size > max_bytes:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
    data = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return entry


def read(path: Path, limit: int = 20) -> list[dict]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()[-limit:]
    out = []
    for line in lines:
        try:
            out.append(loads(line))
        except ValueError:
            continue
    return out
