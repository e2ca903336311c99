"""End to end: a forge cut inside a long turn after a real compaction keeps what the model knows.

The real Claude Code CLI runs a turn whose stored usage is past auto-compaction, so its next turn compacts
for real (the fake answers the summary request; Claude Code 2.1.112 writes the prompt that triggered it
before the boundary, so after it the person's words live only in the summary). The turn after that works
through a long run of real Bash tool calls. A forge with a small budget cuts inside that turn; resuming the
new session, the request opens with the compaction summary verbatim, then the person's request that opened
the turn, then the marker — and it does not compact again.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ombre.tunnel.handoff import prepare
from ombre.window.anchors import anchors
from ombre.window.forge import ForgeOptions
from ombre.window.forge import run as run_forge
from ombre.window.select import Selector
from tests.e2e.claude import ClaudeCode
from tests.support.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.e2e
COMPACT_MARK = "Respond with TEXT ONLY"
SUMMARY = ("<summary>\n1. Primary Request and Intent:\n   对方让我整理这个项目，先看日志。\n"
           "2. All user messages:\n   - \"先看看项目结构\"\n   - \"今天帮我整理一下这个项目\"\n"
           "3. Pending Tasks:\n   - 逐个看日志\n</summary>")
REQUEST = "帮我把十个日志文件里的报错都查一遍，一个一个来"
ROUNDS = 10


def _tool_round(i: int) -> Reply:
    return Reply([{"type": "tool_use", "id": f"toolu_log{i:02d}", "name": "Bash",
                   "input": {"command": f"printf '第{i}个日志 %.0s' $(seq 1 400)", "description": f"log {i}"}}],
                 input_tokens=20_000 + i * 1_000)


def _text(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def test_a_forge_inside_a_long_turn_after_a_compaction_resumes_knowing_its_task(tmp_path: Path, cli: Path):
    with FakeAnthropic() as fake:
        cc = ClaudeCode.create(tmp_path, fake.url, cli)
        fake.replies = [Reply.text("好，我先看看项目结构。", input_tokens=175_000)]  # past auto-compaction
        sid = cc.run("先看看项目结构", timeout=120)["session_id"]
        fake.replies = [Reply.text(SUMMARY, input_tokens=5_000), Reply.text("好，从日志开始。", input_tokens=6_000)]
        sid = cc.run("今天帮我整理一下这个项目", resume=sid, timeout=120)["session_id"]
        assert any(COMPACT_MARK in _text(b) for b in fake.messages_requests()), "that turn must have compacted"
        path = cc.project_dir / f"{sid}.jsonl"
        # right after the compaction the person's words are only in the summary: anchors and the pack read them
        listed = anchors(path, limit=0)
        assert [a.kind for a in listed] == ["summary"] and "今天帮我整理一下这个项目" in listed[0].preview
        assert "今天帮我整理一下这个项目" in prepare(path).render()
        fake.replies = [_tool_round(i) for i in range(ROUNDS)] + [
            Reply.text("十个日志都查完了，一共三处报错。", input_tokens=40_000)]
        sid = cc.run(REQUEST, resume=sid, timeout=180)["session_id"]
        path = cc.project_dir / f"{sid}.jsonl"
        summary_line = next(json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()
                            if json.loads(x).get("isCompactSummary"))
        summary = summary_line["message"]["content"]
        summary = summary if isinstance(summary, str) else "\n".join(b["text"] for b in summary)
        assert "对方让我整理这个项目" in summary

        result = run_forge(path, ForgeOptions(selector=Selector(retain=4_000)))
        assert result.selection["cut_inside_turn"] is not None and result.carried == ["summary", "request"]
        before = len(fake.requests)
        fake.replies = [Reply.text("接着说：三处报错分别在第2、5、8个日志。", input_tokens=8_000)]
        cc.run("继续", resume=result.new_session, timeout=120)
        resumed = [r.body for r in fake.requests[before:] if "count_tokens" not in r.path]
    assert len(resumed) == 1, "the forged window must not compact on its first turn"
    first = json.dumps(resumed[0]["messages"][0], ensure_ascii=False)
    at = [first.find(json.dumps(s, ensure_ascii=False)[1:-1]) for s in (summary, REQUEST, "接上文")]
    assert all(i >= 0 for i in at) and at == sorted(at), "summary, then the request, then the marker"
    text = _text(resumed[0])
    assert f"第{ROUNDS - 1}个日志" in text and "第0个日志" not in text  # the tail kept, the start cut
    for synthetic in ("Tool result missing", "Orphaned tool result", "No response requested"):
        assert synthetic not in text
