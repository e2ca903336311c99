"""diet, forge (every selection mode) and anchors on every real transcript in ../shared/fixtures."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ombre.errors import TranscriptError
from ombre.transcript.chain import scan
from ombre.window.anchors import anchors
from ombre.window.diet import DietOptions
from ombre.window.diet import run as run_diet
from ombre.window.forge import ForgeOptions
from ombre.window.forge import run as run_forge
from ombre.window.select import EndSpec, Selector, local_time, shanghai_day
from tests.conftest import FIXTURES, fixture_id, fixture_transcripts, install, sha256
from tests.support.invariants import assert_new_session_sound

# Files with no main-chain reply to end a window on: subagent sidechains, hook logs (not a transcript),
# and a session whose last act was /compact (only the summary and command output follow the boundary).
NOTHING_TO_KEEP = {
    "fasthooks-2.0.76/sample_agent_sidechain.jsonl",
    "fasthooks-2.0.76/sample_hook_logs.jsonl",
    "fasthooks-2.0.76/sample_main_transcript.jsonl",
    "spotter-2.1/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
    "spotter-2.1/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl",
    "viewer-1.0/agent-test-hash-123.jsonl",
    "viewer-1.0/agent-test-hash-456.jsonl",
}
ALL = fixture_transcripts()
USABLE = [p for p in ALL if fixture_id(p) not in NOTHING_TO_KEEP]


def test_fixture_list_is_complete():
    assert len(ALL) >= 13 and NOTHING_TO_KEEP <= {fixture_id(p) for p in ALL}


@pytest.mark.parametrize("src", ALL, ids=fixture_id)
def test_anchors_are_real_user_events_with_forge_idx(src: Path, claude_home: Path):
    path = install(src, claude_home)
    listed = anchors(path, limit=0)
    with scan(path) as t:
        events = t.events
        for a in listed:
            e = events[a.idx]
            assert e.uuid == a.uuid and a.time == local_time(e)
            # the person's messages, and compaction summaries (the person's earlier words live there)
            assert e.real_user if a.kind == "person" else e.compact_summary and a.kind == "summary"
    assert [a.idx for a in listed] == sorted(a.idx for a in listed)


@pytest.mark.parametrize("src", [p for p in ALL if fixture_id(p) in NOTHING_TO_KEEP], ids=fixture_id)
def test_nothing_to_keep_is_a_clear_error_and_writes_nothing(src: Path, claude_home: Path):
    path = install(src, claude_home)
    before = sorted(path.parent.iterdir())
    with pytest.raises(TranscriptError) as err:
        run_forge(path, ForgeOptions())
    assert "reply" in err.value.message or "main-chain" in err.value.message
    with pytest.raises(TranscriptError):
        run_diet(path, DietOptions())
    assert sorted(path.parent.iterdir()) == before


@pytest.mark.parametrize("src", USABLE, ids=fixture_id)
def test_diet_keeps_dialogue_and_holds_invariants(src: Path, claude_home: Path):
    path = install(src, claude_home)
    digest = sha256(path)
    result = run_diet(path, DietOptions(squash=500))
    assert sha256(path) == digest
    objs = assert_new_session_sound(path, Path(result.new_path), squash=500)
    assert result.events_kept == len([o for o in objs if o["type"] in ("user", "assistant")])
    with scan(path) as t:
        kept_src = [e for e in t.events if e.idx <= result.selection["kept_to_idx"]]
    with scan(Path(result.new_path)) as n:
        n.measure(n.events)
        # diet keeps every event of the session up to the last finished reply (the fixtures are < retain)
        assert [e.uuid for e in n.events] == [e.uuid for e in kept_src]
        for e in n.events:
            if e.tool_results or e.tool_uses:
                assert e.size < 2_000, "tool payloads are squashed to the cap"


@pytest.mark.parametrize("src", USABLE, ids=fixture_id)
@pytest.mark.parametrize("retain", [1, 60_000])
def test_forge_tail_retain(src: Path, retain: int, claude_home: Path):
    path = install(src, claude_home)
    digest = sha256(path)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=retain, max_kept=100_000)))
    assert sha256(path) == digest
    assert_new_session_sound(path, Path(result.new_path))
    if retain == 1:
        assert result.turns_kept == 1, "the last turn is kept even when it alone exceeds the retain"
    elif result.turns_kept > 1:
        assert result.tokens_kept <= retain


@pytest.mark.parametrize("src", USABLE, ids=fixture_id)
def test_forge_keep_days(src: Path, claude_home: Path):
    path = install(src, claude_home)
    with scan(path) as t:
        last_user = [e for e in t.events if e.type == "user"][-1]
        day = shanghai_day(last_user)
    result = run_forge(path, ForgeOptions(selector=Selector(keep_days=(day,), max_kept=100_000)))
    objs = assert_new_session_sound(path, Path(result.new_path))
    with scan(Path(result.new_path)) as n:
        starts = [e for e in n.events if e.real_user]
        assert all(shanghai_day(e) == day for e in starts)
    assert objs


@pytest.mark.parametrize("src", USABLE, ids=fixture_id)
def test_forge_range_by_uuid_and_ts(src: Path, claude_home: Path):
    path = install(src, claude_home)
    with scan(path) as t:
        events = t.events
        first = next(e for e in events if e.type == "user")
        to_ts = events[-1].timestamp
    sel = Selector(keep_from=EndSpec(uuid=first.uuid[:12]), keep_to=EndSpec(ts=to_ts), max_kept=1_000_000)
    dry = run_forge(path, ForgeOptions(selector=sel, dry_run=True))
    assert dry.selection["from"]["idx"] == first.idx
    assert not Path(dry.new_path).exists()
    result = run_forge(path, ForgeOptions(selector=sel))
    assert_new_session_sound(path, Path(result.new_path))
    assert result.selection["kept_from_idx"] == first.idx


@pytest.mark.parametrize("src", USABLE, ids=fixture_id)
def test_forge_range_by_idx_matches_anchor_idx(src: Path, claude_home: Path):
    """The idx anchors shows is the idx forge cuts at."""
    path = install(src, claude_home)
    listed = anchors(path, limit=0)
    if not listed:
        pytest.skip("no real user message to anchor on")
    a = listed[-1]
    result = run_forge(path, ForgeOptions(selector=Selector(keep_from=EndSpec(idx=a.idx), max_kept=1_000_000)))
    new = Path(result.new_path)
    assert_new_session_sound(path, new)
    lines = [json.loads(x) for x in new.read_text(encoding="utf-8").splitlines()]
    # a compaction summary before the range is carried in a line of its own ahead of it
    first_line = lines[1] if lines[0].get("ombreCarry") == ["summary"] else lines[0]
    assert first_line["uuid"] == a.uuid


def test_real_thinking_signatures_survive_forge(claude_home: Path):
    """The 2.0.76 fixture has real signatures; cut before its /compact so it has replies to keep."""
    src = FIXTURES / "fasthooks-2.0.76" / "sample_main_transcript.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()
    cut = next(i for i, l in enumerate(lines) if '"compact_boundary"' in l)
    path = claude_home / "projects" / "-work" / "3b0e3c43-6c43-4f8e-9c43-0c5c1a1f1e2d.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines[:cut]) + "\n", encoding="utf-8")
    for selector in (Selector(retain=1), Selector(retain=60_000)):
        result = run_forge(path, ForgeOptions(selector=selector))
        objs = assert_new_session_sound(path, Path(result.new_path))
        signatures = [b["signature"] for o in objs if o["type"] == "assistant"
                      for b in o["message"]["content"] if b.get("type") == "thinking"]
        assert signatures and all(len(s) > 100 for s in signatures)
        assert result.thinking_kept == len(signatures)
