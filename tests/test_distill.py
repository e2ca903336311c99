"""Async distillation: the labelled snippets, the cursor, the triggers, the model
backend behind a fake that speaks OpenAI's wire format, and its failures."""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import os
import random
from pathlib import Path

import pytest

from ombre import jsonl_log
from ombre.app import keeper_distill, open_service
from ombre.settings import Settings
from ombre.tunnel.keeper import Keeper
from ombre.write.async_distill import Distiller, Turn, mark_started, reads_from, rules_candidates, started, status
from ombre.write.llm import from_settings
from tests.support.distill_score import load, score
from tests.support.fake_openai import FakeOpenAI
from tests.support.transcript_gen import SessionBuilder

NOW = dt.datetime(2026, 8, 3, 12, 0, tzinfo=dt.timezone.utc)


def test_rules_on_the_labelled_snippets():
    s = score(rules_candidates)
    assert s.cases >= 60
    assert s.invented_quotes == [] and s.from_assistant == []  # no exception allowed
    assert s.precision >= 0.8 and s.recall >= 0.8, (s.precision, s.recall)
    every = score(rules_candidates, load())  # the blind sets too, both splits: never an invented quote
    assert every.cases >= 300 and every.invented_quotes == [] and every.from_assistant == []


@pytest.mark.parametrize("turns", [
    [("person", "周末要不要去爬山？")],
    [("person", "周末要不要去爬山")],
    [("person", "明天吃火锅咋样")],
    [("person", "你觉得我该辞职吗")],
    [("person", "下周六去看展吧"), ("assistant", "好呀！"), ("person", "算了，不去了，太累")],
    [("person", "我想报个瑜伽班"), ("assistant", "挺好的"), ("person", "看了下价格还是算了吧")],
    # a choice not to, made now, is no fact under any cue (the product check stored 「还是不喝了」 as a preference)
    [("person", "我想喝奶茶"), ("assistant", "喝一杯也不错"), ("person", "算了，还是不喝了，最近在控糖")],
    [("person", "想了一晚上"), ("assistant", "嗯，我在听"), ("person", "我们还是不分手了")],
    [("person", "原定下周三的面试取消了")],
    [("assistant", "我答应你以后每天都跟你说早安，我记得你对芒果过敏"), ("person", "嗯嗯")],
    [("assistant", "你是不是不喜欢下雨天？"), ("person", "哈哈 可能吧")],
    [("person", "如果我养猫的话就叫它年糕")],
    [("person", "你觉得我该不该跟他提分手")],  # an A-not-A question with no question mark
    [("person", "西瓜到底碰得碰不得")],
    [("person", "腊月二十三是小年还是二十四是小年")],
    [("person", "万一我中了五百万 第一件事就是辞职")],  # a condition's scope is the rest of the turn
    [("person", "下周六我要去北京面试 哈哈骗你的")],  # taken back as a joke
    [("person", "我们本来约好周末视频的，他临时加班，取消了")],
    [("person", "这周五请假陪我妈去体检"), ("person", "我妈说她自己去 不用我了")],
])
def test_questions_cancelled_plans_and_the_assistants_words_are_never_distilled(turns):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert got == [], got


def test_a_request_asked_nicely_is_kept_and_a_replacement_plan_survives_its_cancel():
    ask = rules_candidates([Turn("person", "以后晚上八点你提醒我吃饭好不好", "u0")])
    assert [c.quote for c in ask] == ["以后晚上八点你提醒我吃饭好不好"] and ask[0].type in ("承诺", "规则", "约定")
    plan = rules_candidates([Turn("person", "明天晚上要跟同事去吃火锅", "u0"), Turn("assistant", "好耶", "u1"),
                             Turn("person", "群里说取消了 改成后天中午吃烤肉", "u2")])
    assert [c.quote for c in plan] == ["改成后天中午吃烤肉"]


@pytest.mark.parametrize("turns, kept", [
    # a new version of a request replaces the old one
    ([("person", "每天提醒我喝八杯水 可以不"), ("assistant", "可以"), ("person", "诶八杯太多了 改成每天提醒我喝六杯吧")],
     ["改成每天提醒我喝六杯吧"]),
    ([("person", "以后叫我阿杰"), ("assistant", "好的阿杰。"), ("person", "算了还是叫我杰哥吧")], ["算了还是叫我杰哥吧"]),
    ([("person", "你答应我每天早上七点叫我起床哈"), ("assistant", "好"), ("person", "不对不对，每天早上七点半叫我")],
     ["每天早上七点半叫我"]),
    # traditional characters read as simplified; the quote stays as typed
    ([("person", "我對芒果過敏")], ["我對芒果過敏"]),
    # the time the person gives when the assistant asks about a request
    ([("person", "宝宝满月那天你记得提醒我拍照 答应我哈"), ("assistant", "满月是哪天呀？"), ("person", "下个月12号")],
     ["宝宝满月那天你记得提醒我拍照", "下个月12号"]),
    # a request that asks the companion to put a question to the person is a request
    ([("person", "每次下播你都问我一句今天嗓子咋样 能做到不")], ["每次下播你都问我一句今天嗓子咋样"]),
])
def test_corrections_replacements_answers_and_traditional_characters(turns, kept):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert sorted(c.quote for c in got) == sorted(kept), got


@pytest.mark.parametrize("turns, kept, content", [
    # a correction that begins with its new value keeps it, whatever follows
    ([("person", "我生日是3月12号哦"), ("assistant", "好的 3月12号"), ("person", "啊不对不对 打错了 是3月21号 12是我妹的")],
     ["是3月21号 12是我妹的"], "我生日是3月12号哦；更正：是3月21号 12是我妹的"),
    # the person's own plan moved, told by someone else
    ([("person", "我下个月15号搬家"), ("assistant", "好"), ("person", "哦不对 房东刚说改到20号了 15号那边还没腾出来")],
     ["房东刚说改到20号了 15号那边还没腾出来"], "我下个月15号搬家；更正：房东刚说改到20号了 15号那边还没腾出来"),
    # the answer to the companion's question about the person's life: its first words, short ones joined
    ([("person", "今天终于下班了 累死"), ("assistant", "辛苦啦～你是做什么工作的呀？"), ("person", "嗯 护士 三班倒的那种 今天刚下夜班")],
     ["护士 三班倒的那种"], "你是做什么工作的呀？——护士 三班倒的那种"),
    ([("person", "终于把娃哄睡了"), ("assistant", "辛苦了 孩子多大啦？"), ("person", "老大六岁 老二才八个月")],
     ["老大六岁"], "孩子多大啦？——老大六岁"),
    # the time of an event the companion asked about, with what it is for
    ([("person", "下周我要过生日了 又老一岁"), ("assistant", "哇 哪天呀？我记一下"), ("person", "11月23号")],
     ["下周我要过生日了", "11月23号"], "下周我要过生日了；11月23号"),
    # asked without its question mark
    ([("person", "刚下班"), ("assistant", "你老家是哪里的呀"), ("person", "湖南衡阳的 一个小县城")],
     ["湖南衡阳的"], "你老家是哪里的呀？——湖南衡阳的"),
    # a yes or no about the person's life answered with more than yes; where they live; asked in Cantonese
    ([("person", "好冷清"), ("assistant", "你有兄弟姐妹吗"), ("person", "有个姐 我们很亲")],
     ["有个姐"], "你有兄弟姐妹吗？——有个姐"),
    ([("person", "今天好冷"), ("assistant", "你在哪个城市呀"), ("person", "沈阳 零下二十度")],
     ["沈阳 零下二十度"], "你在哪个城市呀？——沈阳 零下二十度"),
    ([("person", "好热"), ("assistant", "你系边度人呀？"), ("person", "佛山人 而家喺广州")],
     ["佛山人"], "你系边度人呀？——佛山人"),
    # who someone the person named is, asked by the companion
    ([("person", "晚上跟阿芳吃火锅"), ("assistant", "阿芳是？"), ("person", "我表姐阿芳 从小一起长大的")],
     ["我表姐阿芳"], "阿芳是？——我表姐阿芳"),
    # a name said wrong, then denied and given again
    ([("person", "我老板叫王建国"), ("assistant", "好的 王总"), ("person", "不是王建国 是王建军")],
     ["是王建军"], "我老板叫王建国；更正：是王建军"),
])
def test_answers_and_corrections_keep_their_context(turns, kept, content):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert sorted(c.quote for c in got) == sorted(kept), got
    assert content in [c.content for c in got], got


@pytest.mark.parametrize("turns", [
    # a yes-or-no question is answered yes; the fact, if any, says itself
    [("person", "好困"), ("assistant", "宝宝取好名字了吗？"), ("person", "取好啦")],
    # a question about the moment, and an answer that says nothing
    [("person", "好困"), ("assistant", "你今天怎么了？"), ("person", "加班到十点")],
    [("person", "好困"), ("assistant", "你是做什么工作的呀？"), ("person", "猜猜看")],
    [("person", "好困"), ("assistant", "你老家是哪里的？"), ("person", "不告诉你")],
    [("person", "好困"), ("assistant", "你是做什么工作的呀？"), ("person", "还行吧")],
])
def test_an_answer_that_tells_nothing_lasting_is_not_kept(turns):
    assert rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)]) == []


class Chat:
    """A session file that grows turn by turn, as Claude Code writes it."""

    def __init__(self, folder: Path) -> None:
        self.b = SessionBuilder(random.Random(4), clock=dt.datetime(2026, 8, 3, 1, 0, tzinfo=dt.timezone.utc))
        self.b.metadata()
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{self.b.sid}.jsonl"

    @property
    def soon(self) -> dt.datetime:
        """A minute after the last line: not idle yet."""
        last = json.loads(self.b.lines[-1])["timestamp"].replace("Z", "+00:00")
        return dt.datetime.fromisoformat(last) + dt.timedelta(minutes=1)

    def turn(self, person: str, reply: str = "嗯嗯。") -> None:
        self.b.say(person)
        self.b.reply([{"type": "text", "text": reply}])
        self.path.write_text(self.b.text())


@pytest.fixture
def setup(tmp_path: Path, embedder):
    settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre")})
    service = open_service(settings, embedder=embedder)
    yield settings, service, Chat(tmp_path / "projects" / "p")
    service.close()


def test_the_cursor_reads_only_what_is_new_and_a_session_older_than_ombre_starts_when_ombre_did(setup):
    settings, service, chat = setup
    chat.turn("以前的事：我对芒果过敏。")
    d = Distiller(settings, service)
    first = d.run(chat.path, now=chat.soon)  # the first distillation: ombre starts listening now
    assert not first.ran and "older session: read from" in first.reason and not service.store.list()
    assert first.cursor is not None
    chat.turn("我们约好了，以后每周三晚上都视频一次。", "好呀，我答应你每周三都在。")
    chat.turn("今天好累啊。")
    assert d.run(chat.path, now=chat.soon).reason.startswith("not due (2/5")
    for text in ("外面下雨了。", "哈哈哈", "我最喜欢桂花乌龙了。"):
        chat.turn(text)
    done = d.run(chat.path, now=chat.soon)
    assert done.ran and done.reason == "5 new turns"
    held = {m.content: m for m in service.store.list()}
    assert set(held) == {"以后每周三晚上都视频一次", "我最喜欢桂花乌龙了"}  # not the old 芒果 line
    commitment = held["以后每周三晚上都视频一次"]
    assert commitment.evidence.quote == "以后每周三晚上都视频一次" and commitment.status == "confirmed"
    assert commitment.evidence.from_session == chat.b.sid and commitment.evidence.date == "2026-08-03"
    assert not any("答应你" in m.content for m in held.values())  # the assistant's words are not hers
    assert d.run(chat.path, now=chat.soon).reason == "nothing new"


def test_ten_idle_minutes_trigger_a_run_and_a_forged_session_keeps_its_parents_cursor(setup, tmp_path):
    settings, service, chat = setup
    chat.turn("你好")
    d = Distiller(settings, service)
    d.run(chat.path, now=NOW)
    chat.turn("下周二我要去医院复诊。")
    last = chat.soon - dt.timedelta(minutes=1)
    assert d.run(chat.path, now=last + dt.timedelta(minutes=2)).reason.startswith("not due")
    assert d.run(chat.path, now=last + dt.timedelta(minutes=11)).reason == "idle 10 minutes"
    from ombre.window.forge import ForgeOptions
    from ombre.window.forge import run as forge

    forged = forge(chat.path, ForgeOptions(history=settings.history_log))
    result = d.run(Path(forged.new_path), now=last + dt.timedelta(minutes=30))
    assert result.reason == "nothing new"  # not "new session": the kept lines were already read


def test_dry_run_force_shows_candidates_and_writes_nothing(setup):
    settings, service, chat = setup
    chat.turn("你好")
    d = Distiller(settings, service)
    d.run(chat.path, now=NOW)
    chat.turn("提醒我周一交房租。")
    preview = d.run(chat.path, force=True, dry_run=True, now=NOW)
    assert preview.ran and preview.candidates[0]["quote"] == "提醒我周一交房租"
    assert service.store.list() == [] and d.run(chat.path, now=chat.soon).new_turns == 1  # cursor untouched


def test_async_distill_0_turns_it_off(setup, tmp_path):
    _, service, chat = setup
    chat.turn("我们约好了，以后每周三晚上都视频一次。")
    off = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "ASYNC_DISTILL": "0"})
    assert Distiller(off, service).run(chat.path, force=True).reason == "ASYNC_DISTILL=0"


def test_a_model_proposes_and_only_quotes_from_the_person_survive(setup, tmp_path):
    _, service, chat = setup
    with FakeOpenAI() as fake:
        settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"),
                                      "OMBRE_LLM": "openai", "OMBRE_LLM_MODEL": "qwen", "OMBRE_LLM_BASE_URL": fake.url})
        d = Distiller(settings, service, from_settings(settings))
        chat.turn("你好")
        d.run(chat.path, now=NOW)
        chat.turn("后天我要搬家，可能没空聊天。", "我答应你搬家那天不打扰你。")
        fake.replies = [json.dumps({"candidates": [
            {"type": "事件", "content": "她后天搬家", "quote": "后天我要搬家", "importance": 6},
            {"type": "承诺", "content": "搬家那天不打扰她", "quote": "我答应你搬家那天不打扰你。", "importance": 7},
            {"type": "偏好", "content": "她喜欢安静", "quote": "我喜欢安静", "importance": 5}]}, ensure_ascii=False)]
        result = d.run(chat.path, force=True, now=NOW)
    assert [c["content"] for c in result.candidates] == ["她后天搬家"]  # invented and assistant quotes dropped
    assert [m.content for m in service.store.list()] == ["她后天搬家"]


@pytest.mark.parametrize("failure", ["down", "slow", "500", "malformed"])
def test_a_failing_model_lets_the_rules_answer_and_keeps_the_cursor(setup, tmp_path, failure):
    _, service, chat = setup
    with FakeOpenAI() as fake:
        fake.replies = {"500": [500, 500], "malformed": ["不是 JSON", "不是 JSON"]}.get(failure, [])
        fake.delay_s = 3.0 if failure == "slow" else 0.0
        url = "http://127.0.0.1:9/v1" if failure == "down" else fake.url
        settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"),
                                      "OMBRE_LLM": "openai", "OMBRE_LLM_MODEL": "m", "OMBRE_LLM_BASE_URL": url,
                                      "OMBRE_LLM_TIMEOUT_MS": "1000"})
        d = Distiller(settings, service, from_settings(settings))
        chat.turn("你好")
        d.run(chat.path, now=NOW)
        chat.turn("我们约好了，以后每周三晚上都视频一次。")
        failed = d.run(chat.path, force=True, now=NOW)
        again = d.run(chat.path, force=True, dry_run=True, now=NOW)
    assert failed.ran and failed.fallback.startswith("model failed, rules answered")
    assert [m.evidence.quote for m in service.store.list()] == ["以后每周三晚上都视频一次"]
    assert again.new_turns == 1  # the unread turn is still ahead of the cursor: the model reads it again
    ledger = [json.loads(x) for x in settings.llm_ledger.read_text().splitlines()]
    assert ledger[-1]["ok"] is False and ledger[-1]["purpose"] == "distill" and ledger[-1]["error"]


def test_past_the_daily_cap_no_model_is_asked_and_the_rules_answer(setup, tmp_path):
    _, service, chat = setup
    with FakeOpenAI() as fake:
        fake.replies = [json.dumps({"candidates": []})]
        settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"),
                                      "OMBRE_LLM": "openai", "OMBRE_LLM_MODEL": "m", "OMBRE_LLM_BASE_URL": fake.url,
                                      "OMBRE_LLM_DAILY_CALLS": "1"})
        d = Distiller(settings, service, from_settings(settings))
        chat.turn("你好")
        d.run(chat.path, now=NOW)
        chat.turn("今天天气不错")
        first = d.run(chat.path, force=True, now=NOW)  # the one call of the day
        chat.turn("我们约好了，以后每周三晚上都视频一次。")
        second = d.run(chat.path, force=True, now=NOW)
        assert len(fake.requests) == 1
    assert first.ran and not first.fallback and second.fallback.startswith("rules answered: today's model budget")
    assert [m.evidence.quote for m in service.store.list()] == ["以后每周三晚上都视频一次"]
    assert second.cursor is not None  # over the cap is no failure: the cursor moves on
    today = status(settings, service, None)["model"]
    assert today["calls"] == 1 and today["over_cap"] and today["daily_calls"] == 1


def test_the_keeper_asks_distillation_first_and_a_failure_never_stops_it(setup, tmp_path):
    settings, service, chat = setup
    chat.turn("你好")
    calls = []

    def broken(path: Path, force: bool) -> None:
        calls.append(force)
        raise RuntimeError("model endpoint down")

    keeper = Keeper(settings, None, None, distill=broken)
    entry = keeper.tick(chat.path, now=dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1))
    assert calls == [False] and entry["decision"] == "skip"
    lines = [json.loads(x) for x in settings.metrics_log.read_text().splitlines()]
    assert lines[0]["decision"] == "note" and "model endpoint down" in lines[0]["reason"]
    Keeper(settings, None, None, distill=keeper_distill(settings)).tick(chat.path, now=dt.datetime.now(dt.timezone.utc)
                                                                     + dt.timedelta(hours=1))
    assert jsonl_log.read(settings.ombre_home / "distill.jsonl")[-1]["session"] == chat.b.sid


def test_distill_commands(setup, tmp_path):
    import os
    import subprocess
    import sys

    settings, service, chat = setup
    chat.turn("你好")
    Distiller(settings, service).run(chat.path, now=chat.soon)
    chat.turn("提醒我周一交房租。")
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "ombre.cli", "distill", *a], env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    preview = run("--session", str(chat.path), "--dry-run", "--force", "--json")
    assert preview.returncode == 0, preview.stderr
    assert json.loads(preview.stdout)["candidates"][0]["quote"] == "提醒我周一交房租"
    status = json.loads(run("status", "--session", str(chat.path), "--json").stdout)
    assert status["enabled"] and status["new_person_turns"] == 1 and status["daily_cap"] == 8
    assert status["cursor"]["uuid"] and status["last_outcomes"][-1]["session"] == chat.b.sid
    assert status["model"]["backend"] == "rules" and status["model"]["calls"] == 0
    chat.turn("以后每周六早上我们一起跑步好不好")
    chat.turn("算了 我起不来")
    explained = run("--session", str(chat.path), "--dry-run", "--force", "--explain")
    assert explained.returncode == 0, explained.stderr
    assert "how the rules read each clause:" in explained.stdout
    assert "taken back by 「算了」" in explained.stdout and "[承诺] 「提醒我周一交房租」 — a request" in explained.stdout
    reading = json.loads(run("--session", str(chat.path), "--dry-run", "--force", "--explain", "--json").stdout)["explain"]
    assert {r["clause"]: r.get("taken_back") for r in reading}["以后每周六早上我们一起跑步"] == "「算了」"
    plain = run("status", "--session", str(chat.path))
    assert "model     rules: 0/200 calls, 0/300000 tokens today" in plain.stdout, plain.stderr
    config = subprocess.run([sys.executable, "-m", "ombre.cli", "config", "--json"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert json.loads(config.stdout)["llm_today"]["daily_tokens"] == 300_000


def test_the_examples_vote_keeps_what_the_cues_miss_and_never_a_question(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    rows = [{"text": t, "keep": True, "kind": "偏好"} for t in
            ("学的是会计", "读的是计算机", "专业是法学", "我学护理的", "念的是土木", "读的英语专业", "学的临床医学",
             "读的是化学", "学的是金融", "我读历史的")]
    rows += [{"text": t, "keep": False, "kind": ""} for t in
             ("今天好热", "困死了", "哈哈哈哈", "吃饭了没", "下雨了", "好无聊啊", "刚到家")]
    path = tmp_path / "examples.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    examples = distill_rules.Examples(USEEmbedder(), path)
    turns = [Turn("person", "读的材料", "u0"), Turn("person", "今天好闷热", "u1"), Turn("person", "你读的什么专业？", "u2")]
    assert rules_candidates(turns) == []  # the cues alone know none of them
    assert [c.quote for c in rules_candidates(turns, examples)] == ["读的材料"]
    # a second reader of the same file (another service in the process) uses the same fit; an edited file is fit anew
    again = distill_rules.Examples(USEEmbedder(), path)
    again.vote(["读的材料"])
    assert again._weights is examples._weights
    path.write_text(path.read_text(encoding="utf-8") + json.dumps({"text": "刚下班", "keep": False}) + "\n")
    edited = distill_rules.Examples(USEEmbedder(), path)
    edited.vote(["读的材料"])
    assert edited._weights is not examples._weights and len(edited._matrix) == len(rows) + 1


def test_a_home_keeps_the_examples_fit_for_the_next_process(tmp_path, monkeypatch):
    """`ombre distill` is a process of its own each time: the fit it made is kept in the home's cache folder
    and read back whole, with no example embedded again; a cache file that is not whole is fit again."""
    import numpy as np

    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    class Counted(USEEmbedder):
        embedded = 0

        def passages(self, texts):
            Counted.embedded += len(texts)
            return super().passages(texts)

    rows = [{"text": t, "keep": k} for t, k in (("我学护理的", True), ("读的是化学", True), ("今天好热", False), ("困死了", False))]
    path, cache = tmp_path / "examples.jsonl", tmp_path / "home" / "cache"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    first = distill_rules.Examples(Counted(), path, cache=cache)
    said = first.vote(["学的是会计"])
    [stored] = cache.glob("distill-examples-*.npz")
    monkeypatch.setattr(distill_rules, "_FITS", {})  # as a new process starts
    Counted.embedded = 0
    second = distill_rules.Examples(Counted(), path, cache=cache)
    assert second.vote(["学的是会计"]) == said and Counted.embedded == 2  # the clause and its turn, no example
    assert np.array_equal(second._weights, first._weights)
    stored.write_bytes(stored.read_bytes()[:100])
    monkeypatch.setattr(distill_rules, "_FITS", {})
    third = distill_rules.Examples(Counted(), path, cache=cache)
    assert third.vote(["学的是会计"]) == said and stored.stat().st_size > 100  # fit again, and kept again


def test_a_cancel_later_in_the_turn_takes_back_what_the_examples_proposed(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    rows = [{"text": t, "keep": True, "kind": "事件"} for t in ("周六那个同学聚会", "周日那个公司年会", "周五那个客户饭局")]
    rows += [{"text": t, "keep": False, "kind": ""} for t in ("今天好热", "困死了", "哈哈哈哈")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    vote = functools.partial(rules_candidates, add_from=0.7)  # six examples: what is tested is the take-back
    told = [Turn("person", "周六那个甲方饭局 好多人", "u0")]
    assert [c.quote for c in vote(told, examples)] == ["周六那个甲方饭局"]  # the vote proposes it
    called_off = [Turn("person", "周六那个甲方饭局 人家说不用我去了", "u0")]
    assert vote(called_off, examples) == []


def test_the_examples_veto_a_cue_word_in_a_joke_but_never_a_request(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    rows = [{"text": t, "keep": False, "kind": ""} for t in
            ("我对上班过敏", "我对早起过敏", "我对开会过敏", "我对周一过敏", "我对加班过敏", "我对数学过敏")]
    rows += [{"text": t, "keep": True, "kind": "偏好"} for t in ("我对芒果过敏", "我花生过敏")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    joke = [Turn("person", "我对写周报过敏", "u0")]
    assert [c.quote for c in rules_candidates(joke)] == ["我对写周报过敏"]  # the food cue alone keeps it
    assert rules_candidates(joke, examples) == []
    assert [c.quote for c in rules_candidates(joke, examples, veto_below=0.0)] == ["我对写周报过敏"]
    request = [Turn("person", "以后别跟我提写周报", "u0")]  # binding: the examples never drop it
    assert [c.quote for c in rules_candidates(request, examples)] == ["以后别跟我提写周报"]


def test_the_examples_vote_reads_the_turn_a_clause_was_said_in(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    # the same words are the person's news in their own turn and a colleague's in another's
    said = ("一到冬天就手脚冰凉", "周末都在图书馆泡着", "看到蛇腿就软", "睡眠很浅", "一喝奶就拉肚子", "半夜才有灵感")
    rows = []
    for lead, keep in (("我这个人吧", True), ("我同事说她", False)):
        rows += [{"text": t, "keep": keep, "kind": "偏好" if keep else "", "turn": f"{lead} {t}"} for t in said]
        rows += [{"text": lead, "keep": False, "kind": "", "turn": f"{lead} {t}"} for t in said[:1]]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    own, colleague = examples.vote(["口味偏甜", "口味偏甜"], ["我这个人吧 口味偏甜", "我同事说她 口味偏甜"])
    assert own[0] > 0.5 > colleague[0]
    assert rules_candidates([Turn("person", "我这个人吧 口味偏甜", "u0")]) == []  # the cues alone know neither
    vote = functools.partial(rules_candidates, add_from=0.5)  # fourteen examples: what is tested is the turn
    assert [c.quote for c in vote([Turn("person", "我这个人吧 口味偏甜", "u0")], examples)] == ["口味偏甜"]
    assert vote([Turn("person", "我同事说她 口味偏甜", "u0")], examples) == []


def test_what_the_examples_add_is_never_a_promise_and_gives_way_to_what_a_cue_named(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    rows = [{"text": t, "keep": True, "kind": "承诺"} for t in ("从今天开始控糖", "从明天开始戒奶茶", "以后不喝甜的了")]
    rows += [{"text": t, "keep": True, "kind": "偏好"} for t in ("我在减肥", "我在戒糖")]
    rows += [{"text": t, "keep": False, "kind": ""} for t in ("今天好热", "困死了", "哈哈哈哈")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    vote = functools.partial(rules_candidates, add_from=0.7)  # eight examples: what is tested is the kind
    told = vote([Turn("person", "最近在控糖", "u0")], examples)
    assert [(c.quote, c.type) for c in told] == [("最近在控糖", "偏好")]  # no promise: it would never decay

    # over the cap, what a cue named stays and what the examples added goes
    turns = [Turn("person", text, f"u{i}") for i, text in enumerate(
        ["我姐姐下个月结婚", "我家猫叫年糕", "我是做前端的", "读的材料"])]
    rows = [{"text": t, "keep": True, "kind": "偏好"} for t in ("学的是会计", "读的是计算机", "专业是法学", "念的是土木")]
    rows += [{"text": t, "keep": False, "kind": ""} for t in ("今天好热", "困死了", "哈哈哈哈")]
    kept = [c.quote for c in vote(turns, distill_rules.Examples(USEEmbedder(), rows))]
    assert sorted(kept) == sorted(["我姐姐下个月结婚", "我家猫叫年糕", "我是做前端的"])  # four turns: room for three
    assert [c.quote for c in vote(turns[3:], distill_rules.Examples(USEEmbedder(), rows))] == ["读的材料"]


def test_english_life_events_are_kept_as_events():
    told = rules_candidates([Turn("person", "My sister Carla is getting married in Bogotá next June", "u0")])
    assert [(c.type, c.quote) for c in told] == [("事件", "My sister Carla is getting married in Bogotá next June")]


def test_a_clause_that_goes_on_from_a_kept_one_is_kept_with_it_as_typed():
    """The product check: 「我老公周五出差去深圳，要去一个星期」 was kept without its second half, and
    「我老公要出差多久？」 later had nothing to answer it."""
    def quotes(said: str) -> list[str]:
        return [c.quote for c in rules_candidates([Turn("person", said, "u0")])]

    assert quotes("我老公周五出差去深圳，要去一个星期") == ["我老公周五出差去深圳，要去一个星期"]
    birthday = "我女儿小满下个月十二号过生日，她想要一只小兔子"
    assert quotes(birthday) == [birthday]
    explain: list[dict] = []
    rules_candidates([Turn("person", "我老公周五出差去深圳，要去一个星期", "u0")], explain=explain)
    assert any(e["clause"] == "要去一个星期" and "goes on from" in e["why"] for e in explain)
    # not what someone else said, not a question, not a sentence of its own, not a take-back
    assert quotes("我女儿小满下个月十二号过生日，她说想要兔子") == ["我女儿小满下个月十二号过生日"]
    assert quotes("我老公周五出差去深圳，要去多久呢？") == ["我老公周五出差去深圳"]
    assert quotes("我老公周五出差去深圳，要去多久？") == ["我老公周五出差去深圳"]
    assert quotes("我老公周五出差去深圳，要去多久 ？") == ["我老公周五出差去深圳"]
    assert quotes("我女儿小满下个月十二号过生日，她们说想要兔子") == ["我女儿小满下个月十二号过生日"]
    assert quotes("我老公周五出差去深圳，\u3000要去一个星期") == ["我老公周五出差去深圳，\u3000要去一个星期"]
    assert quotes("我老公周五出差去深圳。要去一个星期") == ["我老公周五出差去深圳"]


def test_a_fact_with_no_one_in_it_says_what_the_clause_before_it_named():
    """The product check: 「我家那只柯基叫豆包 今年三岁」 left a memory 「今年三岁」 that said nothing on its own."""
    def said(text: str) -> list[tuple[str, str]]:
        return [(c.content, c.quote) for c in rules_candidates([Turn("person", text, "u0")])]

    assert said("我家那只柯基叫豆包 今年三岁") == [("我家那只柯基叫豆包", "我家那只柯基叫豆包"),
                                                ("我家那只柯基叫豆包；今年三岁", "今年三岁")]
    assert said("我是回民 不吃猪肉的")[1] == ("我是回民；不吃猪肉的", "不吃猪肉的")
    # someone in it, or not right after: a memory of its own
    assert ("我特别怕冷", "我特别怕冷") in said("我家那只柯基叫豆包 我特别怕冷")
    assert [c for c, _ in said("我家那只柯基叫豆包 超级乖 今年三岁")] == ["我家那只柯基叫豆包", "今年三岁"]


@pytest.mark.parametrize("turns, kept", [
    # a fear told in the turn that announces it: the next turn is no longer in confidence
    ([("person", "说出来你别笑 我都三十了还怕打雷"), ("assistant", "不会笑你"), ("person", "真的吗 那我就放心了")],
     [("感受", "我都三十了还怕打雷")]),
    # "你千万别告诉别人" announces a secret; it is no request of its own
    ([("person", "跟你说个事 你千万别告诉别人啊"), ("assistant", "嗯 我听着"), ("person", "我在偷偷准备考研 家里人都不知道")],
     [("感受", "我在偷偷准备考研 家里人都不知道")]),
    # that nobody else knows, said before or after it: what the turn tells is in confidence, and who does not
    # know is part of it; "挺久了" alone tells nothing
    ([("person", "这事我没跟任何人说过 我初中留过级 家里人都不知道"), ("assistant", "谢谢你告诉我")],
     [("感受", "我初中留过级 家里人都不知道")]),
    ([("person", "我没告诉过任何人 我其实一直在吃安眠药 挺久了"), ("assistant", "嗯 我在")],
     [("感受", "我其实一直在吃安眠药")]),
    # a life event nobody else knows is a secret
    ([("person", "跟你说个事 我其实去年离过婚 家里人都不知道"), ("assistant", "谢谢你告诉我")],
     [("感受", "我其实去年离过婚 家里人都不知道")]),
    # used to it, or no plan yet, says nothing lasting
    ([("person", "又加班到十点"), ("assistant", "这么晚"), ("person", "我都习惯了")], []),
    ([("person", "下个月就放暑假了"), ("assistant", "暑假有什么计划吗"), ("person", "还没想好")], []),
])
def test_secrets_habits_and_plans_said_around_them(turns, kept):
    assert _kept(turns) == kept


@pytest.mark.parametrize("said, kept", [
    # a joke said with a fact's words is no fact; the fact beside the same words is
    ("我对加班过敏", []), ("我要嫁给我的被窝", []), ("头发已经离家出走了", []), ("我家狗是我祖宗", []),
    ("我对青霉素过敏", [("偏好", "我对青霉素过敏")]),
])
def test_a_joke_said_with_a_facts_words_is_not_kept(said, kept):
    assert _kept([("person", said), ("assistant", "哈哈")]) == kept


def test_who_else_calls_the_person_so_is_no_memory_of_its_own():
    got = _kept([("person", "以后叫我阿杰吧"), ("assistant", "好的阿杰"), ("person", "嗯 朋友都这么叫我")])
    assert got == [("规则", "以后叫我阿杰吧")], got


def test_an_adverb_that_looks_like_a_question_keeps_the_request():
    # "时不时" reads like an A-not-A question ("去不去") and is a frequency: a request from now on, not for now
    assert _kept([("person", "你就时不时提醒我一下"), ("assistant", "好")]) == [("承诺", "你就时不时提醒我一下")]


@pytest.mark.parametrize("said, kept", [
    # what a colleague or a neighbour eats is their news, not the person's
    ("我室友对花生过敏", []),
    ("楼上那个邻居最爱吃螺蛳粉", []),
    ("我同事不吃辣 每次点菜都好麻烦", []),
    ("隔壁宿舍的女生对芒果过敏", []), ("我们组长下个月退休", []),
    # a partner is no acquaintance, and the person beside a colleague is the person
    ("我男朋友不吃香菜", [("偏好", "我男朋友不吃香菜")]),
    ("我和同事都不吃辣", [("偏好", "我和同事都不吃辣")]),
])
def test_what_an_acquaintance_eats_is_not_the_persons(said, kept):
    assert _kept([("person", said), ("assistant", "嗯嗯")]) == kept


def test_what_a_doctor_finds_in_the_person_is_kept_and_what_others_say_is_not():
    """「医生说我血压有点高」 is the person's health record (the product check had it as someone else's
    words); what a doctor says about someone else, or anyone's opinion of the person, stays out."""
    def quotes(said: str) -> list[str]:
        return [c.quote for c in rules_candidates([Turn("person", said, "u0")])]

    assert quotes("医生说我血压有点高") == ["医生说我血压有点高"]
    assert quotes("大夫说我血糖偏高") == ["大夫说我血糖偏高"]
    assert quotes("我的血脂太高了") == ["我的血脂太高了"]
    assert quotes("医生说问题不大") == []
    assert quotes("同事说我血压有点高") == []
    assert quotes("我们组长说他要辞职去开奶茶店") == []  # "我们" before the one who speaks, as "我"


def test_an_english_contraction_is_not_read_as_a_question(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    rows = [{"text": t, "keep": True, "kind": "偏好"} for t in ("can't eat peanuts", "cannot eat shrimp", "can't have dairy")]
    rows += [{"text": t, "keep": False, "kind": ""} for t in ("so tired today", "lol", "just got home")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    vote = functools.partial(rules_candidates, add_from=0.7)  # six examples: what is tested is the question
    told = vote([Turn("person", "can't eat shellfish", "u0")], examples)
    assert [c.quote for c in told] == ["can't eat shellfish"]
    assert vote([Turn("person", "can you eat shellfish", "u0")], examples) == []


# -- the first session after install is read from its start -------------------------------
def test_a_session_begun_after_ombre_started_is_read_from_its_start(setup):
    settings, service, chat = setup
    mark_started(settings, now=dt.datetime(2026, 8, 3, 0, 0, tzinfo=dt.timezone.utc))  # `ombre install claude-code`
    chat.turn("我对芒果过敏，千万别给我推荐芒果。", "记住了。")
    chat.turn("我下个月十二号要考教资。", "加油！")
    d = Distiller(settings, service)
    first = d.run(chat.path, now=chat.soon + dt.timedelta(minutes=20))  # idle: due
    assert first.ran and "new session: read from its start" in first.reason
    quotes = {m.evidence.quote for m in service.store.list()}
    assert any("芒果过敏" in q for q in quotes) and any("考教资" in q for q in quotes), quotes


def test_an_older_session_is_read_from_when_ombre_started_and_warm_up_reads_its_last_turns(setup, tmp_path):
    settings, service, chat = setup
    chat.turn("以前说的：我对芒果过敏。")
    began = chat.soon
    mark_started(settings, now=began)
    chat.b.advance(1)
    chat.turn("我下个月十二号要考教资。")
    d = Distiller(settings, service)
    result = d.run(chat.path, force=True, dry_run=True, now=chat.soon)
    assert "older session: read from" in result.reason and result.new_turns == 1
    assert [c["quote"] for c in result.candidates] == ["我下个月十二号要考教资"]
    warm = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"),
                              "OMBRE_DISTILL_WARMUP": "1"})
    warmed = Distiller(warm, service).run(chat.path, force=True, dry_run=True, now=chat.soon)
    assert "warm-up" in warmed.reason and warmed.new_turns == 2
    assert "older ones only from then on" in reads_from(settings) and "warm-up on" in reads_from(warm)


def test_install_marks_when_ombre_started_and_doctor_says_where_distillation_reads(tmp_path):
    import subprocess
    import sys

    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OMBRE_", "CLAUDE"))},
           "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre")}
    exe = [sys.executable, "-m", "ombre.cli"]
    out = subprocess.run(exe + ["install", "claude-code"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "distillation:" in out.stdout and "read from their start" in out.stdout
    settings = Settings.from_env(env)
    at = started(settings)
    assert at is not None
    again = subprocess.run(exe + ["install", "claude-code"], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and started(settings) == at  # the first install's moment is kept
    doctor = subprocess.run(exe + ["doctor", "--json"], env=env, capture_output=True, text=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)}
    assert "read from their start" in checks["distillation start"]["detail"]


@pytest.mark.parametrize("turns, kept", [
    # a proposal asked as a question, accepted by the companion, confirmed: an agreement, quoted as proposed
    ([("person", "以后每周五晚上九点我们视频吧，好不好？"), ("assistant", "好呀，每周五晚上九点我等你。"),
      ("person", "嗯嗯，说定了！")], [("约定", "以后每周五晚上九点我们视频")]),
    # the companion's words need not be a yes when the person seals it next ("记住啦" → "嗯嗯，说定了！")
    ([("person", "以后每天晚上十点我们互道晚安吧，好不好？"), ("assistant", "记得哦，我会等你。"),
      ("person", "嗯嗯，说定了！")], [("约定", "以后每天晚上十点我们互道晚安")]),
    # proposed with 要不要 up front, something the person does with the companion, accepted with "要！"
    ([("person", "要不要每天中午跟你说说上午干了啥"), ("assistant", "要！我想听")], [("约定", "每天中午跟你说说上午干了啥")]),
    # no objection is enough; a proposal the companion declines is nothing
    ([("person", "咱们每天早上八点一起背单词行不行"), ("assistant", "可以呀")], [("约定", "咱们每天早上八点一起背单词")]),
    ([("person", "以后每周五晚上九点我们视频吧，好不好？"), ("assistant", "不行哦，周五我不方便")], []),
    # taken back in the next turn, or never answered yes
    ([("person", "以后每周五晚上九点我们视频吧，好不好？"), ("assistant", "好呀"), ("person", "算了，还是不了，最近太忙")], []),
    ([("person", "以后每周五晚上九点我们视频吧，好不好？"), ("assistant", "周五你不是要加班吗？")], []),
    # asked with 咋样 / 怎么样, which ask about the proposal, not for a fact
    ([("person", "以后周末我们一起做饭打卡咋样"), ("assistant", "好啊"), ("person", "那说好了哈")],
     [("约定", "以后周末我们一起做饭打卡")]),
    # put off in so many words after it was accepted
    ([("person", "下周五我们去爬山吧"), ("assistant", "好呀"), ("person", "不行 下周五我有事 以后再说吧")], []),
])
def test_an_agreement_made_across_turns_is_kept(turns, kept):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.type, c.quote) for c in got] == kept, got


@pytest.mark.parametrize("turns, kept, content", [
    # the companion offers, the person counters with their own number, the companion says yes
    ([("person", "我想每天跑步"), ("assistant", "每天跑五公里怎么样？"), ("person", "五公里太多了 三公里吧"),
      ("assistant", "好 每天三公里")], [("约定", "三公里吧")], "我提议「每天跑五公里怎么样？」，对方定的是：三公里"),
    # the person's version begins with yes; nothing after it is needed
    ([("person", "我想少喝点可乐"), ("assistant", "那一周最多两罐？"), ("person", "行 一周两罐 周末喝")],
     [("约定", "一周两罐 周末喝")], "我提议「那一周最多两罐？」，对方定的是：一周两罐 周末喝"),
    # the companion adjusts the person's own proposal: the number agreed replaces the one proposed
    ([("person", "我们来个约定 我每天读二十页书你就夸我"), ("assistant", "好呀 不过二十页有点多 先十页？"),
      ("person", "行 每天十页")], [("约定", "每天十页")], "我提议「不过二十页有点多 先十页？」，对方定的是：每天十页"),
    # restated more fully when sealed: one agreement, the request before it stays
    ([("person", "你每天给我出几道数学题吧"), ("assistant", "好 每天三道怎么样"), ("person", "三道太少 五道吧"),
      ("assistant", "好 每天五道"), ("person", "嗯 每天五道数学题 就这么定了")],
     [("约定", "每天五道数学题"), ("承诺", "你每天给我出几道数学题吧")], "说到「你每天给我出几道数学题吧」，我提议「每天三道怎么样」，对方定的是：每天五道数学题"),
    # one side of the companion's choice, picked; how to call someone holds from now on
    ([("person", "我们都这么熟了"), ("assistant", "那叫你阿月还是月月？"), ("person", "月月吧 听着亲切"),
      ("assistant", "好的月月")], [("约定", "月月吧")], "我提议「那叫你阿月还是月月？」，对方定的是：月月"),
    # the companion's time said, not asked, changed by the person and accepted; the memory says what it is for
    ([("person", "每天提醒我吃一次药"), ("assistant", "好 早上八点"), ("person", "九点吧 八点我还在地铁上"),
      ("assistant", "好 九点")], [("约定", "九点吧"), ("承诺", "每天提醒我吃一次药")], "说到「每天提醒我吃一次药」，我提议「早上八点」，对方定的是：九点"),
    # what the version asks of the companion goes with it; the person's own choice, asked, is no rule
    ([("person", "我想开始练字"), ("assistant", "那我们定个量？每天写两页怎么样？"), ("person", "两页太多了 一页吧 每晚十点你来检查"),
      ("assistant", "好 每天一页 十点我来问你")], [("约定", "一页吧 每晚十点你来检查")],
     "我提议「每天写两页怎么样？」，对方定的是：一页吧 每晚十点你来检查"),
    ([("person", "别叫宝了 叫我小满还是满满？你选"), ("assistant", "那叫你满满？"), ("person", "行 满满吧"),
      ("assistant", "好的满满")], [("约定", "满满吧"), ("规则", "别叫宝了")], "说到「别叫宝了」，我提议「那叫你满满？」，对方定的是：满满"),
    # a threat in the turn that seals it calls nothing off
    ([("person", "我想练字"), ("assistant", "那先每天写一页？"), ("person", "行吧 一页 每晚九点你来检查"),
      ("assistant", "成交"), ("person", "说好了啊 你忘了我就不写了")],
     [("约定", "一页 每晚九点你来检查")], "我提议「那先每天写一页？」，对方定的是：一页 每晚九点你来检查"),
    # a first piece that says the offer's own time is why not when a later one says another
    ([("person", "每天晚上陪我背单词吧"), ("assistant", "好呀 那每天晚上九点？"), ("person", "九点我在健身 九点半吧"),
      ("assistant", "行 九点半")], [("约定", "九点半吧"), ("约定", "每天晚上陪我背单词")],
     "说到「每天晚上陪我背单词」，我提议「那每天晚上九点？」，对方定的是：九点半"),
    # the companion taking note is no offer: a turn that asks its own proposal begins another exchange
    ([("person", "我不吃香菜"), ("assistant", "记下了，以后点菜不要香菜。"), ("person", "我想每天晚上跟你背二十个单词 好不好"),
      ("assistant", "好呀")], [("约定", "我想每天晚上跟你背二十个单词"), ("偏好", "我不吃香菜")], "我想每天晚上跟你背二十个单词"),
])
def test_the_persons_version_of_the_companions_offer_is_the_agreement(turns, kept, content):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.type, c.quote) for c in got] == kept, got
    assert got[0].content == content


@pytest.mark.parametrize("turns", [
    # for the moment, not from now on
    [("person", "好累"), ("assistant", "要不要先休息十分钟？"), ("person", "好 那我休息十分钟"), ("assistant", "去吧")],
    # the companion says no to the person's version
    [("person", "我想每天背单词"), ("assistant", "每天二十个怎么样？"), ("person", "二十个太少 一百个吧"),
     ("assistant", "一百个太多了 不行哦")],
    # a question about what happened, answered with a number
    [("person", "今天吃撑了"), ("assistant", "你晚饭吃了几碗饭？"), ("person", "两碗 撑死了"), ("assistant", "好吧")],
])
def test_an_answer_with_a_number_is_no_agreement_unless_an_offer_is_settled(turns):
    assert rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)]) == []


def test_explain_names_the_offer_a_version_settles():
    explain: list[dict] = []
    turns = [("person", "我想每天跑步"), ("assistant", "每天跑五公里怎么样？"), ("person", "五公里太多了 三公里吧"),
             ("assistant", "好 每天三公里")]
    rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)], explain=explain)
    assert {"turn": 2, "clause": "三公里吧", "act": "约定",
            "why": "the person's version of the companion's offer 「每天跑五公里怎么样？」"} in explain


def _kept(turns) -> list[tuple[str, str]]:
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    return [(c.type, c.quote) for c in got]


@pytest.mark.parametrize("turns, kept", [
    # a decision or a standing rule of the person's own is a commitment
    ([("person", "我决定了 以后每天晚上跑步二十分钟"), ("assistant", "好！")], [("承诺", "以后每天晚上跑步二十分钟")]),
    ([("person", "从下个月开始我每周只点一次外卖"), ("assistant", "支持")], [("承诺", "从下个月开始我每周只点一次外卖")]),
    ([("person", "我下定决心了 今年要减掉十斤"), ("assistant", "加油！")], [("承诺", "今年要减掉十斤")]),
    ([("person", "咱们定个规矩 吵架不过夜"), ("assistant", "好，不过夜")], [("约定", "吵架不过夜")]),
    # said as already agreed with someone: the content beside the marker is what is kept
    ([("person", "我跟我姐约好了 每年春节轮流回父母家"), ("assistant", "好办法")], [("约定", "每年春节轮流回父母家")]),
    # a rule of the person's own or of their home, announced before it
    ([("person", "我给自己定了个规矩 周末不碰工作群"), ("assistant", "好规矩")], [("承诺", "周末不碰工作群")]),
    ([("person", "我家规矩 吃饭不许看手机"), ("assistant", "好的")], [("约定", "吃饭不许看手机")]),
    # a wish, a hope or "以后再说" is no decision
    ([("person", "以后想去冰岛看极光"), ("assistant", "一定很美")], []),
    ([("person", "这事以后再说吧"), ("assistant", "好")], []),
])
def test_a_decision_or_an_agreement_stated_as_made_is_a_commitment(turns, kept):
    assert sorted(_kept(turns)) == sorted(kept)


def test_asking_to_be_held_to_a_decision_strengthens_it():
    turns = [("person", "我决定了 以后每天晚上跑步二十分钟"), ("assistant", "好！"), ("person", "你要监督我哦")]
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.type, c.quote, c.importance) for c in got] == [("承诺", "以后每天晚上跑步二十分钟", 8)]


@pytest.mark.parametrize("turns, held", [
    # a goal with no cue of its own, then a request to be held to it: in its turn, or the person's next
    ([("person", "我打算每天背五十个单词 你来监督我好不好"), ("assistant", "好呀")], "我打算每天背五十个单词"),
    ([("person", "我想瘦十斤"), ("assistant", "好主意"), ("person", "你监督我哦")], "我想瘦十斤"),
    ([("person", "从这周起每天背50个单词 你帮我盯着点")], "从这周起每天背50个单词"),
])
def test_a_goal_the_person_asks_to_be_held_to_is_a_commitment(turns, held):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.type, c.quote, c.importance) for c in got] == [("承诺", held, 8)]


@pytest.mark.parametrize("said", [
    "以后我说睡不着的时候 你别劝我数羊 陪我聊会儿就行", "以后都别发表情包了 纯文字就好",
    "以后别叫我宝宝 叫我名字就行",  # a request of its own too: one card, not two
])
def test_what_to_do_instead_is_kept_with_its_rule(said):
    assert _kept([("person", said), ("assistant", "好")]) == [("规则", said)]


@pytest.mark.parametrize("turns, kept", [
    # a reminder asked for a fact just told: the request says what it is for
    ([("person", "我和老婆结婚纪念日是5月20号 你到时候提醒我")],
     {("事件", "我和老婆结婚纪念日是5月20号"), ("承诺", "我和老婆结婚纪念日是5月20号；你到时候提醒我")}),
    # for something later today, or for nothing said: no card that says only "remind me"
    ([("person", "晚上要去拿快递 到时候提醒我一下"), ("assistant", "好的 晚上提醒你")], set()),
    ([("person", "你监督我哦"), ("assistant", "监督什么呀")], set()),
    # asked not to be kept: taken back
    ([("person", "我要把我前任微信删了 你监督我"), ("assistant", "好"), ("person", "还是先留着吧 这个别记了")], set()),
])
def test_a_request_to_be_held_to_something_never_stands_alone(turns, kept):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert {(c.type, c.content) for c in got} == kept


@pytest.mark.parametrize("turns", [
    # taken back in the next turn, in so many words or by a bare "算了", wherever it stands in the turn
    [("person", "以后每周给你画一幅画"), ("assistant", "好期待"), ("person", "当我没说 我画得太丑了")],
    [("person", "我以后每天六点起床背单词"), ("assistant", "好厉害"), ("person", "算了 起不来的")],
    [("person", "我以后每天六点起床背单词"), ("assistant", "好厉害"), ("person", "起不来的 算了")],
    [("person", "以后你叫我公主殿下吧 哈哈 开玩笑的 别真叫")],
    # a joke said as a dream or a passing thought, and a take-back in English
    [("person", "我男朋友叫周杰伦 哈哈哈做梦呢")],
    [("person", "老板就是我最怕的生物 比蛇还可怕 开玩笑哈哈")],
    [("person", "我决定辞职去大理开民宿"), ("assistant", "哇 很勇敢"), ("person", "想想而已啦 房贷还没还完呢")],
    [("person", "remind me 明天call我妈"), ("assistant", "ok 明天提醒你"), ("person", "nvm 刚打过了")],
    [("person", "以后叫我哥 哈哈哈哈 不用当真"), ("assistant", "哈哈好")],
    # a joke said straight, a bond with a thing or a name given to one, and what plays on it after
    [("person", "我跟我的沙发已经结婚了 周末都不出门"), ("assistant", "哈哈")],
    [("person", "我跟我的被窝谈恋爱五年了 每天早上都要分手一次"), ("assistant", "哈哈")],
    [("person", "我给我的车贷起了个名字 叫大爷 每个月准时孝敬"), ("assistant", "哈哈")],
    [("person", "以后你每天早上叫我起床"), ("assistant", "好"), ("person", "还是别了 我有闹钟")],
    # the reason given for a take-back is no request of its own
    [("person", "以后每天提醒我背单词"), ("assistant", "好的"), ("person", "还是不要了 你催我我更不想背")],
    # a rule against a verb, undone by doing it after all
    [("person", "以后别给我发语音了"), ("assistant", "好 不发了"), ("person", "哎呀 还是发吧 打字太慢")],
    # a complaint about today or tomorrow is not a plan, nor is something the person cannot do this week
    [("person", "明天还得七点到公司 烦死"), ("assistant", "早点睡吧")],
    [("person", "明天要交报告了 好慌"), ("assistant", "你可以的")],
    [("person", "这周要值班 周日也回不了家"), ("assistant", "辛苦了")],
    # asking whether the companion remembers is a question, whatever it names
    [("person", "你还记得我们约好每周几打电话吗"), ("assistant", "周三？")],
    [("person", "我之前说要提醒我交水费 是几号来着"), ("assistant", "每月十号")],
    # a request for now is answered by the chat itself
    [("person", "好无聊 陪我聊会儿天"), ("assistant", "好呀")],
    # what the companion thinks, asked: no request, whatever it says of the person
    [("person", "你会不会觉得我很烦"), ("assistant", "不会呀")],
    [("person", "你是不是嫌我话多"), ("assistant", "才没有")],
    # a prohibition with nothing it names is a reaction to the moment
    [("person", "今天加班到十点"), ("assistant", "明天早点起来跑步？"), ("person", "别提醒我")],
    [("person", "好困 我先睡了"), ("assistant", "晚安"), ("person", "明早别叫我")],
    # how something goes, described, asks nothing of the companion
    [("person", "他回我消息越来越慢了"), ("assistant", "会不会是忙")],
    [("person", "我们每周一起开会好麻烦"), ("assistant", "辛苦")],
])
def test_take_backs_passing_states_and_questions_are_never_kept(turns):
    assert _kept(turns) == []


def test_a_plan_at_an_hour_stays_a_plan_however_nervous_and_a_take_back_keeps_its_replacement():
    assert _kept([("person", "明天上午十点面试 好紧张"), ("assistant", "加油")]) == [("事件", "明天上午十点面试")]
    assert _kept([("person", "以后每天都喝全糖奶茶"), ("assistant", "糖太多啦"),
                  ("person", "算了 以后还是都喝无糖的吧")]) == [("承诺", "以后还是都喝无糖的吧")]


def test_a_change_said_by_itself_is_a_new_version_of_what_it_changes():
    # the new time alone reads as a plan: it is the request's new version, and the old one goes
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(
        [("person", "每天早上提醒我喝水"), ("assistant", "好"), ("person", "嗯 改成每天早上八点吧")])])
    assert [(c.type, c.content, c.quote, c.importance) for c in got] == [
        ("承诺", "每天早上提醒我喝水；改成每天早上八点", "改成每天早上八点吧", 7)]
    # an agreement moved to another day
    assert _kept([("person", "以后每周五晚上九点我们视频 说定了"), ("assistant", "好"),
                  ("person", "换到周六吧")]) == [("承诺", "换到周六吧")]
    # never what was not a request, an agreement or a plan
    assert _kept([("person", "我对芒果过敏"), ("assistant", "记住了"), ("person", "改到明天吧")]) == [
        ("偏好", "我对芒果过敏")]


def test_a_correction_that_gives_only_the_new_time_is_the_corrected_one():
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(
        [("person", "我明天要去面试"), ("assistant", "加油"), ("person", "不对不对 是后天下午")])])
    assert [(c.type, c.content, c.quote) for c in got] == [("事件", "我明天要去面试；更正：是后天下午", "是后天下午")]
    # the new time corrects what named a time; the rest of that turn stays (the product check lost the wedding)
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(
        [("person", "我妹妹下周四结婚，我要当伴娘"), ("assistant", "恭喜"), ("person", "不对 是下周五")])])
    assert sorted(c.content for c in got) == ["我妹妹下周四结婚；更正：是下周五", "我要当伴娘"]
    # a correction with a whole new version of its own keeps just that, and the reason after it is no memory
    assert _kept([("person", "你答应我每天早上七点叫我起床哈"), ("assistant", "好"),
                  ("person", "不对不对，每天早上七点半叫我，七点太早了")]) == [("规则", "每天早上七点半叫我")]


def test_a_change_said_thing_first_is_a_commitment_and_a_change_moves_the_agreement_not_the_reason():
    assert _kept([("person", "喝水的提醒改成每两小时一次"), ("assistant", "好的")]) == [
        ("承诺", "喝水的提醒改成每两小时一次")]
    assert _kept([("person", "早饭提醒往后推半小时"), ("assistant", "好")]) == [("承诺", "早饭提醒往后推半小时")]
    # in the same run, the reminder it changes goes
    assert _kept([("person", "每天晚上九点提醒我吃药"), ("assistant", "好的"), ("person", "吃药的提醒改成十点吧")]) == [
        ("承诺", "吃药的提醒改成十点吧")]
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(
        [("person", "我们周五视频吧 好不好"), ("assistant", "好呀"), ("person", "等等 周五我要加班 改成周六吧")])])
    assert ("约定", "我们周五视频；改成周六") in [(c.type, c.content) for c in got]


def test_something_for_later_today_with_no_hour_is_no_plan(tmp_path):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    assert _kept([("person", "今晚要早点睡"), ("assistant", "好")]) == []
    assert _kept([("person", "下午两点字节二面"), ("assistant", "加油")]) == [("事件", "下午两点字节二面")]
    # nor do the examples add it, however like an errand worth keeping it reads
    rows = [{"text": t, "keep": True, "kind": "事件"} for t in ("下周要去拿护照", "周六要去拿体检报告", "月底要去拿证")]
    rows += [{"text": t, "keep": False, "kind": ""} for t in ("今天好热", "困死了", "哈哈哈哈")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    turns = [Turn("person", "下午要去拿快递", "u0"), Turn("assistant", "好", "u1")]
    assert rules_candidates(turns, examples) == []
    # nor what happened just now (the demo's chat: 「刚才同事还塞给我一盒芒果班戟」)
    assert rules_candidates([Turn("person", "刚才要去拿快递", "u0")], examples) == []
    assert [c.quote for c in rules_candidates([Turn("person", "月底要去拿快递", "u0")], examples)] == ["月底要去拿快递"]


def test_my_mothers_company_is_no_request_to_the_companion():
    # "陪我妈" is the person's plan with their mother, not "陪我" asked of the companion
    assert _kept([("person", "周日我要陪我妈"), ("assistant", "好")]) == [("事件", "周日我要陪我妈")]
    assert _kept([("person", "以后周末你陪我聊聊天"), ("assistant", "好")])[0][0] in ("承诺", "约定")


@pytest.mark.parametrize("said", ["我潮汕人", "我开大货的", "我是夜猫子", "最近迷上了陶艺", "我老花眼", "我不爱热闹"])
def test_who_the_person_is_said_short_is_kept(said):
    assert _kept([("person", said), ("assistant", "嗯嗯")]) == [("偏好", said)]


@pytest.mark.parametrize("said, kind", [
    ("大名林子墨", "关系"), ("小名小宝", "关系"), ("我儿子今年上四年级了", "关系"),  # a child's names and school year
    ("辣椒我真的吃不来", "偏好"), ("韭菜我是一口都不能碰", "偏好"), ("吃虾浑身起疹子", "偏好"),
    ("腰椎间盘突出", "感受"), ("是降压药 得一直吃", "感受"),  # health history, said without 我
])
def test_names_school_years_food_and_health_said_without_a_subject_are_kept(said, kind):
    got = _kept([("person", said), ("assistant", "嗯嗯")])
    assert got and got[0][0] == kind and got[0][1] in said, got


def test_what_an_allergy_does_is_no_memory_beside_it():
    # 「吃了会起疹子」 after the allergy took a place of the run's cap and a plan was left out (the e2e day)
    assert _kept([("person", "我跟你说，我对芒果过敏，吃了会起疹子。"), ("assistant", "记住了")]) == [("偏好", "我对芒果过敏")]


@pytest.mark.parametrize("said", ["回我别太长", "讲话直接一点", "跟我说话用英文吧", "以后开会前十分钟ping我一下"])
def test_how_the_companion_should_talk_or_nudge_is_a_request(said):
    got = _kept([("person", said), ("assistant", "好")])
    assert got and got[0][0] in ("规则", "承诺") and got[0][1] == said, got


def test_a_wish_is_not_a_plan_unless_it_is_settled():
    assert _kept([("person", "周末想去看电影"), ("assistant", "看什么呀")]) == []
    assert _kept([("person", "下周想去趟北京"), ("assistant", "去干嘛")]) == []
    assert _kept([("person", "我打算下周去趟北京"), ("assistant", "去干嘛")]) == [("事件", "我打算下周去趟北京")]
    # "已经约好了" says the thing beside it is settled; it is no memory of its own
    assert [q for _, q in _kept([("person", "我想下周去复查 已经约好了"), ("assistant", "好")])] == ["我想下周去复查"]


def test_the_memory_text_drops_filler_and_the_quote_stays_verbatim():
    got = rules_candidates([Turn("person", "再说一次哦：我对芒果过敏", "u0")])
    assert [(c.content, c.quote) for c in got] == [("我对芒果过敏", "再说一次哦：我对芒果过敏")]
    # a lead-in that announces the matter is talk around it too
    from ombre.write.distill_rules import memory_text

    assert memory_text("睡前想让你帮我参谋个事：我妈妈下周六生日") == "我妈妈下周六生日"
    assert memory_text("跟你说件事儿：我下个月搬家") == "我下个月搬家"
    assert memory_text("这件事：我不想再提") == "这件事：我不想再提"  # names the matter: part of what is said
    assert memory_text("我的过敏：芒果") == "我的过敏：芒果"  # no lead-in: the colon is part of what is said
    assert memory_text("要不以后每天睡前你给我讲个笑话") == "以后每天睡前你给我讲个笑话"  # what is proposed
    assert memory_text("那就改成下周六去看外婆") == "改成下周六去看外婆"  # 那就 answers the turn before
    assert memory_text("那就这样") == "那就这样"  # nothing stands alone without it


def test_the_per_run_cap_never_drops_an_agreement():
    turns = [("person", "我对花生过敏"), ("assistant", "记住了"), ("person", "我妹妹叫小雨"), ("assistant", "好听"),
             ("person", "我下个月五号去体检"), ("assistant", "好"),
             ("person", "以后每天晚上十点提醒我吃药"), ("assistant", "好的"),
             ("person", "以后每周六早上我们一起背单词吧，好不好"), ("assistant", "好呀"),
             ("person", "以后别叫我全名")]
    kept = dict((quote, kind) for kind, quote in _kept(turns))
    # three binding ones and the allergy (what must never be got wrong) whatever the cap; the plan is left out
    assert [kept[q] for q in ("以后每天晚上十点提醒我吃药", "以后别叫我全名")] == ["承诺", "规则"]
    assert "我对花生过敏" in kept and "我下个月五号去体检" not in kept and len(kept) == 4


def test_a_run_over_two_segments_has_room_for_both():
    """A run is due every five of the person's turns and keeps up to three of them; a run forced (or idle-
    started) over ten reads two segments' worth, and its ordinary news is not left out for good behind
    three promises (the product check lost a wedding this way)."""
    from ombre.write.distill_rules import room

    promises = [("person", "以后每天晚上十点提醒我吃药"), ("assistant", "好的"),
                ("person", "我决定了，从今天开始每天跑步，你要监督我"), ("assistant", "好"),
                ("person", "以后别叫我全名"), ("assistant", "好的")]
    news = [("person", "我妹妹下个月十八号结婚"), ("assistant", "恭喜"),
            ("person", "我下个月五号去体检"), ("assistant", "好")]
    chat = [("person", "今天好冷啊"), ("assistant", "多穿点"), ("person", "嗯嗯"), ("assistant", "嗯"),
            ("person", "你在干嘛"), ("assistant", "陪你呀"), ("person", "哈哈好的"), ("assistant", "嘿嘿"),
            ("person", "晚安啦")]
    kept = [quote for _, quote in _kept(promises + news + chat)]
    assert room(10) == 6 and len(kept) == 5
    assert {"我妹妹下个月十八号结婚", "我下个月五号去体检"} <= set(kept)
    # one segment's worth: the promises take it, as before; nearly two (eight or nine turns) has room for two
    assert room(1) == room(5) == room(7) == 3 and room(8) == room(9) == room(12) == 6 and room(13) == 9
    assert not {"我妹妹下个月十八号结婚", "我下个月五号去体检"} & {q for _, q in _kept(promises + news)}


@pytest.mark.parametrize("said", [
    "阿拉苏州人", "我是搞装修的", "在菜市场卖菜卖了十几年", "教了二十年书", "考研狗一枚", "我属于慢热的", "对足球无感",
    "我睡眠一直很浅", "我胃一直不好",
])
def test_who_the_person_is_said_in_other_ways_is_kept(said):
    got = _kept([("person", said), ("assistant", "嗯嗯")])
    assert got == [("偏好", said)], got


@pytest.mark.parametrize("said", ["我今天一直很累", "我一直很想你", "我一直在等你"])
def test_what_goes_on_today_or_is_said_to_the_companion_is_no_fact_of_the_person(said):
    assert _kept([("person", said), ("assistant", "嗯嗯")]) == []


@pytest.mark.parametrize("said, kept", [
    ("我们车间主任老刘", True), ("我最好的朋友是小雨", False), ("我发小是阿强", True), ("我的同桌李想", True),
    ("他们班主任赵老师", True), ("我外甥女在武汉上大学", True), ("我爸是开出租的", True),
    ("我妈高兴坏了", False), ("我老公马上到", False),  # a family word before a word that starts like a surname
    ("我同事王姐人特别好", True), ("我朋友老是迟到", False),  # a name before what is said of them; 老是 is "always"
])
def test_someone_of_the_persons_own_named_after_a_role_is_kept(said, kept):
    got = _kept([("person", said), ("assistant", "嗯嗯")])
    assert (got == [("关系", said)]) is kept, got


@pytest.mark.parametrize("said, kept", [
    # a like with a word or two before it, a habit said as one, and not the moment's 受不了了
    ("我真的受不了香菜", True), ("我还挺喜欢做设计的", True), ("我一向只看悬疑剧", True), ("我离不开米饭", True),
    ("我无肉不欢", True), ("失眠好多年了", True), ("我真的受不了了", False), ("我今天只吃了一顿", False),
    ("从小就这样", False), ("我爸念叨好几年了", False),
    ("每周至少跑三次", True), ("周末基本宅家", True), ("我是猫派", True), ("今天至少跑了三次厕所", False),
    ("maybe 我是猫派", False),
    # a routine at a time of day or week, always so; not once
    ("睡前必须泡个脚", True), ("每天下班都要去遛狗", True), ("一个星期练两次瑜伽", True), ("我喝咖啡只喝美式", True),
    ("咖啡我永远加奶", True), ("每天下班都要累死了", False), ("我今天只喝了一杯", False),
])
def test_likes_and_habits_said_in_other_ways(said, kept):
    got = _kept([("person", said), ("assistant", "嗯嗯")])
    assert bool(got) is kept and (not got or got[0][1] == said), got


@pytest.mark.parametrize("said, kind", [("我好惊蛇", "感受"), ("我阿爷上个月走咗", "事件"), ("我妈有白内障", "感受")])
def test_cantonese_fears_and_a_relatives_health_are_kept(said, kind):
    assert _kept([("person", said), ("assistant", "嗯嗯")]) == [(kind, said)]


def test_a_request_keeps_the_occasion_said_before_it_and_drops_its_asking():
    turns = [("person", "以后我值夜班的时候 你每天早上八点提醒我吃早饭好不好"), ("assistant", "好呀"), ("person", "嗯嗯 说定了")]
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.quote, c.content) for c in got] == [
        ("以后我值夜班的时候 你每天早上八点提醒我吃早饭好不好", "以后我值夜班的时候 你每天早上八点提醒我吃早饭")]


def test_denying_what_was_not_kept_corrects_nothing():
    turns = [("person", "我老板叫王建国"), ("assistant", "好"), ("person", "不是我不想去 是没时间")]
    assert _kept(turns) == [("关系", "我老板叫王建国")]


def test_a_correction_after_words_of_its_own_turn_corrects_those():
    turns = [("person", "其实失眠好多年了"), ("assistant", "辛苦"), ("person", "反正白天靠咖啡续命 哦我说错了 靠茶")]
    assert _kept(turns) == [("偏好", "其实失眠好多年了")]


def test_a_correction_that_names_what_it_corrects_gives_its_new_time():
    turns = [("person", "我每周三晚上有游泳课"), ("assistant", "好的"), ("person", "打错了 游泳是周五")]
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.quote, c.content) for c in got] == [("游泳是周五", "我每周三晚上有游泳课；更正：游泳是周五")]


def test_a_cancel_that_names_what_it_calls_off_leaves_the_rest():
    # the party goes, the birthday stays; unnamed, the plan before it goes
    turns = [("person", "我爸生日是8月3号 我想给他办个寿宴"), ("assistant", "好呀"), ("person", "寿宴算了 他不爱热闹")]
    assert _kept(turns) == [("事件", "我爸生日是8月3号")]
    turns = [("person", "周日约了朋友去爬山 周六去看我奶奶"), ("assistant", "好充实"), ("person", "爬山先不去了 下雨")]
    assert [quote for _, quote in _kept(turns)] == ["周六去看我奶奶"]
    assert _kept([("person", "周六约了闺蜜去逛街"), ("assistant", "好呀"), ("person", "算了不去了 她要加班")]) == []


def test_what_a_doctor_forbids_is_kept():
    assert _kept([("person", "医生不让吃辣的"), ("assistant", "那要注意")]) == [("感受", "医生不让吃辣的")]


@pytest.mark.parametrize("turns", [
    # a plan called off by negating its own verb, and a decision taken back as said in jest
    [("person", "我要去学吉他"), ("assistant", "好呀"), ("person", "想了想 不学了 没时间")],
    [("person", "我决定了 下个月去西藏"), ("assistant", "真的吗"), ("person", "假的啦 随便说说")],
    # a secret asked for in other words is a marker, not a request
    [("person", "你帮我保密哈"), ("assistant", "好")],
])
def test_called_off_joked_or_marked_is_not_kept(turns):
    assert _kept(turns) == []


def test_negating_another_verb_calls_nothing_off():
    turns = [("person", "下周一我要去拔牙"), ("assistant", "加油"), ("person", "不疼了 已经好了")]
    assert _kept(turns) == [("事件", "下周一我要去拔牙")]


@pytest.mark.parametrize("said", ["我是开网约车的嘛", "我们温州人嘛", "说真的我对爬山无感"])
def test_a_declarative_particle_or_a_lead_in_does_not_hide_a_fact(said):
    # 嘛 after 的 or 人 says rather than asks; 说真的 is a lead-in, not someone else's words
    got = _kept([("person", said), ("assistant", "嗯嗯")])
    assert got == [("偏好", said)], got


@pytest.mark.parametrize("turns, kept", [
    # a tone asked for as a question that is none is a request
    ([("person", "你回消息能不能快点啊"), ("assistant", "好")], [("规则", "你回消息能不能快点啊")]),
    # the person's own rule, announced beside it, is a commitment; an agreement recalled is an agreement
    ([("person", "我立了个规矩 每晚十一点前放下手机"), ("assistant", "支持")], [("承诺", "每晚十一点前放下手机")]),
    ([("person", "上次约好的 吃饭的时候不聊工作"), ("assistant", "记得")], [("约定", "吃饭的时候不聊工作")]),
    # a take-back after a particle
    ([("person", "周六上午叫我去拿快递吧 哦不用了 我老公去")], []),
])
def test_tones_rules_recalled_agreements_and_particled_take_backs(turns, kept):
    assert _kept(turns) == kept


@pytest.mark.parametrize("said, kind", [
    ("我食唔到虾", "偏好"), ("糖尿病十几年了", "感受"), ("一直在吃二甲双胍", "感受"), ("去年做过阑尾手术", "感受"),
])
def test_cantonese_food_and_health_said_without_a_subject_are_kept(said, kind):
    assert _kept([("person", said), ("assistant", "嗯嗯")]) == [(kind, said)]


@pytest.mark.parametrize("said, kind", [("我在吃素", "偏好"), ("每天早上吃一片优甲乐", "感受")])
def test_a_diet_is_food_and_a_pill_a_day_is_health(said, kind):
    assert _kept([("person", said), ("assistant", "嗯嗯")]) == [(kind, said)]


def test_a_snack_being_eaten_is_no_medicine():
    assert _kept([("person", "我在吃薯片"), ("assistant", "好吃吗")]) == []


def test_a_secret_nobody_close_knows_is_kept_with_what_it_keeps():
    # 连X都不知道 marks a secret as 家里人都不知道 does, whoever X is
    assert _kept([("person", "跟你说个秘密 我其实在考公 连我妈都不知道"), ("assistant", "我会保密的")]) == [
        ("感受", "我其实在考公 连我妈都不知道")]
    assert _kept([("person", "我在偷偷学画画 连我闺蜜都不知道"), ("assistant", "好")]) == [
        ("感受", "我在偷偷学画画 连我闺蜜都不知道")]


def test_what_the_person_will_no_longer_need_is_no_decision():
    assert _kept([("person", "公司附近 走路十分钟 以后不用挤地铁了"), ("assistant", "太好了！")]) == []
    assert "承诺" not in {kind for kind, _ in _kept([("person", "从下个月开始我不需要每天通勤了"), ("assistant", "真好")])}
    assert _kept([("person", "以后我每天走路上班"), ("assistant", "好")]) == [("承诺", "以后我每天走路上班")]


def test_everyone_is_no_frequency_the_companion_offers():
    turns = [("person", "她说她每天学八个小时 我做不到"), ("assistant", "每个人节奏不一样。"),
             ("person", "想周末去爬山放松一下"), ("assistant", "好呀 去哪座山？")]
    assert _kept(turns) == []


def test_two_clauses_kept_where_the_turn_says_them_once_are_read_in_turn():
    # a span kept twice (by a cue and by the clause that goes on from it) sits at one place in the turn
    from ombre.write import distill_rules

    name, age = distill_rules.Kept("关系", 6, 3, "a name"), distill_rules.Kept("关系", 6, 3, "a name")
    text = "我家猫叫年糕 今年五岁"
    found = [(name, "我家猫叫年糕", 0), (dataclasses.replace(name, cue="again"), "我家猫叫年糕", 0), (age, "今年五岁", 0)]
    assert [f[1] for f in distill_rules._named_before(found, 0, text)] == ["我家猫叫年糕", "我家猫叫年糕", "今年五岁"]


def test_saying_it_is_no_joke_takes_nothing_back():
    turns = [("person", "我跟你吐槽她的时候 不许帮她说话"), ("assistant", "哈哈好。"),
             ("person", "不是开玩笑的 上回你帮她分析 我更气了")]
    assert _kept(turns) == [("规则", "我跟你吐槽她的时候 不许帮她说话")]


@pytest.mark.parametrize("said", [
    "我同事小李怀孕了 才结婚两个月", "我们组长说他要辞职去开奶茶店 笑死 他连奶茶都不喝", "我师傅下个月退休 干了三十八年",
    "我发小生了个女儿 她老公乐坏了", "我同事养了只布偶叫年糕",  # a friend's news; an acquaintance's pet
    "刚刷到 那个歌手说他对芒果过敏 好多水果都不能吃",  # someone the person watches, not knows
])
def test_what_follows_someone_elses_news_with_no_i_in_it_is_theirs(said):
    assert _kept([("person", said), ("assistant", "哇")]) == []


def test_the_person_speaking_of_themself_again_after_someone_elses_news_is_kept():
    assert _kept([("person", "我同事下个月结婚 我要当伴娘"), ("assistant", "哇")]) == [("事件", "我要当伴娘")]
    # a bond with a person of the person's own is no joke, whatever the word for them
    assert _kept([("person", "我跟我的初恋结婚了"), ("assistant", "哇")]) == [("事件", "我跟我的初恋结婚了")]


def test_an_event_on_a_day_moved_later_is_that_event_moved():
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in
                            enumerate([("person", "我下周五体检"), ("assistant", "好"), ("person", "提前到周三了")])])
    assert [(c.type, c.content, c.quote) for c in got] == [("事件", "我下周五体检；提前到周三了", "提前到周三了")]


def test_a_memory_another_says_whole_takes_no_room_of_the_cap():
    """「我要当伴娘」 is said whole by 「我要当伴娘；你到时候提醒我」: the store keeps one of the two, so the run's cap
    (three for two turns) still has room for the fact of the second turn."""
    turns = [("person", "我表妹下个月二十号结婚 我要当伴娘 你到时候提醒我"), ("assistant", "好，我记着。"),
             ("person", "我胃一直不好"), ("assistant", "要按时吃饭呀。")]
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert {c.content for c in got} == {"我表妹下个月二十号结婚", "我要当伴娘", "我要当伴娘；你到时候提醒我", "我胃一直不好"}


@pytest.mark.parametrize("said, kept", [
    # any at all, said: no question ("什么…都", "谁都", "啥都")
    ("我什么辣的都不吃", [("偏好", "我什么辣的都不吃")]),
    ("以后谁都不许在我面前提他", [("承诺", "以后谁都不许在我面前提他")]),
    # a real question with the same words stays one
    ("为什么都不理我", []),
])
def test_any_at_all_is_said_not_asked(said, kept):
    assert _kept([("person", said), ("assistant", "嗯")]) == kept


def test_a_prohibition_with_what_to_do_instead_is_still_a_rule():
    assert _kept([("person", "你别再叫了 叫我小名就行"), ("assistant", "好")]) == [("规则", "你别再叫了 叫我小名就行")]


def test_an_alternative_said_next_makes_it_a_guess():
    assert _kept([("person", "我姐好像下个月生 也可能是月底"), ("assistant", "期待")]) == []
    assert _kept([("person", "我哥应该是下周结婚 或者下下周"), ("assistant", "恭喜")]) == []
    explain: list[dict] = []
    rules_candidates([Turn("person", "我哥下周结婚 或者下下周", "u0")], explain=explain)
    assert explain[0]["why"] == "a guess: an alternative follows (「或者下下周」)"


@pytest.mark.parametrize("turns", [
    [("person", "下个月去云南的计划 黄了 公司不批假"), ("assistant", "可惜")],
    [("person", "五一去成都的票我退了"), ("assistant", "怎么了")],
    [("person", "下周三要去复查"), ("assistant", "好"), ("person", "医院说要延后 还没定哪天")],
])
def test_a_plan_called_off_short_returned_or_put_off_with_no_day_is_not_kept(turns):
    assert _kept(turns) == []


def test_an_acquaintance_named_in_english_is_someone_else():
    assert _kept([("person", "我 colleague 他不吃辣"), ("assistant", "哦")]) == []


def test_what_nobody_was_told_of_a_thing_is_a_secret_told_now():
    got = _kept([("person", "退学的真正原因我谁都没讲过 是我挂科太多被劝退的"), ("assistant", "谢谢你告诉我")])
    assert got == [("感受", "是我挂科太多被劝退的")]


@pytest.mark.parametrize("turns, kept", [
    # what the person can have after all corrects the food fact that names it, wherever the new value stands
    ([("person", "我对芒果过敏 你记着"), ("assistant", "记住了"), ("person", "其实是菠萝 芒果没事 我搞混了")],
     [("偏好", "我对芒果过敏；更正：是菠萝", "其实是菠萝")]),
    ([("person", "我不吃葱"), ("assistant", "好"), ("person", "其实葱还好 是韭菜 韭菜我一口都不碰")],
     [("偏好", "我不吃葱；更正：是韭菜", "是韭菜"), ("偏好", "韭菜我一口都不碰", "韭菜我一口都不碰")]),
])
def test_what_the_person_can_have_after_all_corrects_the_food_fact_naming_it(turns, kept):
    got = rules_candidates([Turn(who, text, f"u{n}") for n, (who, text) in enumerate(turns)])
    assert [(c.type, c.content, c.quote) for c in got] == kept


def test_something_else_being_fine_corrects_nothing():
    turns = [("person", "我对芒果过敏"), ("assistant", "记住了"), ("person", "我妈还好 就是有点累")]
    assert [c.quote for c in rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(turns)])] == ["我对芒果过敏"]


@pytest.mark.parametrize("said", [
    "我特别想找人说话",  # 特别 holds no 别 (don't)
    "一提我就想哭",  # 一提…就 says when, asks nothing
])
def test_words_that_only_look_like_a_request_are_none(said):
    assert _kept([("person", said), ("assistant", "抱抱")]) == []


def test_an_agreement_said_by_the_two_of_us_is_a_marker_not_a_memory():
    assert _kept([("person", "咱俩约好 以后每周日晚上一起复盘"), ("assistant", "成交")]) == [
        ("约定", "以后每周日晚上一起复盘")]


def test_a_goal_two_clauses_before_the_request_to_be_held_to_it_is_the_commitment():
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in
                            enumerate([("person", "我开始戒奶茶了 这次是真的 你看着我点"), ("assistant", "好")])])
    assert [(c.type, c.quote, c.importance) for c in got] == [("承诺", "我开始戒奶茶了", 8)]


@pytest.mark.parametrize("marker", ["咱俩不是说好了嘛", "那就这样约定喔"])
def test_an_agreement_marker_with_its_particles_is_never_the_memory(marker):
    got = _kept([("person", f"{marker} 每周六晚上我们一起看电影"), ("assistant", "好呀")])
    assert got == [("约定", "每周六晚上我们一起看电影")]


def test_a_bare_dont_forget_after_an_agreement_strengthens_it():
    turns = [("person", "每天晚上十点提醒我吃药"), ("assistant", "好的，每晚十点提醒你"), ("person", "嗯嗯 别忘了啊")]
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(turns)])
    assert [(c.type, c.quote, c.importance) for c in got] == [("承诺", "每天晚上十点提醒我吃药", 8)]


def test_dont_forget_after_a_fact_asks_to_be_reminded_of_it():
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in
                            enumerate([("person", "3月8号是我们结婚纪念日 别忘了"), ("assistant", "记住了")])])
    assert ("承诺", "3月8号是我们结婚纪念日；别忘了") in [(c.type, c.content) for c in got]


@pytest.mark.parametrize("said", ["你也别提", "你千万别...", "你别夸"])
def test_a_prohibition_naming_nothing_after_a_secret_or_a_plan_is_no_rule(said):
    got = _kept([("person", f"我其实在偷偷存钱买房 {said}"), ("assistant", "嗯")])
    assert [kind for kind, _ in got] != ["规则"] and all(quote != said for _, quote in got)


@pytest.mark.parametrize("said", ["我奶奶每次都问我吃了没", "还有我妈喊我全名"])
def test_someone_else_calling_or_asking_the_person_is_no_request(said):
    assert _kept([("person", said), ("assistant", "哈哈")]) == []


def test_a_request_keeps_the_condition_said_before_it():
    """Without its condition a request is a different one: "你就骂我" is not "以后我要是熬夜 你就骂我"."""
    assert _kept([("person", "以后我要是又熬夜 你就骂我"), ("assistant", "好")]) == [
        ("承诺", "以后我要是又熬夜 你就骂我")]
    assert _kept([("person", "如果我说想喝酒 你一定要拦着我"), ("assistant", "好")]) == [
        ("承诺", "如果我说想喝酒 你一定要拦着我")]


def test_the_examples_never_veto_a_fear_of_a_thing_an_illness_a_family_milestone_or_a_diet():
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    # examples that say no to everything near these: the vote alone would drop each
    rows = [{"text": t, "keep": False, "kind": ""} for t in
            ("我怕忙忘了", "我才不怕", "我怕的东西只有一个", "我怕他生气", "我妹要过来玩", "我姥姥今天做了饺子",
             "我有点困", "我有个问题", "跟男朋友吃饭了", "我妈今天又唠叨了", "我对上班过敏", "我麻了")]
    rows += [{"text": t, "keep": True, "kind": "偏好"} for t in ("我对芒果过敏", "我不吃香菜")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    for said in ("我超级怕打雷", "最怕打雷", "我有哮喘", "我姥姥上周走了", "跟男朋友分手了", "我麸质不耐受",
                 # a habit said with what makes it lasting, the kind of person, a name of their own, coming out
                 "我一向只看悬疑剧", "最近迷上了陶艺", "我是猫派", "我们组长老周人挺好的", "其实我是同志"):
        turns = [Turn("person", said, "u0"), Turn("assistant", "嗯", "u1")]
        assert [c.quote for c in rules_candidates(turns, examples)] == [said], said
    worry = [Turn("person", "我怕他生气", "u0"), Turn("assistant", "嗯", "u1")]
    assert rules_candidates(worry, examples) == []  # a worry, not a fear of a thing: the vote still has its say


def test_what_the_person_keeps_doing_as_they_take_a_plan_back_is_kept():
    turns = [("person", "我打算明年考研"), ("assistant", "好呀"), ("person", "算了 不考了 还是老老实实当我的会计吧")]
    assert _kept(turns) == [("偏好", "还是老老实实当我的会计吧")]


def test_a_reminder_no_longer_wanted_said_bare_takes_it_back_but_a_rule_against_one_is_kept():
    turns = [("person", "每周五提醒我交周报"), ("assistant", "好"), ("person", "想了想 不用提醒了 我自己记得")]
    assert _kept(turns) == []
    assert _kept([("person", "过年那些不用提醒我"), ("assistant", "好")]) != []


def test_a_second_thing_said_with_also_is_a_memory_of_its_own():
    """「咖啡也已经戒了」 names its own thing: prefixed with the fact before it, the store took it for that fact again."""
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in
                            enumerate([("person", "我什么辣的都不吃 咖啡也已经戒了"), ("assistant", "记住了")])])
    assert [c.content for c in got] == ["我什么辣的都不吃", "咖啡也已经戒了"]


def test_a_fact_asked_to_be_remembered_stays_a_fact():
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in
                            enumerate([("person", "我不吃香菜 你记一下"), ("assistant", "记住了")])])
    assert [(c.type, c.quote, c.importance) for c in got] == [("偏好", "我不吃香菜", 7)]
    agreed = _kept([("person", "我们约好了 每年春节轮流回父母家"), ("assistant", "好")])
    assert agreed == [("约定", "每年春节轮流回父母家")]


@pytest.mark.parametrize("said, kind", [
    ("我其实很 introvert 的 party 什么的能不去就不去", "偏好"),  # 什么的: and so on, not a question
    ("每个周末我都去打羽毛球", "偏好"),
    ("以前上学的时候被霸凌过", "感受"),  # what was done to the person, said without 我
    ("我一看到针头就晕", "感受"),
    ("我上夜班的", "偏好"),  # the hours the person works
    ("我戒烟第三天了", "偏好"),  # a habit given up, counted
    ("我是95年的", "偏好"),  # the year the person was born
    ("我鞋码40", "偏好"),
    ("我做运营", "偏好"),  # a trade, said short
    ("学土木的", "偏好"),  # a field of study
    ("曼联死忠", "偏好"),
])
def test_a_temper_a_routine_and_a_hurt_said_without_the_usual_words_are_kept(said, kind):
    assert _kept([("person", said), ("assistant", "嗯")]) == [(kind, said)]
    assert _kept([("person", "你是干什么的"), ("assistant", "陪你聊天的")]) == []
    assert _kept([("person", "22年的时候 挺难的"), ("assistant", "嗯")]) == []  # a year as a time, not a birth year


def test_a_reason_given_for_a_request_that_says_who_the_person_is_is_kept_with_it():
    """老 in 老花眼 is eyesight, not 老 (always), which makes a clause the reason for what was asked."""
    assert _kept([("person", "回我别太长 我老花眼"), ("assistant", "好")]) == [("规则", "回我别太长"), ("偏好", "我老花眼")]
    assert _kept([("person", "以后早上提醒我吃药 我老忘"), ("assistant", "好")]) == [("承诺", "以后早上提醒我吃药")]


@pytest.mark.parametrize("said, kind", [
    ("回答我的时候简短点", "规则"),  # how to answer is how to talk
    ("以后九点半以后再找我聊啊", "承诺"),  # when to come to the person
])
def test_how_and_when_to_talk_to_the_person_is_a_request(said, kind):
    assert _kept([("person", said), ("assistant", "好")]) == [(kind, said)]
    assert _kept([("person", "以后他再找我 我就不理了"), ("assistant", "好")]) == []


def test_a_change_said_as_改_and_the_new_value_is_a_new_version_of_what_it_changes():
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(
        [("person", "我每天早上七点出门上班"), ("assistant", "好早啊"), ("person", "哦现在改八点了")])])
    assert [(c.quote, c.content) for c in got] == [("哦现在改八点了", "我每天早上七点出门上班；现在改八点了")]


def test_a_fact_led_by_a_pronoun_says_whom_it_is_about():
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(
        [("person", "我家那只柯基叫豆包 它今年三岁"), ("assistant", "好可爱")])])
    assert [c.content for c in got] == ["我家那只柯基叫豆包", "我家那只柯基叫豆包；它今年三岁"]


def test_written_cantonese_is_read_as_mandarin():
    assert _kept([("person", "我个仔读小三"), ("assistant", "好")]) == [("关系", "我个仔读小三")]
    assert _kept([("person", "佢冇话过想去"), ("assistant", "哦")]) == []


def test_an_answer_keeps_the_list_it_goes_on_with_and_a_question_about_work_is_about_the_person():
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(
        [("person", "耳机坏了"), ("assistant", "你平时喜欢听什么歌"), ("person", "摇滚 五月天 还有草东")])])
    assert [c.quote for c in got] == ["摇滚 五月天 还有草东"]
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(
        [("person", "又加班"), ("assistant", "你在什么公司呀"), ("person", "一家做外贸的小公司")])])
    assert [c.content for c in got] == ["你在什么公司呀？——一家做外贸的小公司"]


@pytest.mark.parametrize("turns, kept", [
    ([("person", "周日本来要去看外婆"), ("assistant", "嗯"), ("person", "外婆去小姨家了 那就改成下周六去看外婆")],
     [("事件", "那就改成下周六去看外婆")]),
    ([("person", "本来十号回国的"), ("assistant", "快了呀"), ("person", "导师让把实验做完 机票改签到二十号了")],
     [("事件", "机票改签到二十号了")]),
])
def test_what_replaces_a_plan_called_off_is_kept_whatever_the_vote(turns, kept):
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    # examples that say no to everything near these: the vote alone would drop each
    rows = [{"text": t, "keep": False, "kind": ""} for t in ("改天吧", "改成明天吃火锅", "下周去看电影", "机票好贵")]
    rows += [{"text": t, "keep": True, "kind": "偏好"} for t in ("我对芒果过敏", "我不吃香菜")]
    examples = distill_rules.Examples(USEEmbedder(), rows)
    got = rules_candidates([Turn(w, t, f"u{n}") for n, (w, t) in enumerate(turns)], examples)
    assert [(c.type, c.quote) for c in got] == kept


def test_an_agreement_marker_beside_a_resolve_and_a_decision_with_its_start_are_kept():
    assert _kept([("person", "说定了啊 今年双十一我一分钱都不花 你见证"), ("assistant", "哈哈 我见证")]) == [
        ("约定", "今年双十一我一分钱都不花")]
    assert _kept([("person", "我决定这个月开始学钢琴了"), ("assistant", "好棒")]) == [("承诺", "我决定这个月开始学钢琴了")]
    # a start said beside the marker is when, not what: the agreement is the proposal before it
    turns = [("person", "以后我每天背完单词来跟你打卡好不好"), ("assistant", "好呀"), ("person", "行 那说定了 从明天开始")]
    assert [q for _, q in _kept(turns)] == ["以后我每天背完单词来跟你打卡"]


def test_not_being_allergic_is_no_allergy():
    from ombre.write import distill_rules

    assert distill_rules.judge("我不过敏") is None
    assert distill_rules.judge("我对猫毛过敏") is not None


@pytest.mark.parametrize("said, kept", [
    ("小胖是我表弟", [("关系", "小胖是我表弟")]),  # who someone named is to the person
    ("my boss Kevin 又在群里 @ 我", [("关系", "my boss Kevin 又在群里 @ 我")]),
    ("我表哥下周来我家住几天", []),  # a visit to the person's home, no fact of where the person lives
])
def test_who_someone_named_is_to_the_person(said, kept):
    assert _kept([("person", said), ("assistant", "哦")]) == kept


def test_a_milestone_on_its_day_and_a_race_or_an_interview_on_a_date_are_kept():
    from ombre.memory.embed import USEEmbedder
    from ombre.write import distill_rules

    # the vote never vetoes a family milestone, said with its day
    rows = [{"text": t, "keep": False, "kind": ""} for t in ("今天好热", "明天要上班", "下周去吃火锅", "我妈今天做了饭")]
    rows += [{"text": t, "keep": True, "kind": "偏好"} for t in ("我对芒果过敏", "我不吃香菜")]
    got = rules_candidates([Turn("person", "今天我妈八十大寿", "u0"), Turn("assistant", "哇", "u1")],
                           distill_rules.Examples(USEEmbedder(), rows))
    assert [(c.type, c.quote) for c in got] == [("事件", "今天我妈八十大寿")]
    for said in ("11月3号马拉松", "下个月10号 job interview"):
        assert _kept([("person", said), ("assistant", "加油")]) == [("事件", said)]
