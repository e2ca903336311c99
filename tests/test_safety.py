"""Safe by default: closed to other sites' names and origins and to other people, no 500 or
traceback on any input, no file command that can lose data.

Over real `ombre serve` processes: the default set-up (loopback, no token), and one with an owner token and a
namespace's token. Every route is asked with a forged Host and, where it changes anything, a forged Origin;
every machine page with each kind of token; every body route with nested, huge, mis-encoded and mistyped input.
"""
from __future__ import annotations

import json
import os
import random
import re
import stat
import subprocess
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ombre.cli import main
from tests.support.servers import OMBRE, Server, ombre_env
from tests.support.transcript_gen import companion_session

MACHINE_PAGES = ["/ui/sessions", "/ui/sessions/{sid}", "/ui/sessions/{sid}/plan", "/ui/keeper", "/ui/bill",
                 "/ui/hooks"]
MEMORY_PAGES = ["/ui", "/ui/memories", "/ui/memories/{mid}", "/ui/memories/{mid}/forget"]
JSON_POSTS = ["/v1/hold", "/v1/breath", "/v1/inject", "/v1/inject/session-start"]
FORM_POSTS = ["/ui/memories/{mid}/pin", "/ui/sessions/{sid}/tunnel"]
MCP = "/mcp/"
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _home_with_a_session(home: Path) -> str:
    b = companion_session(random.Random(5), turns=4)
    folder = home / ".claude" / "projects" / "-home-user-companion"
    folder.mkdir(parents=True)
    (folder / f"{b.sid}.jsonl").write_text(b.text(), encoding="utf-8")
    return b.sid


class Served:
    def __init__(self, home: Path, token: str | None = None) -> None:
        self.home = home
        self.sid = _home_with_a_session(home)
        self.friend_token = None
        if token:
            out = subprocess.run(OMBRE + ["namespace", "add", "friend", "--json"], env=ombre_env(home),
                                 capture_output=True, text=True, timeout=120, check=True)
            self.friend_token = json.loads(out.stdout)["token"]
        self.token = token
        self.server = Server(home, token=token)
        self.url = self.server.url
        self.mid = self.hold("她喜欢桂花乌龙", self.token)
        self.friend_mid = self.hold("朋友的猫叫馒头", self.friend_token) if self.friend_token else None

    def headers(self, token: str | None) -> dict:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def hold(self, content: str, token: str | None) -> str:
        r = httpx.post(self.url + "/v1/hold", json={"content": content, "quote": content}, headers=self.headers(token),
                       timeout=60)
        assert r.status_code == 200 and r.json()["stored"], r.text
        return r.json()["id"]

    def path(self, route: str) -> str:
        return route.format(sid=self.sid, mid=self.mid)


@pytest.fixture(scope="module")
def open_service(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("open"))
    yield s
    s.server.stop()


@pytest.fixture(scope="module")
def owned_service(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("owned"), token="owner-token-123")
    yield s
    s.server.stop()


def _request(method: str, url: str, **kw) -> httpx.Response:
    return httpx.request(method, url, timeout=60, follow_redirects=False, **kw)


ROUTES = [("GET", "/health"), ("GET", "/v1/memories/{mid}")] + [("GET", p) for p in MEMORY_PAGES + MACHINE_PAGES] + [
    ("POST", p) for p in JSON_POSTS + FORM_POSTS] + [("POST", MCP)]


# -- 1. names and origins -------------------------------------------------------------------------------
@pytest.mark.parametrize("method,route", ROUTES)
def test_every_route_refuses_another_sites_name(open_service, method, route):
    """DNS rebinding: a page on evil.example whose name now points at 127.0.0.1 reaches nothing."""
    url = open_service.url + open_service.path(route)
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example"):
        r = _request(method, url, headers={"Host": host, **MCP_HEADERS}, content=b"{}")
        assert r.status_code == 421, (host, r.status_code, r.text[:200])
        assert "evil.example" in r.json()["message"] and "memor" not in r.text.lower()


@pytest.mark.parametrize("method,route", [r for r in ROUTES if r[0] == "POST"])
def test_a_change_from_another_origin_is_refused(open_service, method, route):
    url = open_service.url + open_service.path(route)
    port = open_service.url.rsplit(":", 1)[1]
    for origin in ("http://evil.example", f"http://localhost:{int(port) + 1}", "null", f"https://127.0.0.1:{port}x"):
        r = _request(method, url, headers={"Origin": origin, **MCP_HEADERS}, content=b"{}")
        assert r.status_code == 403 and "another origin" in r.json()["message"], (origin, r.status_code, r.text)
    same = _request(method, url, headers={"Origin": open_service.url, **MCP_HEADERS}, content=b"{}")
    assert same.status_code not in (421, 500) and "another origin" not in same.text, same.text[:200]


def test_a_named_host_is_served_when_allowed(tmp_path):
    server = Server(tmp_path, args=("--allow-host", "companion.lan"))
    try:
        port = server.port
        ok = httpx.get(server.url + "/health", headers={"Host": f"companion.lan:{port}"}, timeout=10)
        bad = httpx.get(server.url + "/health", headers={"Host": "other.lan"}, timeout=10)
        mcp = httpx.post(server.url + MCP, headers={"Host": f"companion.lan:{port}", **MCP_HEADERS}, content=b"{}",
                         timeout=10)
    finally:
        server.stop()
    assert ok.status_code == 200 and bad.status_code == 421
    assert mcp.status_code not in (421, 500)  # MCP's own rebinding guard knows the allowed name too


def test_the_gateway_refuses_another_sites_name_and_origin(tmp_path):
    from tests.support.fake_anthropic import FakeAnthropic
    from tests.support.servers import Gateway

    with FakeAnthropic() as fake:
        gw = Gateway(tmp_path, fake.url, OMBRE_VECTORS="0")
        try:
            body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
            rebound = httpx.post(gw.url + "/v1/messages", json=body, headers={"Host": "evil.example"}, timeout=30)
            foreign = httpx.post(gw.url + "/v1/messages", json=body, headers={"Origin": "http://evil.example"},
                                 timeout=30)
            own = httpx.post(gw.url + "/v1/messages", json=body, timeout=30)
        finally:
            gw.stop()
        assert rebound.status_code == 421 and foreign.status_code == 403 and own.status_code == 200
        assert len(fake.messages_requests()) == 1  # nothing of the refused two reached the upstream


# -- 2. the machine belongs to its owner --------------------------------------------------------------------
@pytest.mark.parametrize("route", MACHINE_PAGES)
def test_machine_pages_open_to_the_owner_only(owned_service, route):
    s = owned_service
    url = s.url + s.path(route)
    assert _request("GET", url, headers=s.headers(s.token)).status_code == 200
    friend = _request("GET", url, headers=s.headers(s.friend_token))
    assert friend.status_code == 403 and s.sid not in friend.text
    assert _request("GET", url).status_code == 401


@pytest.mark.parametrize("method,route", [r for r in ROUTES if r[1] not in MACHINE_PAGES and r[1] != "/health"])
def test_every_other_route_with_each_kind_of_token(owned_service, method, route):
    """Memories are each namespace's own: the owner's memory is the owner's, a namespace's token reaches only
    its own, and no token reaches nothing but /health."""
    s = owned_service
    url = s.url + s.path(route)
    body = {"content": "x", "query": "x", "prompt": "x"} if route in JSON_POSTS else None
    kw = {"json": body} if body else {"content": b"{}", "headers": MCP_HEADERS}
    nobody = _request(method, url, **kw)
    assert nobody.status_code == 401, (route, nobody.status_code)
    owner = _request(method, url, **{**kw, "headers": {**kw.get("headers", {}), **s.headers(s.token)}})
    friend = _request(method, url, **{**kw, "headers": {**kw.get("headers", {}), **s.headers(s.friend_token)}})
    # the owner passes; a dashboard form posted without its form token is still refused, for that reason only
    assert owner.status_code not in (401, 500) and (owner.status_code != 403 or "form token" in owner.text), route
    assert friend.status_code not in (401, 500), route
    if "{mid}" in route:  # the owner's memory: not the friend's to read or change
        assert friend.status_code in (403, 404, 422) and "桂花乌龙" not in friend.text, (route, friend.status_code)
        assert owner.status_code in (200, 303, 403) and (method == "POST" or "桂花乌龙" in owner.text)


def test_a_namespace_token_cannot_swap_the_owners_window(owned_service):
    s = owned_service
    page = _request("GET", s.url + f"/ui/memories/{s.friend_mid}", headers=s.headers(s.friend_token)).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf, "the friend's own memory page carries the form token of its forms"
    r = _request("POST", s.url + f"/ui/sessions/{s.sid}/tunnel", headers=s.headers(s.friend_token),
                 data={"csrf": csrf.group(1), "confirm": "yes", "mode": "diet"})
    assert r.status_code == 403
    assert len(list((s.home / ".claude" / "projects" / "-home-user-companion").glob("*.jsonl"))) == 1


def test_a_namespaces_dashboard_shows_its_own_memories_and_nothing_of_the_machine(owned_service):
    s = owned_service
    overview = _request("GET", s.url + "/ui", headers=s.headers(s.friend_token)).text
    for machine in ("/ui/sessions", "/ui/keeper", "/ui/bill", "/ui/hooks", "ombre.db", "backups"):
        assert machine not in overview
    memories = _request("GET", s.url + "/ui/memories", headers=s.headers(s.friend_token)).text
    assert "馒头" in memories and "桂花乌龙" not in memories
    assert _request("GET", s.url + f"/ui/memories/{s.mid}", headers=s.headers(s.friend_token)).status_code in (404, 422)
    owner = _request("GET", s.url + "/ui", headers=s.headers(s.token)).text
    assert "/ui/sessions" in owner


def test_health_tells_each_kind_of_caller_only_its_share(owned_service):
    s = owned_service
    anyone = _request("GET", s.url + "/health").json()
    assert set(anyone) == {"status"}
    friend = _request("GET", s.url + "/health", headers=s.headers(s.friend_token)).json()
    assert friend["namespace"] == "friend" and friend["memories"] >= 1
    assert not {"database", "home", "last_backup"} & set(friend)
    owner = _request("GET", s.url + "/health", headers=s.headers(s.token)).json()
    assert owner["home"] == str((s.home / "ombre").resolve()) and "database" in owner


# -- 3. no 500 on any input ----------------------------------------------------------------------------------
def _nested(depth: int) -> bytes:
    return b'{"content": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("route", JSON_POSTS + [MCP])
def test_deep_nesting_is_422_not_500(open_service, route):
    for body in (_nested(2_000), b"[" * 5_000, b'{"a":' * 3_000 + b"1" + b"}" * 3_000):
        r = _request("POST", open_service.url + route, content=body, headers=MCP_HEADERS)
        assert r.status_code == 422 and "nests" in r.json()["message"], (route, r.status_code, r.text[:300])


def test_a_tools_call_nested_deep_is_refused(open_service):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hold", "arguments": {"content": "x", "tags": json.loads("[" * 150 + "]" * 150)}}}
    r = _request("POST", open_service.url + MCP, content=json.dumps(call).encode(), headers=MCP_HEADERS)
    assert r.status_code == 422


@pytest.mark.parametrize("days", ["99999999999999999999", "-3", "0", "abc", "1e400", "3651"])
def test_query_numbers_out_of_range_are_a_clear_error(open_service, days):
    r = _request("GET", open_service.url + f"/ui/bill?days={days}")
    assert r.status_code == 422 and "Traceback" not in r.text


JUNK = st.one_of(
    st.binary(max_size=300),
    st.integers(1, 4_000).map(lambda d: b"[" * d + b"]" * d),
    st.integers(1, 4_000).map(lambda d: b'{"content": ' + b'{"a": ' * d + b"1" + b"}" * d + b"}"),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
                 lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                                     max_size=4),
                 max_leaves=30).map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.sampled_from(["content", "query", "prompt", "importance", "tags", "context", "max_results",
                                     "valence", "session_id", "source", "max_tokens"]),
                    st.one_of(st.text(max_size=30), st.integers(-10**30, 10**30), st.lists(st.integers(), max_size=3),
                              st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
                    max_size=5).map(lambda v: json.dumps(v).encode()),
    st.text(max_size=200).map(lambda t: t.encode("utf-16")),
)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(JSON_POSTS + [MCP, "/ui/memories/{mid}/edit"]), body=JUNK)
def test_no_body_makes_a_500(open_service, route, body):
    r = _request("POST", open_service.url + open_service.path(route), content=body,
                 headers={**MCP_HEADERS, "content-type": "application/json"})
    assert r.status_code < 500, (route, body[:80], r.status_code, r.text[:300])


# -- files we read: no traceback, whatever they hold ---------------------------------------------------------
def _cli(args: list[str], env: dict) -> object:
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=True)
    return result


LINES = st.one_of(
    st.integers(150, 3_000).map(lambda d: b'{"parentUuid":null,"type":"user","uuid":"u","x":' + b"[" * d + b"]" * d
                                + b"}"),
    st.binary(min_size=1, max_size=200).filter(lambda b: b"\n" not in b),
    st.sampled_from([b'{"type":"user","message":{"content":7}}', b'{"message":"text"}', b"[1,2,3]",
                     b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":5}]}}',
                     b'{"type":"user","message":{"content":"\\ud800"}}', b'"just a string"',
                     b'{"type":"user","uuid":"a","parentUuid":"a","message":{"content":"loop"}}']),
)


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.lists(LINES, min_size=1, max_size=4), where=st.integers(0, 40))
def test_no_transcript_line_makes_a_traceback(tmp_path_factory, junk, where):
    home = tmp_path_factory.mktemp("t")
    b = companion_session(random.Random(where), turns=4)
    folder = home / ".claude" / "projects" / "-p"
    folder.mkdir(parents=True)
    lines = b.text().encode().splitlines()
    at = min(where, len(lines))
    path = folder / f"{b.sid}.jsonl"
    path.write_bytes(b"\n".join(lines[:at] + junk + lines[at:]) + b"\n")
    os.utime(path, (1, 1))  # long idle: not a live session
    env = {"HOME": str(home), "OMBRE_HOME": str(home / "ombre"), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    for args in (["anchors", str(path)], ["usage", str(path)], ["diet", str(path), "--dry-run"],
                 ["forge", str(path), "--dry-run"], ["forge", str(path)], ["handoff", "prepare", str(path)],
                 ["tunnel", str(path), "--dry-run"], ["distill", "--session", str(path), "--force", "--dry-run"],
                 ["stats", "--days", "3650"], ["keeper", "status", str(path)]):
        result = _cli(args, env)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args, repr(result.exception), result.output[-500:])


def test_memories_import_checks_every_line_and_names_the_refused(tmp_path):
    env = {"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0"}
    good = {"id": "good1", "content": "她喜欢桂花乌龙", "type": "偏好", "created": "2026-12-01T00:00:00+00:00",
            "last_active": "2026-12-01T00:00:00+00:00", "status": "confirmed", "evidence": {"quote": "我喜欢桂花乌龙"}}
    lines = [json.dumps(good, ensure_ascii=False).encode(),
             json.dumps({**good, "id": "n1", "content": 42}).encode(),                   # 2 content not text
             b'{"id": "s1", "content": "\\ud800x", "type": "\\u4e8b\\u4ef6"}',          # 3 lone surrogate
             b"\xff\xfe\x00binary\x00",                                                  # 4 not UTF-8
             json.dumps({**good, "id": "big", "content": "长" * 3_000_000}).encode(),    # 5 3 MB
             json.dumps({**good, "id": "t1", "type": "<nope>"}).encode(),                # 6 unknown type
             b'{"id": "deep", "content": "x", "tags": ' + b"[" * 3_000 + b"]" * 3_000 + b"}",  # 7 nested
             b"[1, 2]"]                                                                  # 8 not an object
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = subprocess.run(OMBRE + ["memories", "import", str(path)], env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "imported 1 memories" in out.stdout
    for n in range(2, 9):
        assert f"in.jsonl:{n}:" in out.stderr, (n, out.stderr)
    assert "unknown type '<nope>'" in out.stderr and "over the limit" in out.stderr and "surrogate" in out.stderr
    utf16 = tmp_path / "u16.jsonl"
    utf16.write_bytes(json.dumps(good, ensure_ascii=False).encode("utf-16"))
    out = subprocess.run(OMBRE + ["memories", "import", str(utf16)], env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0 and "UTF-16" in out.stderr and "Traceback" not in out.stderr


@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=3_000), st.integers(200, 5_000).map(lambda d: b"[" * d + b"]" * d),
                      st.just(b"SQLite format 3\x00" + b"\x00" * 4_000)))
def test_no_settings_or_backup_file_makes_a_traceback(tmp_path_factory, data):
    home = tmp_path_factory.mktemp("f")
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_bytes(data)
    junk = home / "junk.db"
    junk.write_bytes(data)
    env = {"HOME": str(home), "OMBRE_HOME": str(home / "ombre"), "OMBRE_URL": "http://127.0.0.1:9"}
    for args in (["install", "claude-code", "--dry-run"], ["restore", str(junk)], ["memories", "import", str(junk)],
                 ["doctor"]):
        result = _cli(args, env)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args, repr(result.exception), result.output[-500:])


# -- 4. file commands never replace what is not theirs --------------------------------------------------------
@pytest.fixture
def home_with_memories(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0",
           "OMBRE_URL": "http://127.0.0.1:9"}
    for text in ("她喜欢桂花乌龙", "她每周三去游泳"):
        subprocess.run(OMBRE + ["hold", text, "--quote", text], env=env, check=True, capture_output=True, timeout=120)
    return tmp_path, env


def _ombre(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(OMBRE + args, env=env, capture_output=True, text=True, timeout=120)


def test_export_refuses_devices_pipes_and_folders(home_with_memories):
    tmp_path, env = home_with_memories
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    targets = [(fifo, "not a regular file"), (tmp_path, "is a folder")]
    device = tmp_path / "full"  # a device of our own (what /dev/full is), never the machine's
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        targets.append((device, "not a regular file"))
    except PermissionError:
        device = None  # not root: no device can be made, and none could have been replaced either
    for target, why in targets:
        out = _ombre(["memories", "export", str(target)], env)
        assert out.returncode != 0 and why in out.stderr and "exported" not in out.stdout, (target, out)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and (device is None or stat.S_ISCHR(os.stat(device).st_mode))


def test_export_writes_through_a_symlink_only_when_asked(home_with_memories):
    tmp_path, env = home_with_memories
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    refused = _ombre(["memories", "export", str(link)], env)
    assert refused.returncode != 0 and "symbolic link" in refused.stderr and "--follow-symlinks" in refused.stderr
    assert link.is_symlink() and target.read_text() == "old\n"
    done = _ombre(["memories", "export", str(link), "--follow-symlinks"], env)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and len(target.read_text(encoding="utf-8").splitlines()) == 2


def test_restore_refuses_the_live_database_and_anything_that_is_it(home_with_memories):
    tmp_path, env = home_with_memories
    db = tmp_path / "ombre" / "ombre.db"
    before = db.read_bytes()
    alias = tmp_path / "alias.db"
    alias.symlink_to(db)
    for source in (db, alias, tmp_path / "ombre" / "." / "ombre.db"):
        out = _ombre(["restore", str(source)], env)
        assert out.returncode != 0 and "live memory database" in out.stderr and "Traceback" not in out.stderr
    assert db.read_bytes() == before and not list(db.parent.glob("*.before-restore-*"))
    listed = _ombre(["memories", "list"], env)
    assert "桂花乌龙" in listed.stdout
    folder = _ombre(["restore", str(tmp_path)], env)
    assert folder.returncode != 0 and "is a folder" in folder.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 3\x00" + os.urandom(4_000))
    out = _ombre(["restore", str(junk)], env)
    assert out.returncode != 0 and db.read_bytes() == before


def test_a_restore_that_fails_half_way_puts_the_live_database_back(home_with_memories, monkeypatch):
    from ombre.errors import StoreError
    from ombre.memory import backup

    tmp_path, env = home_with_memories
    db = tmp_path / "ombre" / "ombre.db"
    made = _ombre(["backup"], env)
    assert made.returncode == 0, made.stderr
    source = backup.backups(tmp_path / "ombre" / "backups")[-1]
    before = db.read_bytes()
    real = os.replace

    def failing(src, dst):
        if Path(dst) == db and "restoring" in str(src):  # the last step: the checked copy into place
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(StoreError, match="put back"):
        backup.restore(source, db)
    monkeypatch.setattr(os, "replace", real)
    assert db.read_bytes() == before and not list(db.parent.glob("ombre.db.restoring*"))
    assert not list(db.parent.glob("*.before-restore-*"))


def test_restore_asks_the_service_of_its_own_home(home_with_memories, tmp_path_factory):
    tmp_path, env = home_with_memories
    made = _ombre(["backup"], env)
    assert made.returncode == 0
    other = Server(tmp_path_factory.mktemp("other-home"))
    try:
        backup_file = made.stdout.split("backed up to ", 1)[1].split(" (", 1)[0]
        ours = _ombre(["restore", backup_file], {**env, "OMBRE_URL": other.url})
        assert ours.returncode == 0, ours.stderr  # another home's service holds nothing of ours
        own = Server(tmp_path)
        try:
            busy = _ombre(["restore", backup_file], {**env, "OMBRE_URL": own.url})
            assert busy.returncode != 0 and "holds the database open" in busy.stderr
        finally:
            own.stop()
    finally:
        other.stop()
