"""Streaming, lossless reader of Claude Code session files.

Every line is yielded with its byte offset and raw bytes, so a writer can copy a line exactly as it was.
A line that is not JSON is reported with its line number instead of stopping the read: Claude Code itself
skips such lines on `--resume`, and we must be able to say where they are.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


@dataclass(frozen=True, slots=True)
class RawLine:
    lineno: int  # 1-based, as an editor shows it
    offset: int  # byte offset of the first byte of the line
    raw: bytes  # the line without its trailing newline
    obj: dict | None  # the parsed object, or None when the line is malformed
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a file looked like when we read it; used to notice a live session writing under us."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> "Fingerprint":
        st = os.stat(path)
        return cls(st.st_size, st.st_mtime_ns)


def iter_lines(path: Path, upto: int | None = None) -> Iterator[RawLine]:
    """Yield every non-empty line of `path` (up to byte `upto`) with its parsed object.

    Reads in binary so offsets are exact and no decode/encode round trip can alter a line.
    """
    offset = 0
    with open(path, "rb") as f:
        for lineno, chunk in enumerate(f, start=1):
            if upto is not None and offset >= upto:
                break
            start = offset
            offset += len(chunk)
            raw = chunk.rstrip(b"\r\n")
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                yield RawLine(lineno, start, raw, None, _short_error(exc, chunk))
                continue
            if not isinstance(obj, dict):
                yield RawLine(lineno, start, raw, None, f"expected a JSON object, found {type(obj).__name__}")
                continue
            yield RawLine(lineno, start, raw, obj)


def read_raw(path: Path, offset: int) -> bytes:
    """The raw bytes of the line starting at `offset` (without its newline)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return f.readline().rstrip(b"\r\n")


def _short_error(exc: Exception, chunk: bytes) -> str:
    if not chunk.endswith(b"\n"):
        return f"incomplete last line ({len(chunk)} bytes, no newline): {exc}"
    return str(exc)
