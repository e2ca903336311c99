"""End to end: the real Claude Code CLI resumes forged and dieted sessions.

Claude Code 2.1.112 runs against a recording fake Messages API on 127.0.0.1. We build a real session with
thinking, parallel tool calls and a stored usage high enough that resuming the original would compact,
rewrite it with forge and diet, resume the new session id, and read what Claude Code sent.
"""
from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from ombre.window.diet import DietOptions
from ombre.window.diet import run as run_diet
from ombre.window.forge import ForgeOptions
from ombre.window.forge import run as run_forge
from ombre.window.select import Selector
from tests.conftest import sha256
from tests.e2e.claude import ClaudeCode
from tests.support.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.e2e
COMPACT_MARK = "Respond with TEXT ONLY"  # Claude Code's summarisation request


def _turns() -> list[tuple[str, list[Reply]]]:
    """Four turns: thinking, parallel tool calls, CJK text; the last reply's usage is past auto-compact."""
    return [
        ("今天好累啊，加班到十点。", [Reply([
            {"type": "thinking", "thinking": "她加班到很晚，先关心身体。", "signature": "c2lnLWZpcnN0LXR1cm4="},
            {"type": "text", "text": "辛苦了，先喝点热水，早点休息好吗？"}], input_tokens=20_000)]),
        ("帮我看看今天的日程和天气", [
            Reply([{"type": "thinking", "thinking": "两个命令可以并行跑。", "signature": "c2lnLXRvb2xz"},
                   {"type": "tool_use", "id": "toolu_e2e_aaa", "name": "Bash",
                    "input": {"command": "echo 日程：周四下午三点复诊", "description": "agenda"}},
                   {"type": "tool_use", "id": "toolu_e2e_bbb", "name": "Bash",
                    "input": {"command": "echo " + "晴 " * 3000, "description": "weather"}}],
                  input_tokens=60_000),
            Reply.text("周四下午三点要复诊，明天是晴天。", input_tokens=90_000)]),
        ("那我周四请半天假。", [Reply([
            {"type": "thinking", "thinking": "记住：周四下午复诊，请半天假。", "signature": "c2lnLXRoaXJk"},
            {"type": "text", "text": "好，周四我提醒你带上病历本。"}], input_tokens=120_000)]),
        ("晚安", [Reply.text("晚安，做个好梦。", input_tokens=175_000)]),
    ]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, cli: Path):
    root = tmp_path_factory.mktemp("cc")
    with FakeAnthropic() as fake:
        cc = ClaudeCode.create(root, fake.url, cli)
        sid = None
        for prompt, replies in _turns():
            fake.replies = list(replies)
            sid = cc.run(prompt, resume=sid)["session_id"]
        path = cc.project_dir / f"{sid}.jsonl"
        yield cc, fake, path


def _resume(cc: ClaudeCode, fake: FakeAnthropic, sid: str) -> list[dict]:
    before = len(fake.requests)
    fake.replies = [Reply.text("我在。", input_tokens=5_000)]
    cc.run("我回来了", resume=sid)
    return [r.body for r in fake.requests[before:] if "count_tokens" not in r.path]


def _blocks(messages: list[dict], kind: str) -> list[dict]:
    return [b for m in messages for b in (m["content"] if isinstance(m["content"], list) else [])
            if isinstance(b, dict) and b.get("type") == kind]


def _transcript_blocks(path: Path, kind: str) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, list):
            out += [b for b in content if isinstance(b, dict) and b.get("type") == kind]
    return out


def _assert_sound_request(body: dict) -> None:
    messages = body["messages"]
    assert messages[0]["role"] == "user", "the first message must be a user message"
    for n, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        uses = [b["id"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        if uses:
            nxt = messages[n + 1]["content"]
            answered = {b["tool_use_id"] for b in nxt if isinstance(b, dict) and b.get("type") == "tool_result"}
            assert set(uses) <= answered, f"orphan tool_use {set(uses) - answered}"
    for n, m in enumerate(messages):
        results = [b["tool_use_id"] for b in (m["content"] if isinstance(m["content"], list) else [])
                   if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            prev = messages[n - 1]["content"]
            asked = {b["id"] for b in prev if isinstance(b, dict) and b.get("type") == "tool_use"}
            assert set(results) <= asked, f"orphan tool_result {set(results) - asked}"
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    text = json.dumps(b.get("content"), ensure_ascii=False)
                    assert "Tool result missing" not in text and "Orphaned tool result" not in text


def test_resuming_the_original_would_compact(session):
    """The control: with the stored usage past the threshold, Claude Code compacts on the next turn."""
    cc, fake, path = session
    copy = path.with_name(f"{uuid.uuid4()}.jsonl")  # resuming compacts, which appends to the file
    shutil.copyfile(path, copy)
    bodies = _resume(cc, fake, copy.stem)
    assert any(COMPACT_MARK in json.dumps(b["messages"][-1], ensure_ascii=False) for b in bodies)


def test_forged_session_resumes_with_kept_history(session, tmp_path):
    cc, fake, path = session
    original = sha256(path)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=2_000)))
    assert sha256(path) == original
    assert result.turns_kept < result.turns_total
    bodies = _resume(cc, fake, result.new_session)
    assert len(bodies) == 1, "a forged session must not compact on its first turn"
    body = bodies[0]
    assert COMPACT_MARK not in json.dumps(body, ensure_ascii=False)
    _assert_sound_request(body)
    text = json.dumps(body["messages"], ensure_ascii=False)
    # The kept tail, in order; the cut-away first turn is gone.
    assert "今天好累啊" not in text
    positions = [text.index(s) for s in ("那我周四请半天假", "好，周四我提醒你带上病历本", "晚安", "晚安，做个好梦", "我回来了")]
    assert positions == sorted(positions)
    # Thinking blocks reach the API byte-identical to what Claude Code stored.
    new_file = Path(result.new_path)
    sent = _blocks(body["messages"], "thinking")
    stored = _transcript_blocks(new_file, "thinking")
    assert stored and all(b in sent for b in stored)
    assert {b["signature"] for b in stored} <= {b["signature"] for b in _transcript_blocks(path, "thinking")}


def test_forged_session_with_handoff_and_parallel_tools(session):
    cc, fake, path = session
    result = run_forge(path, ForgeOptions(selector=Selector(retain=50_000),
                                          inject_text="正在谈：周四复诊。\n未完成：提醒带病历本。"))
    bodies = _resume(cc, fake, result.new_session)
    assert len(bodies) == 1
    body = bodies[0]
    _assert_sound_request(body)
    first = json.dumps(body["messages"][0], ensure_ascii=False)
    assert "会话交接" in first and "提醒带病历本" in first
    uses = _blocks(body["messages"], "tool_use")
    assert {u["id"] for u in uses} == {"toolu_e2e_aaa", "toolu_e2e_bbb"}


def test_dieted_session_resumes_with_squashed_tool_output(session):
    cc, fake, path = session
    result = run_diet(path, DietOptions(squash=2_000))
    assert result.payloads_squashed >= 1
    bodies = _resume(cc, fake, result.new_session)
    assert len(bodies) == 1, "a dieted session must not compact on its first turn"
    body = bodies[0]
    _assert_sound_request(body)
    text = json.dumps(body["messages"], ensure_ascii=False)
    assert "今天好累啊" in text and "晚安，做个好梦" in text  # diet keeps the dialogue
    assert "ombre 已省略" in text  # the long weather output was squashed, with a marker
    results = _blocks(body["messages"], "tool_result")
    assert max(len(json.dumps(r, ensure_ascii=False)) for r in results) < 4_000
    sent = _blocks(body["messages"], "thinking")
    original = _transcript_blocks(path, "thinking")
    assert len(sent) == len(original) and all(b in sent for b in original)


@pytest.mark.parametrize("compacted", [False, True])
def test_a_window_cut_inside_one_long_turn_resumes(session, compacted):
    """Issue #16 item 2 and shape (b): one long agentic turn (or a chain that starts at a compaction summary
    with no person message after it) is cut inside, after finished tool calls; the real CLI resumes it
    without compacting, with the marker as the first user message and no orphan tool call."""
    import random

    from tests.support.transcript_gen import long_agentic_turn

    cc, fake, _ = session
    b = long_agentic_turn(random.Random(11 + compacted), compacted=compacted, cwd=str(cc.workdir.resolve()),
                          version="2.1.112")
    path = cc.project_dir / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    result = run_forge(path, ForgeOptions(selector=Selector(retain=20_000)))
    assert result.selection["cut_inside_turn"] is not None and result.events_kept < result.events_total
    bodies = _resume(cc, fake, result.new_session)
    assert len(bodies) == 1, "the cut window must not compact on its first turn"
    body = bodies[0]
    _assert_sound_request(body)
    assert "接上文" in json.dumps(body["messages"][0], ensure_ascii=False)
    assert "都修好了" in json.dumps(body["messages"], ensure_ascii=False)
    assert "第0轮" not in json.dumps(body["messages"], ensure_ascii=False)  # the cut-away start is gone


@pytest.mark.parametrize("operation", ["diet", "forge"])
def test_a_message_id_that_spans_a_tool_result_resumes(session, operation):
    """Issue #16 shape (a): tool_use A and its result, then B and C under the same message.id, B's result
    on B's line off the chain. Diet and forge keep all three pairs and the real CLI resumes them."""
    import random

    from tests.support.transcript_gen import SessionBuilder

    cc, fake, _ = session
    b = SessionBuilder(random.Random(21), cwd=str(cc.workdir.resolve()), version="2.1.112")
    b.metadata()
    b.say("看看这三个文件")
    b.tool_round_spanning([("Read", {"file_path": "a.py"}, "A" * 3_000), ("Read", {"file_path": "b.py"}, "B" * 3_000),
                           ("Read", {"file_path": "c.py"}, "C" * 3_000)])
    b.reply([{"type": "text", "text": "三个都看完了"}])
    b.say("好的谢谢")
    b.reply([{"type": "text", "text": "不客气"}])
    path = cc.project_dir / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    result = (run_diet(path, DietOptions(squash=500)) if operation == "diet"
              else run_forge(path, ForgeOptions(selector=Selector(retain=100_000))))
    assert result.tool_pairs_kept == 3
    bodies = _resume(cc, fake, result.new_session)
    assert len(bodies) == 1
    _assert_sound_request(bodies[0])
    assert len(_blocks(bodies[0]["messages"], "tool_use")) == 3 == len(_blocks(bodies[0]["messages"], "tool_result"))
