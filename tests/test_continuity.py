"""Continuity at the seams: a rewrite never drops what the model knows (the compaction summary, the turn's
request), the verifier refuses one that would, and the handoff pack and anchors read compaction summaries."""
from __future__ import annotations

import json
import os
import random
import stat
import time
from pathlib import Path

import pytest

from ombre.errors import InvariantError
from ombre.tunnel.handoff import Said, _keywords, is_question, prepare, preview
from ombre.window import carry
from ombre.window.anchors import anchors
from ombre.window.diet import DietOptions
from ombre.window.diet import run as run_diet
from ombre.window.forge import ForgeOptions
from ombre.window.forge import run as run_forge
from ombre.window.select import EndSpec, Selector
from ombre.window.verify import Expectation, check_session
from tests.conftest import sha256
from tests.support.invariants import assert_new_session_sound
from tests.support.transcript_gen import SessionBuilder, long_agentic_turn

SUMMARY = ("This session is being continued from a previous conversation that ran out of context. The summary "
           "below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent:\n"
           "   对方让我把周报整理好发给她老板。\n2. All user messages:\n   - \"帮我把这周的周报整理一下\"\n"
           "   - \"我下周三要考教资，有点慌\"\n   - (interrupted a long command)\n3. Pending Tasks:\n   - 发周报\n")


def _write(tmp_path: Path, b: SessionBuilder, mode: int = 0o600) -> Path:
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    path.chmod(mode)
    old = time.time() - 3600
    os.utime(path, (old, old))
    return path


def _lines(path: Path | str) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines()]


def _texts(obj: dict) -> list[str]:
    content = obj["message"]["content"]
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


def _compacted_then_chat(rng: random.Random, turns: int = 6) -> SessionBuilder:
    """A compaction, then a few chat turns with tool work: the summary heads the active chain."""
    b = SessionBuilder(rng)
    b.say("开始")
    b.reply([{"type": "text", "text": "好"}])
    b.compact(SUMMARY)
    b.reply([{"type": "text", "text": "我接着整理周报。"}])
    for n in range(turns):
        b.say(f"第{n}句：今天的事情有点多")
        b.tool_round([("Bash", {"command": "cat notes"}, "x" * 6_000)])
        b.reply([{"type": "text", "text": f"好的，第{n}件记下了"}])
    return b


def test_a_cut_inside_a_turn_after_a_compaction_carries_the_summary_first(tmp_path):
    path = _write(tmp_path, long_agentic_turn(random.Random(5), compacted=True))
    digest = sha256(path)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=20_000)))
    assert sha256(path) == digest and result.selection["cut_inside_turn"] is not None
    objs = assert_new_session_sound(path, Path(result.new_path))
    first = objs[0]
    assert first["ombreCarry"] == ["summary", "marker"] and result.carried == ["summary"]
    assert _texts(first)[0] == "之前在修测试，修到一半。"  # verbatim, first
    assert result.tokens_kept <= 20_000  # the summary counts against the budget


def test_a_cut_inside_a_turn_carries_its_opening_request_before_the_handoff(tmp_path):
    path = _write(tmp_path, long_agentic_turn(random.Random(6), compacted=False))
    result = run_forge(path, ForgeOptions(selector=Selector(retain=15_000), inject_text="当前话题：修测试"))
    first = _lines(result.new_path)[0]
    assert first["ombreCarry"] == ["request-label", "request", "handoff"]
    texts = _texts(first)
    assert texts[1] == "帮我把这个项目的测试都修好" and "当前话题：修测试" in texts[2]
    assert result.tokens_kept <= 15_000


def test_whole_turns_kept_after_a_compaction_still_carry_the_summary(tmp_path):
    b = _compacted_then_chat(random.Random(7))
    path = _write(tmp_path, b)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=8_000)))
    assert result.selection["cut_inside_turn"] is None and result.carried == ["summary"]
    objs = assert_new_session_sound(path, Path(result.new_path))
    assert objs[0]["ombreCarry"] == ["summary"] and _texts(objs[0]) == [SUMMARY]
    assert objs[1]["type"] == "user" and _texts(objs[1])[0].startswith("第")  # then the kept turns, whole
    assert result.tokens_kept <= 8_000


def test_a_summary_over_the_budget_alone_is_kept_with_a_warning(tmp_path):
    rng = random.Random(8)
    b = SessionBuilder(rng)
    b.say("开始")
    b.reply([{"type": "text", "text": "好"}])
    b.compact(SUMMARY + "细节：" + "很长的摘要" * 3_000)
    b.reply([{"type": "text", "text": "接着做"}])
    b.say("那继续吧")
    b.reply([{"type": "text", "text": "好的"}])
    path = _write(tmp_path, b)
    result = run_forge(path, ForgeOptions(selector=Selector(retain=2_000)))
    assert result.carried == ["summary"]
    assert any("over the budget" in w and "kept anyway" in w for w in result.warnings), result.warnings
    assert "很长的摘要" in json.dumps(_lines(result.new_path)[0], ensure_ascii=False)


def test_a_diet_that_drops_the_oldest_turns_carries_the_summary(tmp_path):
    path = _write(tmp_path, _compacted_then_chat(random.Random(9), turns=8))
    result = run_diet(path, DietOptions(retain=1_000, squash=500))
    assert result.carried == ["summary"] and result.events_kept < result.events_total
    assert _texts(_lines(result.new_path)[0]) == [SUMMARY]


def test_forging_a_forged_window_carries_the_summary_and_request_again_not_the_old_handoff(tmp_path):
    b = SessionBuilder(random.Random(10))
    b.say("开始")
    b.reply([{"type": "text", "text": "好"}])
    b.compact(SUMMARY)
    b.say("把三十个测试都跑一遍")
    for i in range(30):
        b.tool_round([("Bash", {"command": f"pytest -k t{i}"}, f"第{i}轮" + "z" * 3_000)])
    b.reply([{"type": "text", "text": "都跑完了"}])
    path = _write(tmp_path, b)
    once = run_forge(path, ForgeOptions(selector=Selector(retain=30_000), inject_text="旧的交接包"))
    assert once.carried == ["summary", "request"]
    twice = run_forge(Path(once.new_path), ForgeOptions(selector=Selector(retain=10_000), inject_text="新的交接包"))
    first = _lines(twice.new_path)[0]
    assert first["ombreCarry"] == ["summary", "request-label", "request", "handoff"]
    text = json.dumps(first, ensure_ascii=False)
    assert "把三十个测试都跑一遍" in text and "新的交接包" in text and "旧的交接包" not in text
    assert sum(1 for o in _lines(twice.new_path) if o.get("ombreCarry")) == 1
    # a diet of the forged window keeps its first line whole, the swap's handoff included (carried, not doubled)
    dieted = run_diet(Path(once.new_path), DietOptions(retain=1_000_000, squash=500))
    first = _lines(dieted.new_path)[0]
    assert first["ombreCarry"] == ["summary", "request-label", "request", "handoff"]
    assert "旧的交接包" in json.dumps(first, ensure_ascii=False)
    assert sum(1 for o in _lines(dieted.new_path) if o.get("ombreCarry")) == 1


def test_range_ends_keep_the_summary_when_the_range_starts_after_it(tmp_path):
    b = _compacted_then_chat(random.Random(11))
    path = _write(tmp_path, b)
    listed = anchors(path, limit=0)
    assert listed[0].kind == "summary" and "有点慌" in listed[0].preview  # the summary is an anchor of its own
    last = listed[-1]
    result = run_forge(path, ForgeOptions(selector=Selector(keep_from=EndSpec(idx=last.idx), max_kept=1_000_000)))
    objs = _lines(result.new_path)
    assert objs[0]["ombreCarry"] == ["summary"] and objs[1]["uuid"] == last.uuid
    whole = run_forge(path, ForgeOptions(selector=Selector(keep_from=EndSpec(idx=listed[0].idx),
                                                           max_kept=1_000_000)))
    assert whole.carried == [] and _lines(whole.new_path)[0].get("isCompactSummary")


def test_the_verifier_refuses_a_window_without_the_newest_words_and_nothing_is_written(tmp_path, monkeypatch):
    path = _write(tmp_path, long_agentic_turn(random.Random(12), compacted=False))
    before = sorted(path.parent.iterdir())
    monkeypatch.setattr(carry, "carried", lambda *a, **k: carry.Carried())  # a bug that forgets to carry
    with pytest.raises(InvariantError) as err:
        run_forge(path, ForgeOptions(selector=Selector(retain=15_000)))
    assert "帮我把这个项目的测试都修好" in err.value.message and "lost what the model knew" in err.value.message
    assert sorted(path.parent.iterdir()) == before


def test_check_session_names_the_missing_summary(tmp_path):
    path = _write(tmp_path, long_agentic_turn(random.Random(13), compacted=True))
    result = run_forge(path, ForgeOptions(selector=Selector(retain=20_000)))
    new = Path(result.new_path)
    assert check_session(new, Expectation(session_id=new.stem, required=["之前在修测试，修到一半。"])) == []
    problems = check_session(new, Expectation(session_id=new.stem, required=["不在这里的原话"]))
    assert problems and "不在这里的原话" in problems[0]


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_a_rewrite_keeps_the_originals_mode(tmp_path, mode):
    path = _write(tmp_path, _compacted_then_chat(random.Random(14)), mode=mode)
    old = os.umask(0)
    try:
        forged = run_forge(path, ForgeOptions(selector=Selector(retain=5_000)))
        dieted = run_diet(path, DietOptions(squash=500))
    finally:
        os.umask(old)
    for new in (forged.new_path, dieted.new_path):
        assert stat.S_IMODE(Path(new).stat().st_mode) == mode


def test_the_handoff_topic_is_never_an_english_function_word():
    """The product check's handoff read "当前话题：the、芒果" after a chat that turned to English."""
    rows = [Said("对方", t, None) for t in ("我对芒果过敏，芒果一点都不能吃", "My sister is getting married and the party is in the garden",
                                            "I'm making arepas for the party, the ones from the video")]
    topic = _keywords(rows)
    assert "the" not in topic and "and" not in topic and set(topic[:2]) == {"芒果", "party"}


def test_the_handoff_topic_is_what_the_chat_ended_on_among_words_said_as_often():
    """The product check's handoff read "当前话题：芒果、过敏" after the chat had moved on to a run and an early start."""
    rows = [Said("对方", t, None) for t in ("我跟你说，我对芒果过敏，吃了会起疹子", "我想喝奶茶", "算了，还是不喝了，最近在控糖",
                                            "我决定了，从今天开始每天晚上跑步三公里", "明天还得六点起床")]
    topic = _keywords(rows)
    assert "芒果" not in topic[:2] and "过敏" not in topic[:2]
    assert set(topic[:2]) <= {"六点", "起床", "跑步", "公里", "决定", "晚上"}, topic


# -- the handoff pack and anchors read what the summary says -------------------------------------------------
def test_the_handoff_pack_reads_the_persons_words_out_of_the_summary(tmp_path):
    path = _write(tmp_path, long_agentic_turn(random.Random(15), compacted=True))
    lines = path.read_text(encoding="utf-8").splitlines()
    objs = [json.loads(x) for x in lines]
    for o in objs:
        if o.get("isCompactSummary"):
            o["message"]["content"] = SUMMARY
    path.write_text("\n".join(json.dumps(o, ensure_ascii=False) for o in objs) + "\n", encoding="utf-8")
    pack = prepare(path)
    text = pack.render()
    assert "当前话题：未知" not in text and "最近原话：\n（无）" not in text
    assert "对方最后说（摘自压缩摘要）：「我下周三要考教资，有点慌」" in pack.topic
    assert "对方（摘自压缩摘要，" in text and "「帮我把这周的周报整理一下」" in text
    assert "interrupted" not in text  # a note about the person is not their words
    assert [s.text for s in pack.state] == ["我下周三要考教资，有点慌"]
    listed = anchors(path, limit=0)
    assert [a.kind for a in listed] == ["summary"] and "有点慌" in listed[0].preview


def test_a_forged_windows_first_line_is_read_as_the_persons_request(tmp_path):
    path = _write(tmp_path, long_agentic_turn(random.Random(16), compacted=False))
    result = run_forge(path, ForgeOptions(selector=Selector(retain=15_000)))
    pack = prepare(Path(result.new_path))
    assert pack.quotes and pack.quotes[-1].text == "帮我把这个项目的测试都修好" and not pack.quotes[-1].from_summary
    listed = anchors(Path(result.new_path), limit=0)
    assert listed[0].kind == "carried" and "帮我把这个项目的测试都修好" in listed[0].preview


def test_a_question_is_not_an_open_promise_and_state_comes_from_the_latest_feeling(tmp_path):
    b = SessionBuilder(random.Random(17))
    for said, answer in [("周五晚上我们视频，说好了。", "好，周五见。"),
                         ("我下个月要考什么来着，你还记得吗", "你说过是教资。"),
                         ("明天提醒我带伞好吗", "好的，明早提醒你。"),
                         ("唉，有点慌", "别慌，我陪着你。")]:
        b.say(said)
        b.reply([{"type": "text", "text": answer}])
    pack = prepare(_write(tmp_path, b))
    promises = [s.text for s in pack.open_items]
    assert "我下个月要考什么来着，你还记得吗" not in promises
    assert "周五晚上我们视频，说好了。" in promises and "明天提醒我带伞好吗" in promises
    assert pack.state and pack.state[-1].text == "唉，有点慌"


@pytest.mark.parametrize("sentence,question", [("我下个月要考什么来着", True), ("你还记得吗", True),
                                               ("你记得我生日是哪天吗？", True), ("明天提醒我带伞好吗", False),
                                               ("周四下午三点我要去复诊，你记得提醒我。", False),
                                               ("以后每天晚上十点我们互道晚安吧，好不好？", False)])
def test_is_question(sentence, question):
    assert is_question(sentence) is question


def test_the_preview_never_cuts_a_line():
    text = "\n".join(f"第{i}行：" + "字" * 37 for i in range(20))
    short = preview(text, 300)
    assert len(short) <= 300 and text.startswith(short) and all(line in text.splitlines() for line in short.splitlines())
