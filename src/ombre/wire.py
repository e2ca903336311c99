"""What arrives from outside — HTTP bodies, MCP arguments, command-line text — checked before it reaches
the library: text that cannot be stored as UTF-8 (a lone surrogate, as JSON's "\\ud800" escapes allow)
and numbers that are not numbers (NaN, Infinity, which Python's JSON reader accepts) are the sender's
mistake, said so plainly, never a crash deeper in.
"""
from __future__ import annotations

import json
import math

from .errors import MemoryInputError

MAX_BODY_BYTES = 1_000_000  # a hold or breath body is a few KB; a megabyte is a mistake or an attack


def _first_problem(value: object, where: str) -> str | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where} holds a lone surrogate (an unpaired \\ud800–\\udfff escape), which is not text"
    elif isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value}, not a number"
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _first_problem(key, f"a key in {where}") or _first_problem(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found = _first_problem(item, f"{where}[{n}]")
            if found:
                return found
    return None


def size_problem(raw: bytes) -> str | None:
    """Why a request body is too large to take, or None."""
    if len(raw) > MAX_BODY_BYTES:
        return f"the body is {len(raw):,} bytes, over the limit of {MAX_BODY_BYTES:,}"
    return None


def body_problem(raw: bytes) -> str | None:
    """Why a JSON request body cannot be taken as text and numbers, or None when it can (what is not JSON at
    all is left to the framework's own answer). The size is size_problem's to judge."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return _first_problem(data, "the body")


def check(value: object, what: str) -> None:
    """Raise MemoryInputError when `value` (a string, number or nested list/dict) holds something no
    store or answer can carry."""
    problem = _first_problem(value, what)
    if problem:
        raise MemoryInputError(problem, hint="send UTF-8 text and finite numbers")
