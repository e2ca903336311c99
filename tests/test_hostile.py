"""Hostile and broken input (issue #16 item 5): what cannot be text or a number is the sender's mistake,
answered 422 with what was wrong — over a real `ombre serve`, from the CLI and from the library — never a
500 or a traceback, and nothing is written."""
from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from ombre.errors import MemoryInputError
from ombre.memory.breath import BreathRequest
from ombre.memory.hold import HoldRequest
from ombre.memory.service import MemoryService
from ombre.settings import Settings
from tests.servers import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("hostile"))
    yield s
    s.stop()


@pytest.mark.parametrize("path,body", [
    ("/v1/hold", '{"content": "\\ud800 hi"}'),
    ("/v1/hold", '{"content": "ok", "quote": "\\ud83d"}'),
    ("/v1/hold", '{"content": "ok", "valence": NaN}'),
    ("/v1/hold", '{"content": "ok", "importance": Infinity}'),
    ("/v1/breath", '{"query": "\\udc00"}'),
    ("/v1/breath", '{"query": "a", "max_results": NaN}'),
    ("/v1/breath", '{"query": "a", "context": [{"role": "user", "text": "\\udfff"}]}'),
    ("/v1/inject", '{"prompt": "\\ud800", "session_id": "s"}'),
    ("/v1/inject", '{"prompt": "hi", "budget_ms": -Infinity}'),
])
def test_lone_surrogates_and_nan_are_422_not_500(server, path, body):
    r = httpx.post(server.url + path, content=body.encode(), headers={"content-type": "application/json"},
                   timeout=30)
    assert r.status_code == 422, r.text
    answer = r.json()
    assert answer["error"] == "MemoryInputError"
    assert "surrogate" in answer["message"] or "not a number" in answer["message"]


def test_an_oversized_body_is_413(server):
    r = httpx.post(server.url + "/v1/hold", json={"content": "长" * 600_000}, timeout=30)
    assert r.status_code == 413 and "over the limit" in r.json()["message"]


def test_the_library_refuses_what_cannot_be_stored(tmp_path):
    svc = MemoryService(Settings.from_env({"HOME": str(tmp_path), "OMBRE_VECTORS": "0"}))
    try:
        with pytest.raises(MemoryInputError, match="surrogate"):
            svc.hold(HoldRequest(content="a\ud800b"))
        with pytest.raises(MemoryInputError, match="surrogate"):
            svc.breath(BreathRequest(query="\udc00"))
        assert svc.store.count() == 0
    finally:
        svc.close()


def test_the_cli_says_what_is_wrong_with_undecodable_arguments(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0"}
    bad = b"\xff\xfe broken"  # not UTF-8: Python hands it to us as lone surrogates
    out = subprocess.run([sys.executable, "-m", "ombre.cli", "hold", bad], env=env, capture_output=True,
                         timeout=60)
    assert out.returncode != 0 and b"Traceback" not in out.stderr
    assert b"surrogate" in out.stderr or b"surrogate" in out.stdout


def test_the_hook_client_stops_reading_a_never_ending_answer():
    import socket
    import threading
    import time

    from ombre.client import MAX_ANSWER_BYTES, post_json

    sent = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"text\": \"")
        try:
            while sum(sent) < 50 * MAX_ANSWER_BYTES:  # 50 MB, unless the client hangs up first
                conn.sendall(b"x" * 65536)
                sent.append(65536)
        except OSError:
            pass
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started = time.monotonic()
    answer = post_json(f"http://127.0.0.1:{listener.getsockname()[1]}/v1/inject", {"prompt": "hi"}, token=None,
                       timeout=20)
    assert answer is None and time.monotonic() - started < 10
    thread.join(timeout=10)
    listener.close()
    assert sum(sent) < 10 * MAX_ANSWER_BYTES  # it hung up soon after the cap, not at the sender's end
