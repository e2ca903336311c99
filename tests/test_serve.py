"""The memory service over a real HTTP server on 127.0.0.1 and the MCP SDK's own clients (stdio and HTTP)."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.servers import OMBRE, Server, free_port, ombre_env


@pytest.fixture
def server(tmp_path: Path):
    s = Server(tmp_path)
    yield s
    s.stop()


def test_http_hold_breath_get_and_health(server):
    r = httpx.post(server.url + "/v1/hold", json={"content": "每周三晚上我们语音", "type": "承诺",
                                                  "quote": "以后每周三晚上都语音吧", "importance": 8}, timeout=30)
    assert r.status_code == 200 and r.json()["stored"] and r.json()["status"] == "confirmed"
    mid = r.json()["id"]
    found = httpx.post(server.url + "/v1/breath", json={"query": "什么时候打电话"}, timeout=30).json()
    assert found["cards"][0]["id"] == mid and found["cards"][0]["why"]["relevance"] > 0
    assert httpx.get(f"{server.url}/v1/memories/{mid}").json()["evidence"]["quote"] == "以后每周三晚上都语音吧"
    assert httpx.get(f"{server.url}/v1/memories/nope").status_code == 404
    health = httpx.get(server.url + "/health").json()
    assert health["status"] == "ok" and health["memories"] == 1
    # what a person looks for when something seems off
    assert health["version"] and health["backend"] == "sqlite" and health["database"].endswith("ombre.db")
    for _ in range(50):  # serve takes the day's backup at start, beside serving
        if health["last_backup"]:
            break
        time.sleep(0.1)
        health = httpx.get(server.url + "/health").json()
    assert "models" in health and health["last_backup"].endswith(".db")


def test_http_bad_input_is_a_4xx_with_a_message_and_writes_nothing(server):
    bad = [
        dict(content="x" * 10_000), dict(content=""), dict(content="x", importance=42), dict(content="x", type="八卦"),
    ]
    for body in bad:
        r = httpx.post(server.url + "/v1/hold", json=body, timeout=30)
        assert r.status_code == 422 and r.json()["message"], body
    r = httpx.post(server.url + "/v1/hold", content=b"{not json", headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500 and "detail" in r.json()
    assert httpx.get(server.url + "/health").json()["memories"] == 0


def test_a_token_is_required_when_set(tmp_path):
    s = Server(tmp_path, token="s3cret")
    try:
        assert httpx.post(s.url + "/v1/breath", json={"query": "x"}).status_code == 401
        wrong = httpx.post(s.url + "/v1/breath", json={"query": "x"}, headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "token" in wrong.json()["message"]
        ok = httpx.post(s.url + "/v1/breath", json={"query": "x"}, headers={"authorization": "Bearer s3cret"},
                        timeout=30)
        assert ok.status_code == 200
    finally:
        s.stop()


def test_serving_off_loopback_without_a_token_is_refused(tmp_path):
    out = subprocess.run(OMBRE + ["serve", "--host", "0.0.0.0", "--port", str(free_port())], env=ombre_env(tmp_path),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "without a bearer token" in out.stderr


async def _exercise(session: ClientSession) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {"hold", "breath"} <= set(tools)
    assert {"content", "tags", "importance", "pinned", "valence", "arousal"} <= set(
        tools["hold"].inputSchema["properties"])
    assert {"query", "max_tokens", "domain", "valence", "arousal", "max_results", "is_session_start"} <= set(
        tools["breath"].inputSchema["properties"])
    held = await session.call_tool("hold", {"content": "她养了一只猫叫年糕", "tags": "猫,宠物",
                                            "quote": "我家猫叫年糕"})
    assert held.structuredContent["stored"] and held.structuredContent["status"] == "confirmed"
    found = await session.call_tool("breath", {"query": "她的猫叫什么"})
    assert "年糕" in found.structuredContent["text"]
    bad = await session.call_tool("hold", {"content": "x", "importance": 99})
    assert bad.structuredContent["error"] and not bad.structuredContent["stored"]


def test_mcp_over_streamable_http(server):
    async def run() -> None:
        async with streamable_http_client(server.url + "/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await _exercise(session)

    asyncio.run(run())


def test_mcp_over_stdio(tmp_path):
    # no service answers at OMBRE_URL: the stdio process answers from the store itself
    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ombre.cli", "serve", "--stdio"],
                                       env=ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}"))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await _exercise(session)

    asyncio.run(run())


def test_concurrent_holds_through_http_and_cli_lose_nothing(server, tmp_path):
    n = 8
    http_script = (
        "import httpx,sys\n"
        f"for i in range({n}):\n"
        f"    r = httpx.post('{server.url}/v1/hold', json={{'content': f'并发写入 {{sys.argv[1]}} 第{{i}}条'}}, timeout=60)\n"
        "    assert r.status_code == 200 and r.json()['stored'], r.text\n")
    cli_loop = (f"for i in $(seq 0 {n - 1}); do {sys.executable} -m ombre.cli hold \"并发写入 $1 第${{i}}条\" "
                ">/dev/null || exit 1; done")
    env = ombre_env(tmp_path, OMBRE_VECTORS="0")
    procs = [subprocess.Popen([sys.executable, "-c", http_script, f"h{k}"], env=env) for k in range(2)]
    procs += [subprocess.Popen(["bash", "-c", cli_loop, "bash", f"c{k}"], env=env) for k in range(2)]
    assert [p.wait(300) for p in procs] == [0, 0, 0, 0]
    listed = subprocess.run(OMBRE + ["memories", "list", "--limit", "1000", "--json"], env=env,
                            capture_output=True, text=True, check=True)
    contents = [m["content"] for m in json.loads(listed.stdout)]
    expected = {f"并发写入 {who} 第{i}条" for who in ("h0", "h1", "c0", "c1") for i in range(n)}
    assert len(contents) == len(expected) and set(contents) == expected  # nothing lost, nothing twice


def test_hold_and_breath_use_a_running_serve_on_the_same_database(tmp_path):
    """Issue #17 item 8: with `ombre serve` up on this OMBRE_HOME, the CLI asks it (its models are loaded)
    instead of opening the store and loading them again; a serve for another home is not used."""
    from tests.support.servers import Server, ombre_env

    server = Server(tmp_path, token="tok")
    try:
        cli = lambda *a, **e: subprocess.run([sys.executable, "-m", "ombre.cli", *a],  # noqa: E731
                                             env={**ombre_env(tmp_path, OMBRE_URL=server.url), **e},
                                             capture_output=True, text=True, timeout=120)
        # without the token the service says only that it is up, not which store it serves: the CLI
        # uses the store itself, as with no service (it has the file, so the token guards nothing from it)
        direct = cli("hold", "她每周三去游泳", "--quote", "我每周三去游泳")
        assert direct.returncode == 0, direct.stderr
        held = cli("hold", "她喜欢桂花乌龙", "--quote", "我最喜欢桂花乌龙", "--json", OMBRE_TOKEN="tok")
        assert held.returncode == 0 and json.loads(held.stdout)["stored"], held.stderr
        found = cli("breath", "她爱喝什么茶", OMBRE_TOKEN="tok")
        assert found.returncode == 0 and "桂花乌龙" in found.stdout
        swims = httpx.post(server.url + "/v1/breath", json={"query": "她什么时候游泳"}, timeout=30,
                           headers={"Authorization": "Bearer tok"}).json()
        assert "游泳" in json.dumps(swims, ensure_ascii=False)  # one store: the service finds the direct write
        elsewhere = cli("breath", "她爱喝什么茶", OMBRE_HOME=str(tmp_path / "other-home"))
        assert elsewhere.returncode == 0 and "桂花乌龙" not in elsewhere.stdout  # another home: its own store
    finally:
        server.stop()


def test_mcp_over_stdio_relays_to_the_running_service(tmp_path):
    """What Claude Code starts for each process relays to the service that runs (with its token): the memory
    lands in that service's store, and the stdio process never opens a store of its own."""
    served = Server(tmp_path / "served", token="owner-token")
    own_home = tmp_path / "stdio"
    try:
        async def run() -> None:
            params = StdioServerParameters(command=sys.executable, args=["-m", "ombre.cli", "serve", "--stdio"],
                                           env={**ombre_env(own_home, OMBRE_URL=served.url), "OMBRE_TOKEN": "owner-token"})
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = {t.name for t in (await session.list_tools()).tools}
                    assert tools == {"hold", "breath"}
                    held = await session.call_tool("hold", {"content": "她的猫叫团子", "quote": "我家猫叫团子"})
                    assert held.structuredContent["stored"], held
                    found = await session.call_tool("breath", {"query": "她的猫叫什么"})
                    assert "团子" in found.structuredContent["text"]

        asyncio.run(run())
        cards = httpx.post(served.url + "/v1/breath", json={"query": "猫叫什么名字"}, timeout=30,
                           headers={"authorization": "Bearer owner-token"}).json()["cards"]
        assert any("团子" in c["content"] for c in cards)
        assert not (own_home / "ombre" / "memory.db").exists()
    finally:
        served.stop()


ARENAS = """
import ctypes, sys, threading
from ombre.serve.run import cap_malloc_arenas
print("capped", cap_malloc_arenas() if sys.argv[1] == "cap" else None, file=sys.stderr)
together = threading.Barrier(8)
kept = []
def work():  # each live thread's first malloc takes an arena of its own, up to the limit
    kept.append(bytearray(50_000))
    together.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
ctypes.CDLL(None).malloc_stats()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc arenas")
def test_serve_caps_mallocs_arenas_unless_the_person_set_their_own():
    def arenas(how: str, **env) -> tuple[int, str]:
        out = subprocess.run([sys.executable, "-c", ARENAS, how], capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")} | env)
        return out.stderr.count("Arena "), out.stderr.splitlines()[0]

    assert arenas("none")[0] > 2  # eight live threads, an arena each (up to eight per core)
    assert arenas("cap") == (2, "capped True")
    assert arenas("cap", MALLOC_ARENA_MAX="3") == (3, "capped False")
    assert arenas("cap", GLIBC_TUNABLES="glibc.malloc.arena_max=3") == (3, "capped False")
