"""Namespaces over the wire: one `ombre serve`, two people, a token each; no request ever
reads or writes the other's memories, over HTTP, MCP or the dashboard. Run on SQLite and on PostgreSQL."""
from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import fresh_database
from tests.support.servers import OMBRE, Server, ombre_env


def add_namespace(env: dict, name: str) -> str:
    """`ombre namespace add NAME`, as a person runs it: the new token."""
    out = subprocess.run(OMBRE + ["namespace", "add", name, "--json"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["token"]


@pytest.fixture(params=["sqlite", "postgresql"])
def site(request, tmp_path):
    extra = {"OMBRE_VECTORS": "0"}
    if request.param == "postgresql":
        extra["OMBRE_DB"] = fresh_database(request.getfixturevalue("postgres"))
    env = {**ombre_env(tmp_path, **extra), "OMBRE_URL": "http://127.0.0.1:9"}

    tokens = {"mum": add_namespace(env, "mum"), "kid": add_namespace(env, "kid")}
    server = Server(tmp_path, token="admin-token", env=extra)
    yield server, tokens, env
    server.stop()


def call(server, token: str, route: str, body: dict | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"}
    if body is None:
        return httpx.get(server.url + route, headers=headers, timeout=30)
    return httpx.post(server.url + route, json=body, headers=headers, timeout=30)


def test_http_requests_stay_in_their_namespace(site):
    server, tokens, env = site
    mum = call(server, tokens["mum"], "/v1/hold", {"content": "妈妈最喜欢茉莉花茶", "quote": "我最喜欢茉莉花茶"}).json()
    kid = call(server, tokens["kid"], "/v1/hold", {"content": "孩子最喜欢草莓牛奶", "quote": "我最喜欢草莓牛奶"}).json()
    assert mum["stored"] and kid["stored"]
    assert "茉莉" in call(server, tokens["mum"], "/v1/breath", {"query": "茉莉花茶"}).json()["text"]
    assert call(server, tokens["kid"], "/v1/breath", {"query": "茉莉花茶"}).json()["cards"] == []
    assert call(server, tokens["kid"], f"/v1/memories/{mum['id']}").status_code == 404
    assert call(server, tokens["mum"], f"/v1/memories/{mum['id']}").status_code == 200
    block = call(server, tokens["kid"], "/v1/inject", {"prompt": "茉莉花茶还有吗", "session_id": "s"}).json()
    assert mum["id"] not in block["cards"]
    admin = call(server, "admin-token", "/v1/breath", {"query": "茉莉花茶 草莓牛奶"}).json()
    assert admin["cards"] == []  # OMBRE_TOKEN is the default namespace's, which holds neither
    assert call(server, "not-a-token", "/v1/breath", {"query": "x"}).status_code == 401
    listed = subprocess.run(OMBRE + ["namespace", "list", "--json"], env=env, capture_output=True, text=True)
    counts = {r["namespace"]: r["memories"] for r in json.loads(listed.stdout)}
    assert counts == {"mum": 1, "kid": 1}


def test_mcp_calls_stay_in_their_namespace(site):
    server, tokens, _ = site

    async def session_for(token: str, work):
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as client:
            async with streamable_http_client(server.url + "/mcp", http_client=client) as (read, write, _):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await work(session)

    async def run() -> None:
        held = await session_for(tokens["mum"], lambda s: s.call_tool(
            "hold", {"content": "妈妈每周日去爬山", "quote": "我每周日都去爬山"}))
        assert held.structuredContent["stored"]
        mine = await session_for(tokens["mum"], lambda s: s.call_tool("breath", {"query": "爬山"}))
        theirs = await session_for(tokens["kid"], lambda s: s.call_tool("breath", {"query": "爬山"}))
        assert "爬山" in mine.structuredContent["text"] and theirs.structuredContent["cards"] == []

    asyncio.run(run())
    refused = httpx.post(server.url + "/mcp", json={}, headers={"authorization": "Bearer wrong"}, timeout=30)
    assert refused.status_code == 401


def test_the_dashboard_shows_only_the_tokens_namespace(site):
    server, tokens, _ = site
    call(server, tokens["mum"], "/v1/hold", {"content": "妈妈对芒果过敏", "quote": "我对芒果过敏"})
    with httpx.Client(timeout=30) as browser:
        assert "芒果" in browser.get(f"{server.url}/ui/memories?token={tokens['mum']}").text
    with httpx.Client(timeout=30) as browser:
        page = browser.get(f"{server.url}/ui/memories?token={tokens['kid']}")
        assert page.status_code == 200 and "芒果" not in page.text


def test_one_service_answers_many_people_through_one_small_pool(tmp_path, postgres):
    """Every namespace a service answers reads and writes through the service's one pool: twelve people
    asking at once hold at most OMBRE_PG_POOL_MAX of the server's connections (PostgreSQL allows 100 by
    default), each still sees only their own memories, and /health reports the pool."""
    import psycopg

    url = fresh_database(postgres)
    extra = {"OMBRE_VECTORS": "0", "OMBRE_DB": url, "OMBRE_PG_POOL_MAX": "3"}
    env = {**ombre_env(tmp_path, **extra), "OMBRE_URL": "http://127.0.0.1:9"}
    tokens = [add_namespace(env, f"p{i}") for i in range(12)]
    server = Server(tmp_path, token="admin-token", env=extra)

    def connections() -> int:
        with psycopg.connect(url) as db:
            return db.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND pid <> pg_backend_pid()").fetchone()[0]

    def person(i: int, token: str) -> list[str]:
        for n in range(3):
            held = call(server, token, "/v1/hold", {"content": f"第{i}个人第{n}次说最喜欢桂花乌龙",
                                                    "quote": "我最喜欢桂花乌龙"})
            assert held.status_code == 200 and held.json().get("stored"), held.text
        return [c["content"] for c in call(server, token, "/v1/breath", {"query": "桂花乌龙"}).json()["cards"]]

    try:
        with ThreadPoolExecutor(max_workers=12) as pool:
            found = list(pool.map(person, range(12), tokens))
        for i, contents in enumerate(found):
            assert sorted(contents) == [f"第{i}个人第{n}次说最喜欢桂花乌龙" for n in range(3)]
        assert connections() <= 3
        health = call(server, "admin-token", "/health").json()
        assert health["pool"]["max"] == 3 and health["pool"]["open"] <= 3 and health["pool"]["timeouts"] == 0
        doctor = subprocess.run(OMBRE + ["doctor", "--json"], capture_output=True, text=True, timeout=120,
                                env={**env, "OMBRE_URL": server.url, "OMBRE_TOKEN": "admin-token"})
        pool = next(c for c in json.loads(doctor.stdout) if c["name"] == "database pool")
        assert pool["ok"] and "open of 3" in pool["detail"] and "0 timed out" in pool["detail"], pool
    finally:
        server.stop()


def test_a_slow_query_or_a_long_hold_in_one_namespace_does_not_hold_up_another(postgres):
    from ombre.memory.model import Memory
    from ombre.memory.postgres_store import PostgresStore
    from ombre.memory.segment import document

    mum = PostgresStore(fresh_database(postgres), "mum", pool=(1, 4))
    kid = mum.beside("kid")
    try:
        kid.add(Memory(content="他最喜欢恐龙", id="k1"), document("他最喜欢恐龙"))
        with ThreadPoolExecutor(max_workers=2) as pool:
            slow = pool.submit(mum._query, "SELECT pg_sleep(1.5)")
            held = threading.Event()

            def long_hold() -> None:
                with mum.exclusive():  # a hold waiting on an arbitration model, its lock held
                    held.set()
                    time.sleep(1.5)

            hold = pool.submit(long_hold)
            assert held.wait(10)
            started = time.monotonic()
            assert [m.id for m in kid.list()] == ["k1"] and kid.keyword_search(["恐龙"], 5)
            with kid.exclusive():  # another person's hold is not behind mum's
                pass
            assert time.monotonic() - started < 0.8
            slow.result(), hold.result()
        assert mum.pool_stats()["max"] == 4
    finally:
        kid.close()
        mum.close()
