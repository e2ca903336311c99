"""The memory service on a real SQLite file with the real bundled embedding model: hold, breath,
write_gate, scarcity, red lines, commitments, anniversaries, evidence."""
from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter

import pytest

from ombre.app import open_service
from ombre.clock import SHANGHAI, iso
from ombre.errors import MemoryInputError
from ombre.memory import migrations
from ombre.memory.anniversary import is_anniversary
from ombre.memory.breath import BreathRequest, rank_factor
from ombre.memory.embed import E5Embedder
from ombre.memory.hold import HoldRequest, enrich_pending
from ombre.memory.model import Memory
from ombre.memory.segment import document
from ombre.memory.service import MemoryService
from ombre.memory.sqlite_store import SQLiteStore
from ombre.settings import Settings

NOW = dt.datetime(2026, 12, 3, 4, 0, tzinfo=dt.timezone.utc)  # 12:00 in Shanghai


def held(svc: MemoryService, content: str, now: dt.datetime = NOW, **kw):
    result = svc.hold(HoldRequest(content=content, **kw), now=now)
    assert result.stored, result
    return result


# -- evidence and red lines ---------------------------------------------------------------------------
def test_without_a_quote_a_memory_is_unconfirmed(svc):
    r = held(svc, "喜欢番茄炒蛋", type="偏好")
    assert r.status == "未确认"
    assert svc.get(r.id).evidence.mark == "未确认"


def test_with_the_persons_words_it_is_confirmed_and_dated_in_shanghai(svc):
    r = held(svc, "喜欢番茄炒蛋", type="偏好", quote="我最爱吃番茄炒蛋了", from_session="abc")
    m = svc.get(r.id)
    assert m.status == "confirmed" and m.evidence.quote == "我最爱吃番茄炒蛋了"
    assert m.evidence.from_session == "abc" and m.evidence.date == "2026-12-03"


@pytest.mark.parametrize("content", ["她妈妈下个月要做手术", "她最近胃疼去了医院", "她下周一要去新公司上班",
                                     "她的生日是3月14日"])
@pytest.mark.parametrize("source", ["manual", "auto"])
def test_red_line_facts_are_never_confirmed_without_the_persons_words(svc, content, source):
    r = svc.hold(HoldRequest(content=content, importance=8, source=source), now=NOW)
    assert r.stored and r.status == "未确认"
    if source == "auto":
        assert r.importance <= 4 and any("没有原话" in x for x in r.reasons)
    else:
        assert any("没有原话" in x for x in r.warnings)


def test_a_quote_is_at_most_two_sentences(svc):
    with pytest.raises(MemoryInputError, match="two sentences"):
        svc.hold(HoldRequest(content="x", quote="第一句。第二句。第三句。"))


# -- write_gate -----------------------------------------------------------------------------------------
def test_auto_one_off_mood_as_a_permanent_trait_is_log_only_manual_warns(svc):
    auto = svc.hold(HoldRequest(content="她今天很难过，她就是这种人，总是这样", source="auto"), now=NOW)
    assert not auto.stored and auto.decision == "log_only"
    manual = svc.hold(HoldRequest(content="她今天很难过，她就是这种人，总是这样"), now=NOW)
    assert manual.stored and any("永久性格" in w for w in manual.warnings)


def test_auto_silent_overwrite_of_a_pinned_red_line_is_refused(svc):
    held(svc, "不要在她面前提前任", type="规则", pinned=True, importance=9, quote="别再提我前任了")
    r = svc.hold(HoldRequest(content="以后可以在她面前提前任了，不再避开", type="规则", source="auto"), now=NOW)
    assert r.decision == "refuse" and any("置顶红线" in x for x in r.reasons)


def test_auto_daily_quota(svc, tmp_path):
    svc.settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_AUTO_HOLD_DAILY": "2"})
    for text in ("她在学吉他", "她养了一只猫叫年糕"):
        assert svc.hold(HoldRequest(content=text, source="auto"), now=NOW).stored
    third = svc.hold(HoldRequest(content="她周末喜欢去爬山", source="auto"), now=NOW)
    assert third.decision == "refuse" and "上限" in third.reasons[0]
    assert svc.hold(HoldRequest(content="她周末喜欢去爬山", source="auto"), now=NOW + dt.timedelta(days=1)).stored


def test_low_surprise_duplicate_is_logged_not_stored(svc):
    held(svc, "她养了一只橘猫叫年糕", quote="我家年糕是只橘猫")
    again = svc.hold(HoldRequest(content="她养了一只橘猫叫年糕", source="auto"), now=NOW)
    assert again.decision == "log_only"


def test_the_persons_own_words_duplicate_what_the_companion_held_about_her(svc):
    # the companion holds 她… through MCP; distillation then keeps the person's own 我… of the same fact
    held(svc, "她对芒果过敏", quote="对了我对芒果过敏，吃一口嘴就肿")
    again = svc.hold(HoldRequest(content="我对芒果过敏", quote="对了我对芒果过敏", source="auto"), now=NOW)
    assert again.decision == "log_only", again.reasons
    # someone else's allergy is another memory
    mum = svc.hold(HoldRequest(content="我妈对芒果过敏", quote="我妈对芒果过敏", source="auto"), now=NOW)
    assert mum.stored, mum.reasons


@pytest.mark.parametrize("first,second", [
    ("她的生日是12月4日", "她妹妹的生日是12月6日"),
    ("她的生日是12月4日", "她的生日是12月6日"),
    ("她家的猫叫年糕", "她家的猫叫豆豆"),
    ("她每天晚上十点睡觉", "她每天晚上十二点睡觉"),
])
def test_the_automatic_path_keeps_distinct_facts_that_read_alike(svc, first, second):
    held(svc, first, quote=first)
    other = svc.hold(HoldRequest(content=second, quote=second, source="auto"), now=NOW)
    assert other.stored, other.reasons


def test_two_birthdays_of_different_people_are_both_kept_by_the_automatic_path(svc):
    mine = svc.hold(HoldRequest(content="她的生日是12月4日", quote="我的生日是12月4日", source="auto"), now=NOW)
    sister = svc.hold(HoldRequest(content="她妹妹的生日是12月6日", quote="我妹妹的生日是12月6日", source="auto"), now=NOW)
    assert mine.stored and sister.stored
    again = svc.hold(HoldRequest(content="她妹妹的生日是12月6日。", quote="我妹妹生日12月6日", source="auto"), now=NOW)
    assert again.decision == "log_only"  # the same facts again are a duplicate


def test_every_gate_decision_is_logged(svc):
    held(svc, "她在学吉他")
    svc.hold(HoldRequest(content="她今天很烦，她永远都是这种性格", source="auto"), now=NOW)
    log = svc.store.gate_log(10)
    assert [e.decision for e in log] == ["log_only", "store_unconfirmed"]
    assert log[1].memory_id and log[0].memory_id is None


# -- scarcity -------------------------------------------------------------------------------------------
def test_pinned_cap_manual_demotes_the_longest_inactive(svc, tmp_path):
    svc.settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_MAX_PINNED": "2"})
    first = held(svc, "红线一：不提前任", pinned=True, now=NOW - dt.timedelta(days=30))
    held(svc, "红线二：不催她睡觉", pinned=True, now=NOW - dt.timedelta(days=1))
    third = held(svc, "红线三：不评价她的身材", pinned=True)
    assert third.pinned and any(first.id in n for n in third.scarcity)
    assert not svc.get(first.id).pinned and svc.store.count(pinned=True) == 2


def test_pinned_cap_auto_downgrades_the_new_write(svc, tmp_path):
    svc.settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_MAX_PINNED": "1"})
    held(svc, "红线一：不提前任", pinned=True)
    r = held(svc, "她的猫叫年糕", pinned=True, quote="我的猫叫年糕", source="auto")
    assert not r.pinned and "这条不置顶" in r.scarcity[0]


def test_importance_caps(svc, tmp_path):
    svc.settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_MAX_IMPORTANCE_10": "1",
                                      "OMBRE_MAX_IMPORTANCE_9": "2"})
    held(svc, "最重要的约定：每年一起看海", importance=10, quote="每年都要一起看海")
    r = held(svc, "第二重要：她怕黑", importance=10, quote="我怕黑", source="auto")
    assert r.importance == 9
    r = held(svc, "第三：她怕打雷", importance=9, quote="我怕打雷", source="auto")
    assert r.importance == 8


# -- commitments ----------------------------------------------------------------------------------------
def test_commitments_never_decay_and_are_not_archived(svc):
    r = held(svc, "每周三晚上语音", type="承诺", quote="以后每周三晚上都语音吧", importance=8,
             now=NOW - dt.timedelta(days=400))
    m = svc.get(r.id)
    factor, parts = rank_factor(m, NOW)
    assert parts["decay"] == 1.0
    ordinary = Memory(content="x", last_active=iso(NOW - dt.timedelta(days=400)), importance=8)
    assert rank_factor(ordinary, NOW)[1]["decay"] < 1.0
    with pytest.raises(MemoryInputError, match="commitment"):
        svc.set_flag(r.id, archived=True)
    assert svc.set_flag(r.id, archived=True, force=True).archived


def test_restore_refreshes_last_active(svc):
    r = held(svc, "她喜欢下雨天", now=NOW - dt.timedelta(days=100))
    svc.set_flag(r.id, archived=True)
    restored = svc.set_flag(r.id, archived=False)
    assert dt.datetime.fromisoformat(restored.last_active) > NOW - dt.timedelta(days=1)


# -- breath ---------------------------------------------------------------------------------------------
def test_breath_finds_by_meaning_and_says_why(svc):
    target = held(svc, "每周三晚上我们语音通话", type="承诺", quote="以后每周三晚上都语音吧", importance=8)
    held(svc, "她喜欢吃番茄炒蛋", type="偏好")
    held(svc, "她在学吉他，想弹晴天")
    r = svc.breath(BreathRequest("我们什么时候打电话来着"), now=NOW)
    assert r.cards[0].id == target.id
    assert {"keyword", "sim", "ranks", "importance", "decay", "relevance"} <= set(r.cards[0].why)
    assert set(r.cards[0].why["sim"]) == {"e5", "use"}  # both encoders read it
    assert r.cards[0].score > 0


def test_keywords_still_work_when_the_embedder_fails(tmp_path, embedder):
    class Broken(E5Embedder):
        def passages(self, texts):
            raise RuntimeError("model crashed")

        def query(self, text):
            raise RuntimeError("model crashed")

    broken = open_service(Settings.from_env({"HOME": str(tmp_path)}), arbitrate=False, encoders={"e5": Broken()})
    r = broken.hold(HoldRequest(content="她养了一只猫叫年糕"), now=NOW)
    assert r.stored and not r.embedded and any("向量化失败" in w for w in r.warnings)
    found = broken.breath(BreathRequest("年糕"), now=NOW)
    assert [c.id for c in found.cards] == [r.id] and found.degraded
    broken.close()
    fixed = open_service(Settings.from_env({"HOME": str(tmp_path)}), arbitrate=False, encoders={"e5": embedder})
    assert enrich_pending(fixed.store, {"e5": embedder}) == 1 and fixed.get(r.id).vectors == ["e5"]
    fixed.close()


def test_one_encoder_failing_leaves_the_other_and_keywords(tmp_path, embedder):
    class Broken(E5Embedder):
        def queries(self, texts):
            raise RuntimeError("model crashed")

    from ombre.memory.embed import USEEmbedder

    s = open_service(Settings.from_env({"HOME": str(tmp_path)}), arbitrate=False, encoders={"e5": Broken(), "use": USEEmbedder()})
    a = s.hold(HoldRequest(content="她养了一只猫叫年糕"), now=NOW)
    s.hold(HoldRequest(content="她周末喜欢去爬山"), now=NOW)
    found = s.breath(BreathRequest("家里那只小动物叫什么"), now=NOW)
    assert found.cards[0].id == a.id and found.encoders == ["use"]
    assert any("e5 vectors unavailable" in d for d in found.degraded)
    s.close()


def test_pinned_core_is_surfaced_outside_the_card_budget(svc):
    pin = held(svc, "不要在她面前提前任", type="规则", pinned=True, quote="别再提我前任了")
    for text in ("她前任以前送过她一条围巾", "她和前任分手是在冬天", "前任的话题会让她难过"):
        held(svc, text)
    r = svc.breath(BreathRequest("前任", max_results=3), now=NOW)
    assert [c.id for c in r.pinned] == [pin.id]
    assert len(r.cards) == 3 and pin.id not in [c.id for c in r.cards]


def test_card_budget_in_tokens(svc):
    for n in range(6):
        held(svc, f"关于猫的第{n}件事：" + "年糕今天又把杯子推下桌子了，" * 10)
    r = svc.breath(BreathRequest("年糕 猫", max_results=5, max_tokens=500), now=NOW)
    assert 1 <= len(r.cards) < 5 and sum(c.tokens for c in r.cards) <= 500


def test_sad_query_leans_to_comfort(svc):
    comfort = held(svc, "她难过的时候喜欢有人陪着安静地待一会儿", valence=0.3, quote="难过的时候陪着我就好")
    held(svc, "她喜欢吃火锅", valence=0.8)
    r = svc.breath(BreathRequest("今天好难过"), now=NOW)
    assert r.emotion == "难过" and r.cards[0].id == comfort.id


def test_session_start_gives_the_latest_handoff_and_the_pinned_core(svc):
    held(svc, "正在谈：周末去哪玩", type="会话交接", tags=["会话交接", "forge"], now=NOW - dt.timedelta(days=2))
    latest = held(svc, "正在谈：她周四复诊", type="会话交接", tags=["会话交接", "forge"])
    pin = held(svc, "不要在她面前提前任", type="规则", pinned=True, quote="别再提我前任了")
    r = svc.breath(BreathRequest(is_session_start=True), now=NOW)
    assert "她周四复诊" in r.handoff and "周末去哪玩" not in r.handoff
    assert [c.id for c in r.pinned] == [pin.id] and latest.id
    text = r.render()
    assert "她周四复诊" in text and "【置顶核心】" in text and "不要在她面前提前任" in text


# -- anniversaries --------------------------------------------------------------------------------------
def test_created_today_is_not_a_one_year_anniversary(svc):
    r = held(svc, "今天我们第一次一起看海", event_date="2026-12-03", tags=["纪念日"])
    assert not is_anniversary(svc.get(r.id), dt.date(2026, 12, 3))
    assert svc.breath(BreathRequest("看海"), now=NOW).anniversary is None


def test_a_memory_one_year_old_comes_back_on_its_day(svc):
    old = held(svc, "一年前的今天我们第一次一起看海", now=NOW - dt.timedelta(days=365))
    first = svc.breath(BreathRequest("随便聊聊"), now=NOW)
    assert first.anniversary is not None and first.anniversary.id == old.id
    assert svc.breath(BreathRequest("随便聊聊"), now=NOW + dt.timedelta(days=1)).anniversary is None


def test_two_breaths_on_an_anniversary_day_both_show_it(svc):
    old = held(svc, "一年前的今天我们第一次一起看海", importance=6, now=NOW - dt.timedelta(days=365))
    assert svc.breath(BreathRequest("随便聊聊"), now=NOW).anniversary.id == old.id
    again = svc.breath(BreathRequest("再聊聊"), now=NOW + dt.timedelta(hours=3))
    assert again.anniversary is not None and again.anniversary.id == old.id  # not used up by the first
    assert "【今日纪念】" in again.render()


def test_a_memory_imported_after_the_days_first_breath_still_shows(svc, tmp_path):
    assert svc.breath(BreathRequest("随便聊聊"), now=NOW).anniversary is None
    m = Memory(content="两年前的今天我们搬进了新家", id="moved", created="2024-12-03T02:00:00+00:00",
               last_active="2024-12-03T02:00:00+00:00", event_date="2024-12-03", tags=["纪念日"])
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(m.to_dict(), ensure_ascii=False) + "\n", encoding="utf-8")
    assert svc.import_(path).added == 1
    assert svc.breath(BreathRequest("随便聊聊"), now=NOW + dt.timedelta(hours=1)).anniversary.id == "moved"


def test_a_yearly_birthday_is_in_tomorrows_reminders(svc):
    from ombre.memory.anniversary import due

    mum = held(svc, "她妈妈的生日", tags=["生日"], event_date="1968-12-04", quote="我妈生日是12月4号",
               now=NOW - dt.timedelta(days=100))
    held(svc, "她第一次去看海", event_date="2019-12-04", now=NOW - dt.timedelta(days=100))  # not a yearly date
    today = NOW.astimezone(SHANGHAI).date()
    found = due(svc.store, [today, today + dt.timedelta(days=1)])
    assert [(m.id, day) for m, day in found] == [(mum.id, today + dt.timedelta(days=1))]
    next_year = due(svc.store, [dt.date(2027, 12, 3), dt.date(2027, 12, 4)])
    assert [m.id for m, _ in next_year] == [mum.id]  # every year


def test_a_birthday_told_recently_with_an_older_date_counts(svc):
    r = held(svc, "她的生日", tags=["生日"], event_date="1998-12-03", quote="我生日是12月3号",
             now=NOW - dt.timedelta(days=20))
    assert is_anniversary(svc.get(r.id), dt.date(2026, 12, 3))
    young = held(svc, "上个月今天她换了新工作", event_date="2026-11-03", now=NOW - dt.timedelta(days=30))
    assert not is_anniversary(svc.get(young.id), dt.date(2026, 12, 3))


# -- bad input and storage ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,match", [
    ({"content": "  "}, "empty"),
    ({"content": "长" * 5000}, "over the limit"),
    ({"content": "x", "importance": 11}, "importance"),
    ({"content": "x", "importance": 0}, "importance"),
    ({"content": "x", "type": "八卦"}, "unknown type"),
    ({"content": "x", "valence": 1.5}, "valence"),
    ({"content": "x", "event_date": "明天"}, "not a date"),
])
def test_bad_hold_input_is_refused_and_nothing_is_written(svc, kw, match):
    with pytest.raises(MemoryInputError, match=match):
        svc.hold(HoldRequest(**kw))
    assert svc.store.count() == 0 and svc.store.gate_log(5) == []


def test_extra_types_come_from_the_environment(tmp_path, embedder):
    s = open_service(Settings.from_env({"HOME": str(tmp_path), "OMBRE_EXTRA_TYPES": "梦境,八卦"}), arbitrate=False, embedder=embedder)
    assert s.hold(HoldRequest(content="她梦见了鲸鱼", type="梦境"), now=NOW).stored
    s.close()


def test_the_database_is_one_wal_sqlite_file_with_recorded_migrations(svc):
    held(svc, "她在学吉他")
    path = svc.settings.memory_db
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY name")] == [
        "m001_memories", "m002_gate_log", "m003_meta", "m004_unembedded_index", "m005_fts_rank_and_vocab",
        "m006_event_date_index", "m007_arbitration",
        "m008_type_and_date_indexes", "m009_term_docs", "m010_second_encoder_and_month_days",
        "m011_earlier_quotes", "m012_namespaces", "m013_english_keys",
        "m014_english_word_parts", "m015_latent_terms", "m016_archived_ids"]
    db.close()


def test_export_import_round_trip(svc, tmp_path, embedder):
    a = held(svc, "她在学吉他", quote="我最近在学吉他")
    held(svc, "每周三语音", type="承诺", quote="每周三语音吧")
    out = tmp_path / "export.jsonl"
    assert svc.export(out) == 2
    other = open_service(Settings.from_env({"HOME": str(tmp_path / "other")}), arbitrate=False, embedder=embedder)
    first, again = other.import_(out), other.import_(out)
    assert (first.added, first.skipped, first.refused) == (2, 0, [])
    assert (again.added, again.skipped, again.refused) == (0, 2, [])
    assert other.get(a.id).evidence.quote == "我最近在学吉他" and other.get(a.id).has_vector
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[0])["content"] == "她在学吉他"
    other.close()


def _recount(db: sqlite3.Connection) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for words, grams in db.execute("SELECT words, grams FROM memories_fts"):
        counts.update(set(f"{words} {grams}".split()))
    return dict(counts)


def _term_docs(db: sqlite3.Connection) -> dict[str, int]:
    return {t: n for t, n in db.execute("SELECT term, docs FROM term_docs") if n}


def test_term_counts_follow_every_write_and_are_rebuilt_by_the_migration(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    texts = ["她今天在学吉他", "今天下雨了，她没去上班", "她的猫叫年糕", "周末一起去海边"]
    for i, text in enumerate(texts[:2]):
        store.add(Memory(content=text, id=f"a{i}", created="2026-01-01T00:00:00+00:00"), document(text))
    store.add_many([(Memory(content=t, id=f"b{i}", created="2026-01-01T00:00:00+00:00"), document(t), None)
                    for i, t in enumerate(texts[2:])])
    edited = store.get("a0")
    edited.content = "她今天不学吉他了，改学钢琴"
    store.update(edited, document(edited.content))
    store.update(store.get("b0"))  # no new terms: counts untouched
    store.close()
    db = sqlite3.connect(tmp_path / "m.db")
    assert _term_docs(db) == _recount(db) and _term_docs(db)["今天"] == 2 and "钢琴" in _term_docs(db)
    assert "在学" not in _term_docs(db)  # a term only the edited memory's old words held is no longer counted
    # a database from before the table existed gets it filled from the index when it is opened
    expected = _recount(db)
    with db:
        db.execute("DROP TABLE term_docs")
        db.execute("DELETE FROM _migrations WHERE name='m009_term_docs'")
    db.close()
    SQLiteStore(tmp_path / "m.db").close()
    db = sqlite3.connect(tmp_path / "m.db")
    assert _term_docs(db) == expected
    db.close()


def test_a_large_store_searches_by_its_rare_terms(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    store.LARGE_STORE = 10  # the rule, at a size a test can hold
    rows = [(Memory(content=f"今天第{i}天", id=f"d{i}"), document(f"今天第{i}天"), None) for i in range(30)]
    rows.append((Memory(content="今天她在学吉他", id="guitar"), document("今天她在学吉他"), None))
    store.add_many(rows)
    assert [mid for mid, _ in store.keyword_search(["今天", "吉他"], 10)] == ["guitar"]  # 今天 is in every memory
    assert len(store.keyword_search(["今天"], 50)) == 31  # nothing rare: the commonest terms still search
    store.close()


def test_processes_opening_a_new_store_at_once_each_migrate_it_once(tmp_path):
    """Issue #16: `ombre serve` and `ombre hold` opening a brand-new store together failed with "duplicate
    column name"; migrations now run one transaction each under the write lock."""
    import subprocess
    import sys
    import time

    # each process imports first, then waits for the same moment to open: the imports would stagger them
    script = ("import sys, time; from pathlib import Path; from ombre.memory.sqlite_store import SQLiteStore; "
              "time.sleep(max(0.0, float(sys.argv[2]) - time.time())); SQLiteStore(Path(sys.argv[1])).close()")
    for round_ in range(3):
        path = tmp_path / f"new-{round_}.db"
        start = str(time.time() + 3.0)
        procs = [subprocess.Popen([sys.executable, "-c", script, str(path), start], stderr=subprocess.PIPE,
                                  text=True) for _ in range(6)]
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, errors
        names = [r[0] for r in sqlite3.connect(path).execute("SELECT name FROM _migrations")]
        assert len(names) == len(set(names)) and names[-1] == migrations.MIGRATIONS[-1].__name__
