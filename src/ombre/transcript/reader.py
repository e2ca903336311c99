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

from ..wire import MAX_DEPTH, TooDeep, depth_over


@dataclass(frozen=True, slots=True)
class RawLine:
    lineno: int  # 1-based, as an editor shows it
    offset: int  # byte offset of the first byte of the line
    raw: bytes  # the line as read, line break included (no copy is made of a multi-megabyte line)
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


# the C scanner json.loads itself ends up in
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # JSONDecoder.__init__ sets it; typeshed omits it


def parse_line(chunk: bytes) -> dict:
    """One line as a JSON object, with the stdlib parser (ValueError when it is not one).

    Goes straight to the C scanner: a transcript has hundreds of thousands of lines and json.loads
    spends as long on its Python-level wrappers (encoding sniffing, two regex matches) as on short lines.
    """
    deep = depth_over(chunk)
    if deep is not None:  # no Claude Code line nests like this; every walk over it would recurse as deep
        raise TooDeep(f"the line nests {deep} levels deep, over the limit of {MAX_DEPTH}")
    text = chunk.decode("utf-8")
    try:
        if text[:1] != "{":
            obj = json.loads(text)
        else:
            try:
                obj, end = _scan_once(text, 0)
            except StopIteration as stop:
                raise json.JSONDecodeError("Expecting value", text, stop.value) from None
            if end != len(text) and text[end:].strip():
                raise json.JSONDecodeError("Extra data", text, end)
    except RecursionError:
        raise TooDeep("the line nests deeper than the JSON reader can follow") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    return obj


def iter_lines(path: Path, upto: int | None = None) -> Iterator[RawLine]:
    """Yield every non-empty line of `path` (up to byte `upto`) with its parsed object.

    Reads in binary so offsets are exact and no decode/encode round trip can alter a line.
    """
    offset = 0
    with open(path, "rb", buffering=1 << 20) as f:
        for lineno, chunk in enumerate(f, start=1):
            if upto is not None and offset >= upto:
                break
            start = offset
            offset += len(chunk)
            if chunk[:1] != b"{" and not chunk.strip():
                continue
            try:
                obj = parse_line(chunk)  # the trailing line break is JSON whitespace; slicing it would copy
            except (ValueError, UnicodeDecodeError) as exc:
                yield RawLine(lineno, start, chunk, None, describe_error(exc, chunk))
                continue
            yield RawLine(lineno, start, chunk, obj)


def describe_error(exc: Exception, chunk: bytes) -> str:
    if not chunk.endswith(b"\n"):
        return f"incomplete last line ({len(chunk)} bytes, no newline): {exc}"
    return str(exc)
