"""The client side of `ombre serve`: one POST of JSON over loopback HTTP, standard library only.

Used where every import counts (the per-turn hook) and where the memory service is optional (the tunnel's
hold, the gateway's remote recall): any failure is None, never an exception.
"""
from __future__ import annotations

import json
import socket
import time

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
        raw = _post_http(url, data, token, timeout) if url.startswith("http://") else _post_urllib(url, data, token, timeout)
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
    hostport, _, path = url[len("http://"):].partition("/")
    host, port = host_port(hostport)
    head = (f"POST /{path} HTTP/1.1\r\nHost: {hostport}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n")
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
        rest = rest[size + 2:]
    return b"".join(out)


def _post_urllib(url: str, data: bytes, token: str | None, timeout: float) -> bytes:
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
