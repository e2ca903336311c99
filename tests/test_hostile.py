"""Hostile and broken input: what cannot be text or a number is the sender's mistake,
answered 422 with what was wrong — over a real `ombre serve`, from the CLI and from the library — never a
500 or a traceback, and nothing is written."""
from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from ombre.app import open_service
from ombre.errors import MemoryInputError
from ombre.memory.breath import BreathRequest
from ombre.memory.hold import HoldRequest
from ombre.settings import Settings
from tests.support.servers import Server


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
    mcp = httpx.post(server.url + "/mcp/", content=b"{" + b" " * 1_100_000 + b"}",
                     headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
                     timeout=30)
    assert mcp.status_code == 413


def test_the_library_refuses_what_cannot_be_stored(tmp_path):
    svc = open_service(Settings.from_env({"HOME": str(tmp_path), "OMBRE_VECTORS": "0"}), arbitrate=False)
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


# -- a full disk -------------------------------------------------------------------------
def _session(tmp_path):
    import random

    from tests.support.transcript_gen import companion_session

    path = tmp_path / "0b1e6f5e-1111-4222-8333-444455556666.jsonl"
    path.write_text(companion_session(random.Random(4), turns=6, payload_chars=20_000).text(), encoding="utf-8")
    return path


def test_no_room_for_the_new_session_is_a_clear_error_and_leaves_nothing(tmp_path):
    """The write runs under a file-size limit (RLIMIT_FSIZE: EFBIG, as a full disk gives ENOSPC)."""
    path = _session(tmp_path)
    original = path.read_bytes()
    script = ("import resource, signal, sys; from pathlib import Path; "
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)); "
              "from ombre.cli import main; sys.argv = ['ombre', 'forge', sys.argv[1]]; main()")
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre")}
    out = subprocess.run([sys.executable, "-c", script, str(path)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert "no room on the disk" in out.stderr + out.stdout
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [path.name]  # no half session, no temp file
    assert not list(tmp_path.glob(".*ombre-tmp")) and path.read_bytes() == original


def test_a_new_session_the_history_cannot_record_is_taken_back(tmp_path):
    from pathlib import Path

    from ombre.errors import DiskFullError
    from ombre.window import forge

    path = _session(tmp_path)
    with pytest.raises(DiskFullError, match="removed"):
        forge.run(path, forge.ForgeOptions(history=Path("/dev/full")))  # every write there is ENOSPC
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [path.name]


def test_recall_answers_on_a_full_database_and_says_the_disk_is_full(tmp_path):
    """SQLite's own full condition (max_page_count at the current size, every free byte taken): the
    turn's block still comes back; the bookkeeping it could not save is named in `degraded`."""
    from ombre.errors import StoreError
    from ombre.inject.cards import InjectRequest, turn_block

    svc = open_service(Settings.from_env({"HOME": str(tmp_path), "OMBRE_VECTORS": "0"}), arbitrate=False)
    try:
        for i in range(30):
            svc.hold(HoldRequest(content=f"她喜欢第{i}种花，叫花{i}号", quote=f"我喜欢第{i}种花"))
        db = svc.store._db  # the test fills the real database; nothing below this line goes around the store
        db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
        n = 0
        for size in (3000, 300, 30, 3):
            with pytest.raises(StoreError, match="full"):
                while True:
                    svc.store.set_meta(f"filler:{n}", "x" * size)
                    n += 1
        block = turn_block(svc, InjectRequest("她喜欢什么花", session_id="a-session-on-a-full-disk"))
        assert block.cards and any("磁盘已满" in d for d in block.degraded), block.degraded
        assert svc.breath(BreathRequest("她喜欢什么花")).cards
    finally:
        svc.close()
