"""The history log: one JSON line per writing run (old sid, new sid, mode, options, result)."""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, is_dataclass
from pathlib import Path

from ..wire import loads


def record(mode: str, old_sid: str, new_sid: str | None, options: object, *, ok: bool,
           error: str | None = None, summary: object = None) -> dict:
    opts = asdict(options) if is_dataclass(options) else dict(vars(options))
    opts.pop("inject_text", None)  # the handoff text itself belongs to the person, not to a log
    opts.pop("history", None)
    entry = {
        "mode": mode, "old_sid": old_sid, "new_sid": new_sid, "ok": ok,
        "options": json.loads(json.dumps(opts, default=str)),
    }
    if error:
        entry["error"] = error
    if summary is not None:
        s = asdict(summary)
        entry["result"] = {k: s[k] for k in ("events_kept", "tokens_kept", "pct_before", "pct_after",
                                             "new_path", "bytes_after") if k in s}
    return entry


def append(path: Path, entry: dict, max_bytes: int | None = None) -> dict:
    """Append one line, stamped with `at` (UTC) unless it has one, and return it as written. A single write()
    of a short line keeps concurrent appends whole. With `max_bytes`, a log past that size is first moved to
    `<name>.1` (one generation kept), so a sidecar that writes a line every pass cannot fill the disk."""
    entry = entry if "at" in entry else {"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                         **entry}
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
