"""The active chain as Claude Code 2.1.112 rebuilds it on --resume, and the one event list."""
from __future__ import annotations

import json
import random
from pathlib import Path

from ombre.transcript.chain import is_real_user, scan
from tests.conftest import FIXTURES, install
from tests.support.transcript_gen import SessionBuilder, companion_session


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "5d7e4a8c-0000-4000-8000-000000000001.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_parallel_tool_results_off_the_chain_are_restored(claude_home):
    """spotter short.jsonl: two parallel tool calls, each result parented on its own tool_use line."""
    path = install(FIXTURES / "spotter-2.1" / "short.jsonl", claude_home)
    with scan(path) as t:
        kinds = [(e.type, e.tool_uses or e.tool_results) for e in t.events]
    uses = [x for k, ids in kinds if k == "assistant" for x in ids]
    results = [x for k, ids in kinds if k == "user" for x in ids]
    assert len(uses) == 2 and sorted(results) == sorted(uses)
    # both tool_use lines come before both results (one API response, then one user message)
    positions = [i for i, (k, ids) in enumerate(kinds) if ids]
    assert [kinds[i][0] for i in positions] == ["assistant", "assistant", "user", "user"]


def test_progress_lines_are_bridged_not_kept(claude_home):
    path = install(FIXTURES / "spotter-2.1" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl", claude_home)
    with scan(path) as t:
        assert all(e.type != "progress" for e in t.chain)
        assert t.leaf is not None and t.leaf.type == "assistant"
        t.measure(t.events[-1:])
        assert t.events[-1].text_preview.startswith("Yes — everything is pushed")


def test_chain_starts_after_the_latest_compaction_boundary(claude_home):
    path = install(FIXTURES / "spotter-2.1" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl", claude_home)
    with scan(path) as t:
        assert t.boundary is not None and t.boundary.subtype == "compact_boundary"
        assert t.events[0].compact_summary
        assert all(e.lineno > t.boundary.lineno for e in t.chain)


def test_leaf_is_the_last_main_chain_line_not_the_newest_timestamp(tmp_path):
    b = SessionBuilder(random.Random(1))
    b.say("第一句")
    first_reply = b.reply([{"type": "text", "text": "一"}])[-1]
    b.say("第二句")
    b.reply([{"type": "text", "text": "二"}])
    # A branch written last (e.g. after a rewind) from the first reply, with an *older* timestamp.
    b.last = first_reply
    b.clock = b.clock.replace(year=2026, month=8, day=3, hour=0)
    b.say("分支")
    branch = b.reply([{"type": "text", "text": "分支回复"}])[-1]
    with scan(_write(tmp_path, b.text())) as t:
        t.measure(t.events)
        assert t.leaf.uuid == branch
        assert [e.text_preview for e in t.events] == ["第一句", "一", "分支", "分支回复"]


def test_sidechain_lines_are_never_events(tmp_path):
    b = companion_session(random.Random(3), turns=4, sidechain_at=2, tool_every=0)
    with scan(_write(tmp_path, b.text())) as t:
        assert [e.uuid for e in t.events] == b.expected_chain
        assert not any(e.sidechain for e in t.chain)


def test_missing_parent_falls_back_to_the_closest_message_within_five_seconds(tmp_path):
    b = SessionBuilder(random.Random(2))
    b.say("你好")
    reply = b.reply([{"type": "text", "text": "在的"}])[-1]
    lines = b.lines
    b.last = "00000000-dead-4000-8000-000000000000"  # a parent Claude Code never loaded
    b.user("还在吗", gap_ms=3_000)
    with scan(_write(tmp_path, "\n".join(lines) + "\n")) as t:
        t.measure(t.events)
        assert [e.text_preview for e in t.events] == ["你好", "在的", "还在吗"]
        assert t.events[1].uuid == reply


def test_missing_parent_older_than_five_seconds_ends_the_chain(tmp_path):
    b = SessionBuilder(random.Random(2))
    b.say("你好")
    b.reply([{"type": "text", "text": "在的"}])
    b.last = "00000000-dead-4000-8000-000000000000"
    b.advance(0.01)  # 36 s later: Claude Code finds no stand-in and the history starts here
    b.say("还在吗")
    with scan(_write(tmp_path, b.text())) as t:
        assert [e.text_preview for e in t.events] == ["还在吗"]


def test_preserved_segment_is_relinked_after_the_summary(tmp_path):
    b = SessionBuilder(random.Random(4))
    b.say("早")
    b.reply([{"type": "text", "text": "早呀"}])
    head = b.say("保留的原文")
    tail = b.reply([{"type": "text", "text": "保留的回复"}])[-1]
    boundary = b._uuid()
    summary_uuid = b._uuid()
    b._emit(b._base(None) | {"type": "system", "subtype": "compact_boundary", "content": "compacted",
                             "uuid": boundary, "timestamp": b._tick(), "logicalParentUuid": tail,
                             "compactMetadata": {"trigger": "auto", "preservedSegment": {
                                 "headUuid": head, "anchorUuid": summary_uuid, "tailUuid": tail}}})
    b._emit(b._base(boundary) | {"type": "user", "message": {"role": "user", "content": "摘要"},
                                 "isCompactSummary": True, "uuid": summary_uuid, "timestamp": b._tick()})
    after = b._uuid()
    b._emit(b._base(summary_uuid) | {"type": "user", "message": {"role": "user", "content": "接着聊"},
                                     "uuid": after, "timestamp": b._tick()})
    b.last = after
    b.reply([{"type": "text", "text": "好"}])
    with scan(_write(tmp_path, b.text())) as t:
        t.measure(t.events)
        assert [e.text_preview for e in t.events] == ["摘要", "保留的原文", "保留的回复", "接着聊", "好"]


def test_malformed_lines_are_reported_with_line_numbers(tmp_path):
    b = companion_session(random.Random(5), turns=3, tool_every=0)
    lines = b.text().splitlines()
    lines.insert(2, "not json at all")
    lines.insert(5, "[1, 2, 3]")
    with scan(_write(tmp_path, "\n".join(lines) + "\n")) as t:
        assert [(bad.lineno, "JSON object" in bad.error) for bad in t.bad_lines] == [(3, False), (6, True)]
        assert [e.uuid for e in t.events] == b.expected_chain


def test_unknown_line_types_and_fields_survive_a_rewrite(tmp_path):
    from ombre.window.forge import ForgeOptions, run
    from ombre.window.select import Selector

    b = SessionBuilder(random.Random(6))
    b.say("你好")
    b.reply([{"type": "text", "text": "嗨"}])
    lines = [json.loads(x) for x in b.lines]
    lines[0]["someFutureField"] = {"kept": True}
    lines[1]["message"]["content"][0]["citations"] = [{"x": 1}]
    text = "\n".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in lines)
    text += '\n{"type":"future-metadata","payload":"whatever"}\n'
    path = _write(tmp_path, text + "\n")
    result = run(path, ForgeOptions(selector=Selector(retain=60_000)))
    out = [json.loads(x) for x in Path(result.new_path).read_text(encoding="utf-8").splitlines()]
    assert out[0]["someFutureField"] == {"kept": True}
    assert out[1]["message"]["content"][0]["citations"] == [{"x": 1}]


def test_real_user_excludes_tool_results_meta_and_command_output():
    def user(content, **kw):
        return {"type": "user", "message": {"role": "user", "content": content}, **kw}

    assert is_real_user(user("今天好累"))
    assert is_real_user(user([{"type": "text", "text": "看图"}, {"type": "image", "source": {}}]))
    assert is_real_user(user("<command-name>/model</command-name>"))  # the person typed a command
    assert not is_real_user(user([{"type": "tool_result", "tool_use_id": "t", "content": "x"}]))
    assert not is_real_user(user("hidden", isMeta=True))
    assert not is_real_user(user("summary", isCompactSummary=True))
    assert not is_real_user(user("<local-command-stdout>ok</local-command-stdout>"))
    assert not is_real_user(user([{"type": "text", "text": "[Request interrupted by user]"}]))
    assert not is_real_user(user("交接", ombreHandoff=True))
