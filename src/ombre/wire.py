"""What arrives from outside — HTTP bodies, MCP arguments, command-line text, the lines of files we read —
checked before it reaches the library: text that cannot be stored as UTF-8 (a lone surrogate, as JSON's
"\\ud800" escapes allow), numbers that are not numbers (NaN, Infinity, which Python's JSON reader accepts),
and JSON nested deeper than any real body or transcript line (the parser, and every walk over what it
returns, recurses: 2,000 levels of `[` is a crash, not data) are the sender's mistake, said so plainly,
never a crash deeper in.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from .errors import MemoryInputError

# not typing.TYPE_CHECKING: the per-turn hook imports this module, and typing costs it ~5 ms; mypy reads it as True
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_BODY_BYTES = 1_000_000  # a hold or breath body is a few KB; a megabyte is a mistake or an attack
# Claude Code's deepest lines (tool inputs and results inside message content) nest a few dozen levels; a
# hold body, five. Past this a walk over the value could reach Python's recursion limit.
MAX_DEPTH = 100
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


class TooDeep(ValueError):
    """JSON nested deeper than MAX_DEPTH."""


def depth_over(raw: bytes | str, limit: int = MAX_DEPTH) -> int | None:
    """How deep `raw` nests when that is more than `limit`, else None; read before any parser recurses.
    Cheap for what is not deep: the brackets are counted first, strings are only skipped when there are many."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") <= limit:
        return None
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub(b"", data)):
        if m.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest if deepest > limit else None


# Any, as json.loads: callers take the shape they expect and catch what a wrong one raises
def loads(raw: bytes | str, what: str = "the JSON") -> Any:
    """json.loads for anything from outside: ValueError (a TooDeep) for nesting past MAX_DEPTH, said so."""
    deep = depth_over(raw)
    if deep is not None:
        raise TooDeep(f"{what} nests {deep} levels deep, over the limit of {MAX_DEPTH}")
    try:
        return json.loads(raw)
    except RecursionError:
        raise TooDeep(f"{what} nests deeper than the JSON reader can follow") from None


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
        data = loads(raw, "the body")
    except TooDeep as exc:
        return str(exc)
    except (ValueError, UnicodeDecodeError):
        return None
    return _first_problem(data, "the body")


def check(value: object, what: str) -> None:
    """Raise MemoryInputError when `value` (a string, number or nested list/dict) holds something no
    store or answer can carry."""
    problem = _first_problem(value, what)
    if problem:
        raise MemoryInputError(problem, hint="send UTF-8 text and finite numbers")


# -- who may ask: the names a request may carry, and where a browser's change may come from ------------------
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def allowed_hosts(bind: str = "127.0.0.1", extra: Iterable[str] = ()) -> frozenset[str]:
    """The names a request's Host may carry: loopback's, the address the service was bound to, and those
    given with --allow-host. Anything else is another site's name pointed at this machine (DNS rebinding)."""
    names = {*LOOPBACK, *(h.strip().strip("[]").lower() for h in extra if h.strip())}
    if bind not in WILDCARD:
        names.add(bind.strip("[]").lower())
    return frozenset(names)


def host_name(netloc: str) -> str:
    """The host part of `host[:port]` or `[v6]:port`, lower-cased."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def misdirected(
    method: str, host: str, origin: str | None, hosts: frozenset[str], what: str
) -> tuple[int, dict] | None:
    """(status, body) refusing a request sent to a name this service was not started for (421), or a
    browser's state-changing request from another origin (403); None for a request to take. A browser names
    the page's origin (scheme, host and port) on every cross-site POST: only a page this service served
    carries the Host the request was sent to. A request without Origin is not a browser's cross-site one."""
    named = host_name(host)
    if named not in hosts:
        return 421, {
            "error": "misdirected",
            "message": f"{what} does not answer to the name {named or '(none)'!r}",
            "hint": f"use 127.0.0.1 or localhost, or start it with --allow-host {named or 'NAME'}",
        }
    if method in SAFE_METHODS or origin is None:
        return None
    parts = urlsplit(origin)
    if origin == "null" or parts.scheme not in ("http", "https") or parts.netloc.lower() != host.strip().lower():
        return 403, {
            "error": "forbidden",
            "message": f"a request from {origin} (another origin) may not change anything here",
            "hint": "use the dashboard or the API from this service's own address",
        }
    return None
