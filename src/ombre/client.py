"""The client side of `ombre serve`: one POST of JSON over loopback HTTP, standard library only.

Used where every import counts (the per-turn hook) and where the memory service is optional (the tunnel's
hold, the gateway's remote recall): any failure is None, never an exception. `via_serve`, for the CLI, is the
one call that raises, once the service has answered.
"""

from __future__ import annotations

import json
import socket
import time

from .errors import UsageError
from .settings import Settings  # imported anyway wherever this is (and typing, for TYPE_CHECKING, costs ~3 ms)

# A block is a few KB; an answer past this is a broken or hostile service, not memory: stop reading.
# (Unbounded, a service that never stopped sending cost the hook gigabytes.)
MAX_ANSWER_BYTES = 1_000_000


def post_json(url: str, body: dict, *, token: str | None, timeout: float) -> dict | None:
    """POST JSON to the memory service; None on any failure (refused, timeout, non-2xx, not JSON).

    Plain http (the service listens on loopback) is spoken over a socket: urllib and http.client would
    cost the hook ~35 ms of imports on every turn. An https URL goes through urllib.
    """
    if timeout <= 0:
        return None
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    try:
        post = _post_http if url.startswith("http://") else _post_urllib
        raw = post(url, data, token, timeout)
        answer = json.loads(raw) if raw is not None else None
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


def host_port(hostport: str) -> tuple[str, int]:
    """`127.0.0.1:8765`, `localhost` or `[::1]:8765` as (host, port); port 80 when none is given."""
    if hostport.startswith("["):  # an IPv6 literal keeps its colons inside the brackets
        host, _, rest = hostport[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = hostport.partition(":")
    return host, int(port or 80)


def _post_http(url: str, data: bytes, token: str | None, timeout: float) -> bytes | None:
    deadline = time.monotonic() + timeout
    hostport, _, path = url[len("http://") :].partition("/")
    host, port = host_port(hostport)
    head = (
        f"POST /{path} HTTP/1.1\r\nHost: {hostport}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n"
    )
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    with socket.create_connection((host, port), timeout=timeout) as conn:
        conn.sendall(head.encode("latin-1") + b"\r\n" + data)
        chunks, received = [], 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            received += len(chunk)
            if received > MAX_ANSWER_BYTES:
                return None
    response = b"".join(chunks)
    header, _, payload = response.partition(b"\r\n\r\n")
    status = header.split(b" ", 2)
    if len(status) < 2 or not status[1].startswith(b"2"):
        return None
    if b"transfer-encoding: chunked" in header.lower():
        payload = _unchunk(payload)
    return payload


def _unchunk(payload: bytes) -> bytes:
    out, rest = [], payload
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def _post_urllib(url: str, data: bytes, token: str | None, timeout: float) -> bytes | None:
    import urllib.request

    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=timeout) as response:
        answer = response.read(MAX_ANSWER_BYTES + 1)
        return None if len(answer) > MAX_ANSWER_BYTES else answer


def health(url: str, timeout: float, token: str | None = None) -> dict | None:
    """`ombre serve`'s /health at `url` (the service's base URL), or None when nothing answers with JSON.
    Without the owner's token (on a service that has one) it says only whether it is ok."""
    import urllib.request

    request = urllib.request.Request(url + "/health", headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.loads(response.read(MAX_ANSWER_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return None
    return answer if isinstance(answer, dict) else None


def via_serve(settings: Settings, route: str, body: dict) -> dict | None:
    """Ask a running `ombre serve` on this very store (its models are loaded: no model load per command); None
    when none answers, and the caller opens the store itself. Unlike the calls above, once the service has
    answered /health its answer is the answer: a refusal is raised as such, and a lost reply is never retried
    locally (a hold could land twice)."""
    import urllib.error
    import urllib.request

    up = health(settings.memory_url, timeout=0.5, token=settings.token)
    # ours when it serves this store (the owner is told which), or this namespace to this namespace's token
    # (which is not told the store); anything else — nothing, another store, a service that says only "ok" —
    # is not ours to write through
    ours = (
        up is not None
        and up.get("namespace") == settings.namespace
        and (up.get("database") == settings.database_label or "database" not in up and bool(settings.token))
    )
    if not ours:
        return None
    headers = {"content-type": "application/json"} | (
        {"authorization": f"Bearer {settings.token}"} if settings.token else {}
    )
    request = urllib.request.Request(
        settings.memory_url + route, json.dumps(body, ensure_ascii=False).encode(), headers
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            answer = json.loads(exc.read())
        except ValueError:
            answer = {}
        raise UsageError(
            answer.get("message") or f"ombre serve refused the request ({exc.code})", hint=answer.get("hint", "")
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"ombre serve did not answer ({exc}); the request may or may not have been carried out",
            hint="check with `ombre memories list`, then try again",
        ) from None
