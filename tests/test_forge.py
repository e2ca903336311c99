"""forge and diet behaviour beyond the invariants: handoff, squash, usage, history, refusals."""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from ombre import jsonl_log
from ombre.errors import LiveSessionError, UsageError
from ombre.window.diet import DietOptions
from ombre.window.diet import run as run_diet
from ombre.window.forge import HANDOFF_HEADER, ForgeOptions
from ombre.window.forge import run as run_forge
from ombre.window.select import Selector
from ombre.window.squash import squash_line, squash_text
from tests.conftest import sha256
from tests.support.invariants import assert_new_session_sound
from tests.support.transcript_gen import SessionBuilder, companion_session, fake_png, long_agentic_turn


def _write(tmp_path: Path, b: SessionBuilder, age_s: float = 3600) -> Path:
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    old = time.time() - age_s
    os.utime(path, (old, old))
    return path


def _objs(path: Path) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines()]


def _texts(content: object) -> list[str]:
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


def test_inject_puts_a_marked_handoff_first(tmp_path):
    path = _write(tmp_path, companion_session(random.Random(1), turns=5))
    result = run_forge(path, ForgeOptions(selector=Selector(retain=1), inject_text="正在谈：周末去哪。\n红线：别提前任。"))
    objs = assert_new_session_sound(path, Path(result.new_path))
    first = objs[0]
    assert first["type"] == "user" and first["isMeta"] is True and first["ombreHandoff"] is True
    # what the window carries of the cut (the turn's opening request, if the cut fell inside it), then the handoff
    handoff = _texts(first["message"]["content"])[-1]
    assert handoff.startswith(HANDOFF_HEADER) and "别提前任" in handoff
    # the kept tail follows: the last turn's own first line, or, when its tool work alone is over the
    # budget, the response after its finished calls (cut inside the turn)
    assert "ombreHandoff" not in objs[1] and (objs[1]["type"] == "user" or result.selection["cut_inside_turn"])
    assert result.injected


def test_dry_run_writes_nothing_and_reports(tmp_path):
    path = _write(tmp_path, companion_session(random.Random(2), turns=6, image_every=2, payload_chars=5_000))
    before = sorted(path.parent.iterdir())
    result = run_forge(path, ForgeOptions(selector=Selector(retain=1_000), squash=1_000, dry_run=True,
                                          history=tmp_path / "h.jsonl"))
    assert sorted(path.parent.iterdir()) == before and not (tmp_path / "h.jsonl").exists()
    assert result.dry_run and result.bytes_after is None
    assert result.source_path == str(path) and result.new_session in result.new_path
    assert result.events_kept > 0 and result.thinking_kept > 0 and result.tokens_kept > 0
    assert result.images_squashed + result.payloads_squashed > 0


def test_diet_squashes_tool_output_and_images_with_markers(tmp_path):
    path = _write(tmp_path, companion_session(random.Random(3), turns=6, image_every=3, payload_chars=8_000))
    digest = sha256(path)
    result = run_diet(path, DietOptions(squash=2_000))
    assert sha256(path) == digest
    text = Path(result.new_path).read_text(encoding="utf-8")
    assert "ombre 已省略图片：image/png" in text and "ombre 已省略" in text
    assert result.images_squashed == 2 and result.payloads_squashed > 0
    assert Path(result.new_path).stat().st_size < path.stat().st_size / 2
    src = [o for o in _objs(path) if o.get("type") in ("user", "assistant")]
    new = [o for o in _objs(Path(result.new_path)) if o.get("type") in ("user", "assistant")]
    assert [o["uuid"] for o in new] == [o["uuid"] for o in src]  # dialogue all kept


def test_squash_keeps_head_and_tail_and_says_how_much_was_cut():
    text = "头" * 100 + "x" * 10_000 + "尾" * 100
    short = squash_text(text, 600)
    assert short.startswith("头" * 100) and short.endswith("尾" * 100)
    assert "已省略 9,600 字符，原长 10,200 字符" in short
    assert squash_text("短", 600) is None


def test_thinking_after_a_changed_block_is_dropped_in_that_line():
    line = {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t", "name": "Write", "input": {"content": "x" * 5_000}},
        {"type": "thinking", "thinking": "想", "signature": "s"},
    ]}}
    stats = squash_line(line, 500)
    assert stats.thinking_dropped == 1 and [b["type"] for b in line["message"]["content"]] == ["tool_use"]
    kept = {"type": "assistant", "message": {"content": [
        {"type": "thinking", "thinking": "想", "signature": "s"},
        {"type": "tool_use", "id": "t", "name": "Write", "input": {"content": "x" * 5_000}}]}}
    assert squash_line(kept, 500).thinking_dropped == 0 and kept["message"]["content"][0]["thinking"] == "想"


def test_stored_usage_is_rewritten_to_the_new_size(tmp_path):
    b = companion_session(random.Random(4), turns=10)
    b.usage_input = 170_000
    b.reply([{"type": "text", "text": "最后一句"}])
    path = _write(tmp_path, b)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=2_000)))
    assert result.pct_before > 80
    last = [o for o in _objs(Path(result.new_path)) if o["type"] == "assistant"][-1]["message"]["usage"]
    context = last["input_tokens"] + last["cache_creation_input_tokens"] + last["cache_read_input_tokens"]
    assert context < 0.5 * 170_000 and last["cache_read_input_tokens"] == 0


def test_history_log_records_each_run(tmp_path):
    path = _write(tmp_path, companion_session(random.Random(5), turns=4))
    log = tmp_path / "ombre" / "history.jsonl"
    ok = run_forge(path, ForgeOptions(selector=Selector(retain=1), history=log))
    with pytest.raises(UsageError):
        run_forge(path, ForgeOptions(squash=10, history=log))
    entries = jsonl_log.read(log)
    assert [e["ok"] for e in entries] == [True, False]
    assert entries[0]["old_sid"] == path.stem and entries[0]["new_sid"] == ok.new_session
    assert entries[0]["mode"] == "forge" and entries[0]["options"]["selector"]["retain"] == 1
    assert "too small" in entries[1]["error"]


def test_live_session_with_half_written_last_line_is_refused(tmp_path):
    b = companion_session(random.Random(6), turns=3)
    path = _write(tmp_path, b)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"parentUuid":"x","type":"assistant","message":{"content":[{"type":"te')
    before = sorted(path.parent.iterdir())
    with pytest.raises(LiveSessionError, match="half written"):
        run_forge(path, ForgeOptions())
    assert sorted(path.parent.iterdir()) == before


def test_a_half_written_line_left_by_a_crash_long_ago_is_left_out_with_a_warning(tmp_path):
    b = companion_session(random.Random(6), turns=3)
    path = _write(tmp_path, b)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"parentUuid":"x","type":"assistant","message":{"content":[{"type":"te')
    original = path.read_bytes()
    old = time.time() - 11 * 60
    os.utime(path, (old, old))
    result = run_forge(path, ForgeOptions())
    assert any("half written" in w and "crash" in w for w in result.warnings), result.warnings
    assert path.read_bytes() == original  # the original keeps its line
    new = path.with_name(f"{result.new_session}.jsonl").read_text(encoding="utf-8")
    assert '"parentUuid":"x"' not in new and new.endswith("\n")


def test_turn_in_flight_in_a_fresh_file_is_refused(tmp_path):
    b = companion_session(random.Random(7), turns=3)
    b.say("你在吗？")  # no reply yet, and the file was written just now
    path = _write(tmp_path, b, age_s=0)
    with pytest.raises(LiveSessionError, match="in progress"):
        run_diet(path, DietOptions())


def test_old_unanswered_tail_is_reported_not_kept(tmp_path):
    b = companion_session(random.Random(8), turns=3)
    b.say("你在吗？")
    path = _write(tmp_path, b, age_s=3_600)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=60_000)))
    assert result.dropped_trailing and "你在吗？" in result.dropped_trailing[-1]
    assert_new_session_sound(path, Path(result.new_path))


def test_squash_below_the_minimum_is_refused(tmp_path):
    path = _write(tmp_path, companion_session(random.Random(9), turns=2))
    with pytest.raises(UsageError, match="too small"):
        run_forge(path, ForgeOptions(squash=50))


def test_forge_never_writes_when_verification_fails(tmp_path, monkeypatch):
    from ombre.errors import InvariantError
    from ombre.window import forge as forge_mod

    path = _write(tmp_path, companion_session(random.Random(10), turns=3))
    before = sorted(path.parent.iterdir())

    def broken(tmp: Path, expect) -> None:
        raise InvariantError("simulated")

    monkeypatch.setattr(forge_mod, "verify_session", broken)
    with pytest.raises(InvariantError):
        run_forge(path, ForgeOptions())
    assert sorted(path.parent.iterdir()) == before  # no temporary file, no new session


def test_image_placeholder_names_mime_and_size():
    rng = random.Random(1)
    line = {"type": "user", "message": {"content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/jpeg", "data": fake_png(rng, 30_000)}}]}}
    stats = squash_line(line, 2_000)
    assert stats.images == 1
    assert line["message"]["content"][0] == {"type": "text", "text": "[ombre 已省略图片：image/jpeg，base64 约 29 KB]"}


def test_tool_call_in_flight_in_a_fresh_file_is_refused(tmp_path):
    b = companion_session(random.Random(11), turns=2, tool_every=0)
    b.say("帮我查一下天气")
    b.reply([{"type": "tool_use", "id": "toolu_inflight", "name": "Bash", "input": {"command": "weather"}}])
    path = _write(tmp_path, b, age_s=1)
    with pytest.raises(LiveSessionError, match="in progress"):
        run_forge(path, ForgeOptions())
    old = time.time() - 3_600  # the same file an hour later: the crashed call is dropped, not kept
    os.utime(path, (old, old))
    result = run_forge(path, ForgeOptions())
    assert any("tool_use" in d for d in result.dropped_trailing)
    assert_new_session_sound(path, Path(result.new_path))


@pytest.mark.parametrize("compacted", [False, True])
def test_forge_cuts_inside_a_long_turn_after_its_finished_tool_calls(tmp_path, compacted):
    b = long_agentic_turn(random.Random(8), compacted=compacted)
    path = _write(tmp_path, b)
    original = path.read_bytes()
    result = run_forge(path, ForgeOptions(selector=Selector(retain=20_000)))
    assert path.read_bytes() == original
    assert result.events_kept < result.events_total and result.tokens_kept <= 20_000
    assert any("cut inside" in w and "marker" in w for w in result.warnings), result.warnings
    assert result.selection["cut_inside_turn"] is not None
    lines = [json.loads(x) for x in Path(result.new_path).read_text(encoding="utf-8").splitlines()]
    chain = [o for o in lines if o.get("type") in ("user", "assistant")]
    assert chain[0]["type"] == "user" and chain[0].get("isMeta")
    # what the model knew of the cut part comes first, verbatim: the summary, else the turn's opening request
    opening = _texts(chain[0]["message"]["content"])
    if compacted:
        assert opening[0] == "之前在修测试，修到一半。" and chain[0]["ombreCarry"] == ["summary", "marker"]
    else:
        assert opening[1] == "帮我把这个项目的测试都修好"
        assert chain[0]["ombreCarry"] == ["request-label", "request", "marker"]
    assert "接上文" in opening[-1]
    assert chain[1]["type"] == "assistant" and chain[-1]["type"] == "assistant"
    asked = [b["id"] for o in chain if o["type"] == "assistant" for b in o["message"]["content"]
             if b.get("type") == "tool_use"]
    answered = [b["tool_use_id"] for o in chain if o["type"] == "user" and isinstance(o["message"]["content"], list)
                for b in o["message"]["content"] if b.get("type") == "tool_result"]
    assert asked and sorted(asked) == sorted(answered)  # every kept call with its result, no orphan result


def test_a_handoff_opens_a_window_cut_inside_a_turn(tmp_path):
    path = _write(tmp_path, long_agentic_turn(random.Random(9), compacted=False))
    result = run_forge(path, ForgeOptions(selector=Selector(retain=20_000), inject_text="正在做：修测试。"))
    first = json.loads(Path(result.new_path).read_text(encoding="utf-8").splitlines()[0])
    opening = _texts(first["message"]["content"])
    # the handoff is added to what the model knows, never put in its place
    assert opening[1] == "帮我把这个项目的测试都修好" and "正在做：修测试。" in opening[-1]
    assert any("the handoff" in w for w in result.warnings) and result.carried == ["request"]
