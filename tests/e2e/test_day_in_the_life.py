"""A day in the life: the product used the way a person uses it, through the real Claude Code CLI.

A fresh home; `ombre install claude-code`; `ombre serve`; a file bridge standing in for the chat bridge.
A dozen Chinese turns against the fake Messages API: an allergy, an exam next month, a promise agreed
across turns (proposed as a question, accepted, confirmed), a joke taken back. The keeper's idle passes
distil what was said; `ombre tunnel` swaps the window; the bridge's new binding is resumed; later turns ask
about the first facts. What the person would notice is asserted: the facts and the promise are remembered
and shown when asked, the joke is not, the handoff reaches the model exactly once, and system and tools
stay byte-identical on every turn but the swap.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ombre.inject.cards import JUST_NOW_TITLE, SESSION_HEADER
from ombre.transcript.lines import HANDOFF_HEADER
from tests.e2e.claude import ClaudeCode
from tests.support.fake_anthropic import FakeAnthropic, Reply
from tests.support.servers import Server, free_port

pytestmark = pytest.mark.e2e
OMBRE = [sys.executable, "-m", "ombre.cli"]
BLOCK_HEAD = "ombre · 本轮记忆"
DAY = [
    ("早呀，今天终于周六了", "早呀！周六想怎么过？"),
    ("我跟你说，我对芒果过敏，吃了会起疹子。", "记住了，以后不给你推荐芒果。"),
    ("下个月十二号我要考教资，有点慌。", "别慌，我陪你一起复习。"),
    ("以后每周五晚上九点我们视频吧，好不好？", "好呀，每周五晚上九点我等你。"),
    ("嗯嗯，说定了！", "说定了～"),
    ("告诉你个秘密，我中了五百万彩票！", "哇！真的假的？"),
    ("哈哈开玩笑的啦，骗你的。", "你又逗我。"),
    ("中午吃了番茄炒蛋，还挺好吃的", "听起来不错。"),
    ("下午去图书馆看了会儿书", "真用功。"),
    ("晚上有点累了", "早点休息。"),
]
LATER = [
    ("芒果我能吃吗？我是不是对它过敏来着", "芒果"),
    ("我们每周五晚上九点约好要干什么来着？", "视频"),
    ("我下个月考什么来着，我自己都慌忘了", "教资"),
]


def ombre(args: list[str], env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    out = subprocess.run(OMBRE + args, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"ombre {' '.join(args)}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out


def _main_requests(fake: FakeAnthropic) -> list[dict]:
    return [b for b in fake.messages_requests() if b.get("tools")]


def _last_user(body: dict) -> str:
    return json.dumps(body["messages"][-1]["content"], ensure_ascii=False)


def _cards(body: dict) -> str:
    """The per-turn block the hook put into this turn (empty when it put none)."""
    content = body["messages"][-1]["content"]
    blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content if isinstance(b, dict)]
    return "\n".join(b for b in blocks if BLOCK_HEAD in b)


def test_a_day_with_a_companion(tmp_path: Path, cli: Path):
    port = free_port()
    bound = tmp_path / "bridge-bound-sid"
    with FakeAnthropic() as fake:
        cc = ClaudeCode.create(tmp_path, fake.url, cli)
        env = cc.env(OMBRE_HOME=str(cc.home / ".ombre"), OMBRE_URL=f"http://127.0.0.1:{port}",
                     OMBRE_BRIDGE="file", OMBRE_BRIDGE_FILE=str(bound), AUTO_FORGE_IDLE_SECS="0")
        ombre(["install", "claude-code"], env)
        server = Server(cc.home, env={k: v for k, v in env.items() if k.startswith(("OMBRE_", "AUTO_FORGE"))},
                        port=port)
        try:
            sid = None
            for n, (said, answer) in enumerate(DAY):
                fake.replies = [Reply.text(answer, input_tokens=3_000 + 500 * n)]
                sid = cc.run(said, resume=sid, timeout=120, **env)["session_id"]
                bound.write_text(sid + "\n")  # the bridge follows its chat
                if n in (4, len(DAY) - 1):  # the keeper's idle passes
                    ombre(["keeper", "run", "--once", sid], env)
            swap_at = len(_main_requests(fake))
            memories = json.loads(ombre(["memories", "list", "--json"], env).stdout)
            kept = json.dumps(memories, ensure_ascii=False)
            assert "芒果过敏" in kept and "教资" in kept and "每周五晚上九点我们视频" in kept, kept
            assert "五百万" not in kept  # taken back as a joke
            promise = next(m for m in memories if "每周五晚上九点我们视频" in m["content"])
            assert promise["type"] in ("约定", "承诺") and promise["status"] == "confirmed"

            tunnel = json.loads(ombre(["tunnel", sid, "--json"], env).stdout)
            assert tunnel["ok"] and tunnel["rebind"] == "ok" and tunnel["hold"].startswith("ok")
            new_sid = bound.read_text().strip()
            assert new_sid == tunnel["new_sid"] != sid
            for n, (asked, _) in enumerate(LATER):
                fake.replies = [Reply.text("嗯，我记得。", input_tokens=6_000 + 500 * n)]
                new_sid = cc.run(asked, resume=new_sid, timeout=120, **env)["session_id"]
        finally:
            server.stop()

    turns = _main_requests(fake)
    before, after = turns[:swap_at], turns[swap_at:]
    assert len(before) == len(DAY) and len(after) == len(LATER)
    # the stable zone: byte-identical system and tools within each window; only the swap may change them
    for window in (before, after):
        assert len({json.dumps(t["system"], ensure_ascii=False) for t in window}) == 1
        assert len({json.dumps(t["tools"], ensure_ascii=False) for t in window}) == 1
    # the handoff reaches the model once: the new window's first message, not the session-start block,
    # not "Just Now", not a recalled card
    first_after = json.dumps(after[0]["messages"], ensure_ascii=False)
    assert first_after.count(HANDOFF_HEADER) == 1 and json.dumps(after[0]["messages"][0], ensure_ascii=False) \
        .count(HANDOFF_HEADER) == 1
    for body in after:
        text = json.dumps(body["messages"], ensure_ascii=False)
        assert text.count("会话交接 · ombre handoff") == 1 and SESSION_HEADER not in text and JUST_NOW_TITLE not in text
        assert "[会话交接" not in _cards(body)
    # asked later, the first day's facts and the promise are shown in the turn; the joke never is
    for body, (_, expected) in zip(after, LATER):
        cards = _cards(body)
        assert expected in cards, (expected, _last_user(body)[-1500:])
    assert all("五百万" not in _cards(b) for b in turns)
    # what the person said first was read from the start of the first session (not skipped as "old")
    distilled = [json.loads(x) for x in (cc.home / ".ombre" / "distill.jsonl").read_text().splitlines()]
    assert any("new session: read from its start" in d.get("reason", "") for d in distilled)
