"""End to end: dual-zone injection in the real Claude Code CLI.

`ombre install claude-code` wires hooks, the MCP server and the discipline document into a temporary
HOME; a real `ombre serve` holds the memories; Claude Code 2.1.112 talks to the recording fake Messages
API. Over several turns the recorded `system` and `tools` must not change by one byte, the recalled
cards must sit in the current user turn, and with the memory service stopped the turn must still go
through with no card and no error text.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.claude import ClaudeCode
from tests.support.fake_anthropic import FakeAnthropic, Reply
from tests.support.servers import Server, free_port

pytestmark = pytest.mark.e2e
BLOCK_HEAD = "ombre · 本轮记忆"


def _main_requests(fake: FakeAnthropic) -> list[dict]:
    """Requests of the conversation itself (Claude Code also sends small side requests without tools)."""
    return [b for b in fake.messages_requests() if b.get("tools")]


def _last_user_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _without_cache_marks(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_marks(v) for v in value]
    return value


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def test_cards_ride_the_user_turn_and_the_cached_prefix_never_changes(tmp_path: Path, cli: Path):
    root = tmp_path
    port = free_port()
    ombre_home = root / "home" / ".ombre"
    env = {"OMBRE_HOME": str(ombre_home), "OMBRE_URL": f"http://127.0.0.1:{port}"}
    with FakeAnthropic(replies=[Reply.text("记得带病历本。"), Reply.text("给你泡桂花乌龙。"),
                                Reply.text("晚安。")]) as fake:
        cc = ClaudeCode.create(root, fake.url, cli)
        out = subprocess.run([sys.executable, "-m", "ombre.cli", "install", "claude-code", "--json"],
                             env=cc.env(**env), capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        settings = json.loads((cc.claude_home / "settings.json").read_text())
        assert settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] > 5
        assert "mcpServers" in json.loads((cc.home / ".claude.json").read_text())

        server = Server(root / "home", env={"OMBRE_HOME": str(ombre_home)}, port=port)
        try:
            for body in ({"content": "她周四下午三点要去医院复诊", "type": "承诺", "importance": 8,
                          "quote": "我周四下午三点复诊"},
                         {"content": "她最喜欢喝桂花乌龙", "type": "偏好"}):
                assert httpx.post(server.url + "/v1/hold", json=body, timeout=30).json()["stored"]
            first = cc.run("周四去复诊要带什么？", timeout=120, **env)
            sid = first["session_id"]
            # says enough for the calibrated gates after a turn about something else ("我最爱的那种茶" sat
            # 0.004 under USE's gate there: bench/inject_threshold.py measures what the gates catch)
            cc.run("有点渴了，想喝我最喜欢的乌龙茶", resume=sid, timeout=120, **env)
        finally:
            server.stop()
        cc.run("晚安啦", resume=sid, timeout=120, **env)

    turns = _main_requests(fake)
    assert len(turns) == 3, [b["messages"][-1] for b in fake.messages_requests()]
    # the stable zone: byte-identical system and tools on every turn
    assert len({_dump(t["system"]) for t in turns}) == 1
    assert len({_dump(t["tools"]) for t in turns}) == 1
    assert {"mcp__ombre__hold", "mcp__ombre__breath"} <= {tool["name"] for tool in turns[0]["tools"]}
    # install turned on the 1-hour cache: Claude Code marks its breakpoints with it
    marks = [b["cache_control"] for b in turns[0]["system"] if "cache_control" in b]
    assert marks and all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks)
    assert BLOCK_HEAD not in _dump(turns[0]["system"])
    # the discipline document is imported once, at the start of the conversation, and every turn's
    # messages start with the previous turn's messages unchanged (only the cache_control marker moves)
    assert "记忆纪律" in _dump(turns[0]["messages"][0])
    for before, after in zip(turns, turns[1:]):
        n = len(before["messages"])
        assert _without_cache_marks(after["messages"][:n]) == _without_cache_marks(before["messages"])
    # the dynamic zone: cards in the current user turn only
    assert BLOCK_HEAD in _last_user_text(turns[0]) and "周四下午三点" in _last_user_text(turns[0])
    assert "我周四下午三点复诊" in _last_user_text(turns[0])  # the evidence mark travels with the card
    assert BLOCK_HEAD in _last_user_text(turns[1]) and "桂花乌龙" in _last_user_text(turns[1])
    assert "未确认" in _last_user_text(turns[1])
    # the service stopped: the turn went through, no card, no error text anywhere in it
    last = _last_user_text(turns[2])
    assert "晚安啦" in last and BLOCK_HEAD not in last
    for word in ("ombre", "memory", "记忆", "error", "Error"):
        assert word not in last
    log = [json.loads(line) for line in (ombre_home / "hooks.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in log if e["event"] == "user-prompt-submit"][-1] == "memory service unavailable"


def test_claude_code_through_the_gateway_keeps_its_prefix_and_gets_cards(tmp_path: Path, cli: Path):
    """A client that runs no hooks: the real CLI pointed at `ombre gateway`, which forwards to the fake."""
    from tests.support.servers import OMBRE, ombre_env

    home = tmp_path / "gw"
    subprocess.run(OMBRE + ["hold", "她周四下午三点要去医院复诊", "--type", "承诺", "--quote", "我周四下午三点复诊"],
                   env=ombre_env(home), check=True, capture_output=True)
    with FakeAnthropic(replies=[Reply.text("记得带病历本。"), Reply.text("好的。")]) as fake:
        port = free_port()
        gateway = subprocess.Popen(OMBRE + ["gateway", "--port", str(port), "--upstream", fake.url],
                                   env=ombre_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            for _ in range(100):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            cc = ClaudeCode.create(tmp_path / "cc", f"http://127.0.0.1:{port}", cli)
            sid = cc.run("周四去复诊要带什么？", timeout=120)["session_id"]
            cc.run("好的，谢谢", resume=sid, timeout=120)
        finally:
            gateway.terminate()
            gateway.wait(10)
    turns = _main_requests(fake)
    assert len(turns) == 2
    assert _dump(turns[0]["system"]) == _dump(turns[1]["system"]) and _dump(turns[0]["tools"]) == _dump(turns[1]["tools"])
    assert BLOCK_HEAD in _last_user_text(turns[0]) and "周四下午三点" in _last_user_text(turns[0])
    assert BLOCK_HEAD not in _dump(turns[0]["system"])
    assert BLOCK_HEAD not in _last_user_text(turns[1])  # 谢谢 recalls nothing worth showing
