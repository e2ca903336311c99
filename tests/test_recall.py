"""Recall that finds the right memory: the person's recent turns as query context (from the transcript's
tail, or given over HTTP/MCP/CLI), two encoders, the gate for cards shown unasked, one renderer for every
adapter, and the background embedding of an older store."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ombre.app import open_service
from ombre.inject.gateway import conversation_key, earlier_turns
from ombre.memory.breath import NOTHING, BreathRequest
from ombre.memory.embed import USEEmbedder
from ombre.memory.fusion import (
    E5_USE,
    FUSION,
    GATES,
    USE_ONLY,
    Gate,
    form_factor,
    fuse,
    gate_features,
    is_relevant,
    retrieve,
    settle,
)
from ombre.memory.hold import HoldRequest
from ombre.memory.query import Query, person_turns
from ombre.memory.service import MemoryService
from ombre.memory.signals import Signals
from ombre.serve.mcp import build_mcp
from ombre.settings import Settings
from ombre.transcript import tail
from ombre.transcript.lines import is_real_user
from tests.conftest import FIXTURES, fixture_transcripts
from tests.support.servers import OMBRE, Server, ombre_env
from tests.support.transcript_gen import SessionBuilder, companion_session

NOW = dt.datetime(2026, 12, 3, 4, 0, tzinfo=dt.timezone.utc)


def hold(svc: MemoryService, content: str, **kw) -> str:
    r = svc.hold(HoldRequest(content=content, **kw), now=NOW)
    assert r.stored, r
    return r.id


# -- the person's recent turns ------------------------------------------------------------------------
def _person_lines_by_full_parse(path: Path) -> list[str]:
    from ombre.transcript.lines import is_command_echo, message_text

    out = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and not obj.get("isSidechain") and is_real_user(obj):
            text = message_text(obj).strip()
            if text and not is_command_echo(text):
                out.append(text)
    return out


@pytest.mark.parametrize("path", fixture_transcripts(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_tail_reader_finds_the_persons_last_words_in_real_transcripts(path):
    expected = [t[-200:] for t in _person_lines_by_full_parse(path)][-3:]
    found = tail.person_turns(path, limit=3, max_chars=200, max_bytes=1 << 30)
    assert found == expected


def test_the_tail_reader_reads_only_the_end_of_a_big_file(tmp_path):
    b = companion_session(random.Random(3), turns=400, payload_chars=20_000)
    path = tmp_path / "big.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    assert path.stat().st_size > 4 * tail.MAX_TAIL_BYTES
    reads: list[int] = []
    real_open = open

    class Counting:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def seek(self, *a):
            return self.f.seek(*a)

        def read(self, n):
            reads.append(n)
            return self.f.read(n)

    import builtins

    builtins.open = lambda *a, **k: Counting(real_open(*a, **k))  # type: ignore[assignment]
    try:
        found = tail.person_turns(path, limit=3)
    finally:
        builtins.open = real_open
    assert sum(reads) <= tail.MAX_TAIL_BYTES + tail.TAIL_BYTES * 5 and found
    assert found == [t[-200:] for t in _person_lines_by_full_parse(path)][-3:]


def chat(*turns: str) -> str:
    """A transcript of alternating person and assistant turns (generated, in Claude Code's line shapes)."""
    b = SessionBuilder(random.Random(1))
    for i, text in enumerate(turns):
        if i % 2 == 0:
            b.say(text)
        else:
            b.reply([{"type": "text", "text": text}])
    return b.text()


def test_the_tail_reader_skips_a_half_written_last_line_and_keeps_cjk(tmp_path):
    path = tmp_path / "s.jsonl"
    half = '{"parentUuid":"x","type":"user","message":{"role":"user","content":"那周三'  # cut mid-write
    path.write_text(chat("我妈最近老是催我打电话", "那你打算什么时候打给她？", "这周工作太忙了", "辛苦啦") + half,
                    encoding="utf-8")
    assert tail.person_turns(path, limit=3) == ["我妈最近老是催我打电话", "这周工作太忙了"]
    assert tail.person_turns(tmp_path / "missing.jsonl") == []


def test_a_query_takes_the_persons_turns_only():
    q = Query.build("那周三呢？", [
        {"role": "user", "content": [{"type": "text", "text": "我妈最近老催我打电话"},
                                     {"type": "tool_result", "tool_use_id": "t", "content": "ls output"}]},
        {"role": "assistant", "content": "你之前说过芒果过敏"},
        "助手：别忘了带伞",
        "用户：这周太忙了",
        "下周再说吧",
    ])
    assert q.latest == "那周三呢？" and q.recent == ("我妈最近老催我打电话", "这周太忙了", "下周再说吧")
    assert set(q.forms()) == {"latest", "recent"} and "芒果" not in q.forms()["recent"]
    assert person_turns("User: hi\nAssistant: hello\nme: ok") == ["hi", "ok"]
    assert Query.build("周三呢", ["周三呢"]).recent == ()  # the transcript may already hold the prompt
    assert Query.build("", ["我想你了"]).latest == "我想你了"


def test_a_fragment_is_recalled_through_its_context(svc):
    call = hold(svc, "她每周三晚上八点和妈妈视频通话", type="日常")
    hold(svc, "她对芒果过敏，吃了嘴唇会肿", type="偏好")
    hold(svc, "她每周五晚上和闺蜜小林打电话", type="日常")
    found = svc.breath(BreathRequest("那周三呢？", context=["我妈最近老是催我跟她视频", "这周工作太忙了"]),
                       now=NOW, touch=False)
    assert found.cards[0].id == call


# -- relevance and activation -------------------------------------------------------------------------
def test_filler_cards_fill_an_asked_breath_but_earn_no_activation(svc):
    close = hold(svc, "她对花生过敏", type="规则", quote="我对花生过敏")
    far = hold(svc, "她的猫叫团子")
    r = svc.breath(BreathRequest("我是不是对花生过敏来着"), now=NOW)
    relevant = {c.id: c.relevant for c in r.cards}
    assert relevant == {close: True, far: False}
    assert svc.store.get(close).activation_count == 1 and svc.store.get(far).activation_count == 0
    assert "【可能相关（不太确定）】" in r.render()


def test_the_gate_is_the_one_for_the_encoders_that_scored_the_card():
    assert is_relevant({"sim": {"use": 0.9}}) and is_relevant({"sim": {"e5": 0.97, "use": 0.9}})
    assert not is_relevant({"sim": {"e5": 0.8, "use": 0.2}, "keyword": 1.0})
    assert is_relevant({"keyword": 1.0}) and not is_relevant({"keyword": 0.2})  # no vectors at all
    why = {"sim": {"use": 0.45}, "lift": {"use": 1.5}, "gap": {"use": 0.1}, "ranks": {"use:latest": 1}}
    for lead in (False, True):  # one encoder alone (the hook's fast path) has its own gate
        assert is_relevant(why, lead) == GATES[USE_ONLY, True].passes(gate_features(why), lead)


def test_a_memory_that_stands_out_of_its_nearest_passes_at_a_low_cosine():
    # English chats: e5 cosines run low, but the memory that answers stands above the few nearest to it
    low = {"e5": 0.85, "use": 0.3}
    assert not is_relevant({"sim": low, "lift": {"e5": 1.0, "use": 1.0}, "gap": {"e5": 0.0, "use": 0.0}}, True)
    assert is_relevant({"sim": low, "lift": {"e5": 1.0, "use": 1.0}, "gap": {"e5": 0.2, "use": 0.0}})
    # agreeing signals vouch more than any one alone
    why = {"sim": {"e5": 0.88, "use": 0.38}, "lift": {"e5": 1.5, "use": 1.5}, "gap": {"e5": 0.02, "use": 0.05}}
    ranked_first = {**why, "ranks": {s: 1 for s in ("keyword", "e5:latest", "e5:recent", "use:latest")}}
    both = GATES[E5_USE, True]
    assert both.score(gate_features(ranked_first)) > both.score(gate_features(why))


def test_the_first_card_has_a_lower_bar_than_the_cards_after_it():
    """One card a turn is cheap, each card after it adds noise: a score between the two bars shows the
    answer's first card, never a card after it."""
    gate = Gate({"sim:e5": 1.0}, bias=0.0, first=0.5, rest=0.8)
    assert gate.passes({"sim:e5": 0.6}, lead=True) and not gate.passes({"sim:e5": 0.6}, lead=False)
    assert all(g.first <= g.rest for g in GATES.values())
    assert any(g.first < g.rest for g in GATES.values())
    assert not is_relevant({"sim": {"e5": 0.5, "use": 0.0}, "lift": {"e5": 0.0, "use": 0.0}}, lead=True)


def test_breath_shows_the_memory_asked_about_and_not_the_others(svc):
    for text in ("她最喜欢喝桂花乌龙", "她夏天喜欢喝冰柠檬茶", "她每天早上喝一杯美式咖啡", "她的猫叫团子", "她怕打雷"):
        hold(svc, text)
    cards = svc.breath(BreathRequest("想喝我最喜欢的乌龙茶"), now=NOW).cards
    shown = [c.content for c in cards if c.relevant]
    assert shown[:1] == ["她最喜欢喝桂花乌龙"] and not {"她的猫叫团子", "她怕打雷"} & set(shown)
    assert [svc.store.get(c.id).activation_count for c in cards] == [1 if c.relevant else 0 for c in cards]


ENGLISH_LIFE = [
    "my sister Carla is getting married in June in Bogotá", "I work the grill station at a ramen place downtown",
    "my cat Mango bit the vet again lol", "studying for my Class 1 licence, the air brakes part is hard",
    "I send money to my mom every two weeks", "I hate cilantro, tastes like soap to me",
    "my landlord raised the rent by 200 bucks", "I play five-a-side soccer on Tuesday nights",
    "my best friend Andrés moved to Toronto last year", "I get migraines when I skip sleep",
    "I started learning guitar from YouTube videos", "my shift starts at 3pm most days",
    "I'm scared of driving on icy highways", "my dad passed away when I was fifteen",
    "I bought a used Corolla in March", "my favourite food is my mom's ajiaco", "I'm allergic to penicillin",
    "I want to open my own food truck one day", "my roommate Kevin plays loud music at night",
    "I go to the climbing gym on Sundays", "I'm trying to drink less coffee", "my birthday is on August 9",
    "I did two years of culinary school in Medellín", "I'm saving for a trip home at Christmas",
    "my knee hurts after long shifts", "I volunteer at the food bank once a month",
    "my phone screen is cracked", "I watch Formula 1 every race weekend",
    "my chef says I'm ready to run the line alone", "I learned to make ramen broth from scratch"]


def test_english_questions_get_their_card_shown_though_english_cosines_run_low(svc):
    ids = {text: hold(svc, text) for text in ENGLISH_LIFE}
    for question, answer in (("when is the wedding?", ENGLISH_LIFE[0]),
                             ("what do I do on Tuesday evenings", ENGLISH_LIFE[7])):
        card = svc.breath(BreathRequest(question), now=NOW, touch=False).cards[0]
        assert card.id == ids[answer] and card.relevant
        # the cosines alone (nothing standing out) would not have shown it
        flat = {**card.why, "lift": {k: 0.0 for k in card.why["lift"]}, "gap": {k: 0.0 for k in card.why["gap"]}}
        assert not is_relevant(flat, lead=True)
    unrelated = svc.breath(BreathRequest("tell me about the weather in Paris"), now=NOW, touch=False)
    assert not any(c.relevant for c in unrelated.cards)


def test_a_memory_only_one_encoder_can_see_is_judged_by_its_gates_for_judging_alone(tmp_path, embedder):
    # written while e5 was away: USE alone vouches for these memories, though e5 runs for the newer one
    settings = Settings.from_env({"HOME": str(tmp_path)})
    use = USEEmbedder()
    early = open_service(settings, arbitrate=False, encoders={"use": use})
    for text in ENGLISH_LIFE:
        hold(early, text)
    both = open_service(settings, arbitrate=False, encoders={"e5": embedder, "use": use})
    hold(both, "I repaint my bike every spring")
    r = both.breath(BreathRequest("who is Kevin"), now=NOW, touch=False)
    card = r.cards[0]
    assert r.encoders == ["e5", "use"] and "Kevin" in card.content and set(card.why["sim"]) == {"use"}
    assert card.relevant and GATES[USE_ONLY, True].passes(gate_features(card.why), card.lead)
    both.close()
    early.close()


# -- one renderer -------------------------------------------------------------------------------------
def _mcp_breath(service: MemoryService, **args) -> dict:
    server = build_mcp(service)
    _, structured = asyncio.run(server.call_tool("breath", args))
    return structured


def test_mcp_breath_returns_the_same_text_as_the_cli(svc, tmp_path):
    pin = hold(svc, "不要在她面前提前任", type="规则", pinned=True, quote="别再提我前任了")
    over_mcp = _mcp_breath(svc, query="别跟我提我前任")
    assert over_mcp["text"] != NOTHING and "不要在她面前提前任" in over_mcp["text"]
    assert [c["id"] for c in over_mcp["pinned"]] == [pin]
    cli = subprocess.run(OMBRE + ["breath", "别跟我提我前任"], env=ombre_env(tmp_path, OMBRE_HOME=str(svc.settings.ombre_home)), capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0 and over_mcp["text"] in cli.stdout


def test_http_breath_takes_context_and_returns_the_rendered_text(tmp_path):
    server = Server(tmp_path)
    try:
        for content in ("她每周三晚上八点和妈妈视频通话", "她每周五晚上和闺蜜小林打电话", "她对芒果过敏"):
            assert httpx.post(server.url + "/v1/hold", json={"content": content}, timeout=60).json()["stored"]
        body = {"query": "那周三呢？", "context": [{"role": "user", "text": "我妈最近老是催我跟她视频"},
                                                  {"role": "assistant", "text": "小林周五不是约了你吗"}]}
        r = httpx.post(server.url + "/v1/breath", json=body, timeout=60).json()
        assert "妈妈视频" in r["cards"][0]["content"] and r["text"].startswith("【")
        assert r["encoders"] == ["e5", "use"]
        bad = httpx.post(server.url + "/v1/breath", json={"query": "x", "context": 5}, timeout=30)
        assert bad.status_code == 422
    finally:
        server.stop()


# -- two encoders, and a store from before the second one ---------------------------------------------
def test_serve_embeds_an_older_store_with_the_new_encoder_in_the_background(tmp_path, embedder):
    settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre")})
    old = open_service(settings, arbitrate=False, encoders={"e5": embedder})  # as an e5-only store was written
    ids = [hold(old, f"第{i}件事：她在学第{i}首吉他曲子") for i in range(70)]
    old.close()
    db = sqlite3.connect(settings.memory_db)
    assert db.execute("SELECT count(*) FROM memories WHERE embedding_use IS NULL").fetchone()[0] == 70
    db.close()
    server = Server(tmp_path)
    try:
        for _ in range(200):
            health = httpx.get(server.url + "/health", timeout=10).json()
            if health.get("embedding", {}).get("use", {}).get("done") == 70:
                break
            import time

            time.sleep(0.1)
        assert health["embedding"]["use"] == {"todo": 70, "done": 70} and health["encoders"] == ["e5", "use"]
    finally:
        server.stop()
    s = open_service(settings, arbitrate=False, encoders={"use": USEEmbedder()})
    assert all(s.get(i).vectors == ["e5", "use"] for i in ids)
    s.close()


def test_the_background_embedding_resumes_where_it_stopped(tmp_path, embedder):
    settings = Settings.from_env({"HOME": str(tmp_path)})
    s = open_service(settings, arbitrate=False, encoders={"e5": embedder})
    for i in range(10):
        hold(s, f"她第{i}次去海边")
    use = USEEmbedder()
    s.store.set_vectors("use", [(m.id, v) for m, v in
                               zip(s.store.list()[:4], use.passages([m.content for m in s.store.list()[:4]]))])
    both = open_service(settings, arbitrate=False, encoders={"e5": embedder, "use": use})
    assert both.embed_pending() == 6 and both.embedding == {"e5": {"todo": 0, "done": 0},
                                                             "use": {"todo": 6, "done": 6},
                                                             "latent": {"todo": 0, "done": 0}}
    assert both.embed_pending() == 0
    both.close()
    s.close()


# -- the hook sends the person's recent turns ---------------------------------------------------------
def test_the_hook_sends_the_persons_recent_turns_from_the_transcript(tmp_path):
    server = Server(tmp_path)
    try:
        for content in ("她每周三晚上八点和妈妈视频通话", "她每周五晚上和闺蜜小林打电话", "她对芒果过敏"):
            assert httpx.post(server.url + "/v1/hold", json={"content": content}, timeout=60).json()["stored"]
        transcript = tmp_path / "t.jsonl"
        transcript.write_text(chat("我妈最近老是催我跟她视频", "小林周五不是约了你吗", "这周工作太忙了", "辛苦啦"),
                              encoding="utf-8")
        stdin = json.dumps({"session_id": "s1", "prompt": "那周三呢？", "transcript_path": str(transcript)})
        proc = subprocess.run([str(Path(sys.executable).parent / "ombre"), "hook", "user-prompt-submit"],
                              input=stdin, env=ombre_env(tmp_path, OMBRE_URL=server.url, OMBRE_INJECT_TARGET_MS="5000"),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0
        text = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "妈妈视频" in text and "芒果" not in text
        log = [json.loads(x) for x in (tmp_path / "ombre" / "hooks.jsonl").read_text().splitlines()]
        assert log[-1]["context"] == 2 and len(log[-1]["cards"]) == 1 and log[-1]["why"]
    finally:
        server.stop()


# -- the gateway --------------------------------------------------------------------------------------
def test_the_gateway_reads_the_persons_earlier_turns_and_a_conversation_key():
    body = {"metadata": {"user_id": "user_ab_account_cd_session_1234-5678"}, "messages": [
        {"role": "user", "content": "我妈最近老是催我跟她视频"},
        {"role": "assistant", "content": "小林周五不是约了你吗"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"},
                                     {"type": "text", "text": "<system-reminder>noise</system-reminder>"}]},
        {"role": "user", "content": "这周工作太忙了"},
        {"role": "user", "content": "那周三呢？"}]}
    assert earlier_turns(body) == ["我妈最近老是催我跟她视频", "这周工作太忙了"]
    assert conversation_key(body) == "1234-5678"
    as_2_1 = {**body, "metadata": {"user_id": json.dumps({"device_id": "d", "account_uuid": "",
                                                           "session_id": "abcd-ef"})}}
    assert conversation_key(as_2_1) == "abcd-ef"  # Claude Code 2.1.112 sends a JSON object
    plain = {"messages": body["messages"]}
    assert conversation_key(plain) == conversation_key(dict(plain)) and conversation_key(plain).startswith("conv-")
    other = {"messages": [{"role": "user", "content": "另一段对话"}]}
    assert conversation_key(other) != conversation_key(plain)


def test_the_memory_that_clearly_answers_leads_and_agreement_orders_the_rest():
    """Fusion's two blends: `a` stands far out in both encoders (evidence) and goes first; `b` and `c` stand
    out less, and `b`, which the two encoders rank above `c`, comes next. One evidence-heavy blend for every
    place would put `c` second on its larger lift."""
    import dataclasses

    sig = Signals(rankings={"keyword": ["c", "b", "a"], "e5:recent": ["b", "c", "a"], "use:recent": ["b", "c", "a"]},
                  lift={"e5": {"a": 5.0, "b": 1.0, "c": 2.0}, "use": {"a": 4.0, "b": 1.0, "c": 1.8}})
    two = dataclasses.replace(FUSION, evidence_share=0.3, head_share=0.9)  # the mechanism, not the tuned values
    scores = fuse(sig, two)
    assert sorted(scores, key=lambda m: -scores[m]) == ["a", "b", "c"]
    single = fuse(sig, dataclasses.replace(two, evidence_share=two.head_share))
    assert sorted(single, key=lambda m: -single[m]) == ["a", "c", "b"]
    assert fuse(Signals(), FUSION) == {}


def test_a_memory_that_asks_does_not_answer_and_a_question_about_when_favours_one_that_names_a_time():
    assert FUSION.asks > 0 and FUSION.when > 0
    assert form_factor("what did she say?", "Priya: How was the party?") == pytest.approx(1 - FUSION.asks)
    assert form_factor("what did she say?", "她问：那天你去了吗？ ") == pytest.approx(1 - FUSION.asks)
    assert form_factor("what did she say?", "你去了吗？😊") == pytest.approx(1 - FUSION.asks)
    # "may" the verb, 「一点」 "a bit": no time named
    assert form_factor("When did she call?", "Grace: I may call her") == form_factor("什么时候", "她有一点累") == 1.0
    told = "Leo: He turned 16 on Tuesday"
    assert form_factor("When did Tomás turn 16?", told) == pytest.approx(1 + FUSION.when)
    assert form_factor("How long was she in a cast?", "Grace: a cast for six weeks") == pytest.approx(1 + FUSION.when)
    assert form_factor("我每天通勤要多久？", "她住在天河区，离医院骑车二十分钟") == pytest.approx(1 + FUSION.when)
    # "when" that is not asking when, and a question not about time: no time favoured
    assert form_factor("what did I ask you to remind me of when I'm on nights?", told) == 1.0
    assert form_factor("What did Tomás want?", told) == 1.0
    # the head: fuse's first, unless it asks; then the first read after it that does not
    contents = {"q": "Priya: How was Tomás's birthday?", "a": told, "b": "Leo: Busy week"}
    assert settle(["q", "b", "a"], contents, "When did Tomás turn 16?")[1] == "b"
    assert settle(["a", "q", "b"], contents, "When did Tomás turn 16?")[1] == "a"
    assert settle(["gone", "q"], contents, "When?")[1] == "gone"  # not read (archived): breath passes it over


def test_breath_shows_the_turn_that_answers_before_the_question_it_answers(svc):
    """A chat kept turn by turn: the question turn shares the most words with the question asked and fuses
    first; the turn that answers, and names the day, is shown first."""
    turns = ["Priya: How was Tomás's sixteenth birthday dinner?",
             "Leo: Lovely. He turned 16 on Tuesday, the three of us ate at his favourite grill",
             "Leo: The bakery is busy, we sold out of pastéis by ten",
             "Priya: I failed my road test, rolled through a stop sign",
             "Leo: Tomás wants new sneakers more than anything",
             "Priya: My manager liked the redesign",
             "Leo: Marta and I are good co-parents now"]
    ids = [hold(svc, text) for text in turns]
    asked = "When did Tomás turn sixteen?"
    fused = retrieve(svc.store, Query.build(asked), encoders=svc.encoders)
    assert max(fused, key=lambda mid: fused[mid][0]) == ids[0]
    cards = svc.breath(BreathRequest(asked), now=NOW, touch=False).cards
    assert [c.id for c in cards[:2]] == [ids[1], ids[0]]
    assert cards[0].lead and cards[0].why["form"] == pytest.approx(1 + FUSION.when)


def test_the_adjustments_order_the_places_after_the_first_and_never_the_first(svc):
    """However far importance is allowed to move a score, the memory whose evidence stands out stays first;
    the places after it follow the adjusted scores."""
    from ombre.memory.breath import Adjust, breath

    cat = hold(svc, "她的猫叫团子", importance=1)
    importance_of = {hold(svc, text, importance=importance): importance for importance, text in
                     enumerate(["她喜欢吃番茄炒蛋", "她在学吉他", "她怕打雷", "她每天早上喝美式咖啡"], start=3)}
    ask = BreathRequest("团子最近怎么样")
    plain = breath(svc.store, ask, encoders=svc.encoders, now=NOW, touch=False, adjust=Adjust(0, 0, 0, 0))
    heavy = breath(svc.store, ask, encoders=svc.encoders, now=NOW, touch=False, adjust=Adjust(importance=0.99))
    assert plain.cards[0].id == cat and heavy.cards[0].id == cat
    assert heavy.cards[0].score < max(c.score for c in heavy.cards)
    rest = [c.score for c in heavy.cards[1:]]
    assert rest == sorted(rest, reverse=True) and len(rest) == 4
    # the adjustment moved the places after the first: each by its importance
    plain_score = {c.id: c.score for c in plain.cards}
    moved = {c.id: c.score / plain_score[c.id] for c in heavy.cards[1:] if plain_score[c.id] > 0}
    assert moved and all(abs(f - (1 - 0.99 * (10 - importance_of[i]) / 9)) < 0.01 for i, f in moved.items())


def test_the_writing_of_a_query_is_told_by_its_letters():
    from ombre.memory.segment import script

    assert script("When did Maya adopt her dog?") == "latin"
    assert script("她在准备什么考试？") == "cjk"
    assert script("我想学Python，你觉得呢") == "cjk"  # a Latin word inside Chinese is still Chinese
    assert script("ok") == "latin" and script("？？") == "cjk"


def test_an_english_query_weighs_each_family_of_signals_by_its_latin_weight():
    """The same signals, fused for a Chinese and for an English query: with USE worth nothing in Latin script,
    the English query follows e5 where USE disagrees; the Chinese query still hears USE."""
    import dataclasses

    rankings = {"e5:latest": ["e", "u"], "use:latest": ["u", "e"]}
    fusion = dataclasses.replace(FUSION, weights=(("e5:latest", 1.0), ("use:latest", 1.5)), evidence=(),
                                 latin=(("use", 0.0),), evidence_share=0.0, head_share=0.0)
    zh = fuse(Signals(rankings=dict(rankings), script="cjk"), fusion)
    en = fuse(Signals(rankings=dict(rankings), script="latin"), fusion)
    assert max(zh, key=zh.get) == "u" and max(en, key=en.get) == "e"
    assert fusion.weight("use:latest", "latin") == 0.0 and fusion.weight("use:latest") == 1.5


def test_in_a_store_of_three_memories_nothing_stands_out_by_lift(svc):
    """A store's mean over three memories is mostly those memories: one of them would "stand out" of it for
    any question, so there only the cosine gates vouch (fusion.LIFT_FROM)."""
    from ombre.memory.fusion import LIFT_FROM

    for text in ("她的猫叫团子", "她对芒果过敏", "她在学游泳"):
        hold(svc, text)
    assert LIFT_FROM > 3
    result = svc.breath(BreathRequest("明天的会议几点开始"), now=NOW, touch=False)
    assert result.cards and all(c.why["lift"] == c.why["gap"] == {} for c in result.cards)
    assert not any(c.relevant for c in result.cards)



def test_e5_reads_both_forms_cut_shorter_when_time_is_short():
    """A turn that alludes to a memory in its own words is found through itself, a fragment through the turns
    before it: e5 embeds both forms, each cut to as many tokens as the deadline leaves room for (never the
    recent turns alone), and none when not even E5_MIN_TOKENS of each would fit."""
    import time as time_module

    from ombre.memory.embed import E5
    from ombre.memory.query import Query
    from ombre.memory.signals import DEADLINE_RESERVE_MS, E5_MIN_TOKENS, E5_TOKENS, _plan

    class Characters:  # an encoder whose tokens are characters (the plan needs only the count)
        def tokens(self, text: str) -> int:
            return len(text)

    latest = "又路过那家店了，想起上次你说的那家火锅"
    query = Query.build(latest, ["昨天和朋友去吃了火锅，吃到很晚才回家，聊了好多小时候的事情", "好撑啊，今天一天都不想吃东西了"])
    encoders = {"e5": Characters(), "use": Characters()}
    plan = _plan(query, encoders, None, E5_TOKENS)
    assert plan["e5"] == {"latest": latest, "recent": plan["e5"]["recent"]}
    assert len(plan["e5"]["recent"]) == E5_TOKENS and plan["e5"]["recent"].endswith(latest)
    assert set(plan["use"]) == {"latest", "recent"}

    whole = E5.cost_ms(len(latest) + E5_TOKENS, 2)
    tight = _plan(query, encoders, time_module.monotonic() + (whole - 12 + DEADLINE_RESERVE_MS) / 1000, E5_TOKENS)
    assert set(tight["e5"]) == {"latest", "recent"}
    assert E5_MIN_TOKENS <= len(tight["e5"]["recent"]) < E5_TOKENS
    assert tight["e5"]["latest"] == latest[-len(tight["e5"]["latest"]):]  # each form keeps its end
    assert "e5" not in _plan(query, encoders, time_module.monotonic(), E5_TOKENS)  # nothing fits: USE alone
    assert tight["use"] == plan["use"]  # USE (a few ms) reads every form whole either way


def test_a_latest_message_as_long_as_e5s_cut_is_embedded_once(svc, embedder):
    """Its recent form is the same text (the last 64 tokens are its own): embedded once, counted once in
    the deadline's estimate, and both forms' rankings are kept."""
    from ombre.memory.query import Query
    from ombre.memory.signals import E5_TOKENS, LATEST_FILLS, _plan, signals_for

    class Counting:  # the real e5, counting the texts it is asked to embed
        spec = embedder.spec

        def __init__(self) -> None:
            self.texts: list[str] = []

        def queries(self, texts: list[str]):
            self.texts += texts
            return embedder.queries(texts)

        def tokens(self, text: str) -> int:
            return embedder.tokens(text)

    hold(svc, "她每周三晚上八点和妈妈视频通话")
    long = "我跟你说，今天下班路上一直在想周末要不要回老家看我妈，她最近总说腰疼，又不肯去医院检查，" * 3
    query = Query.build(long, ["我妈最近老是催我跟她视频"])
    plan = _plan(query, {"e5": Counting()}, None, E5_TOKENS)["e5"]
    assert plan["latest"] == plan["recent"]
    e5 = Counting()
    sig = signals_for(svc.store, query, encoders={"e5": e5})
    assert len(e5.texts) == 1 and sig.rankings["e5:latest"] == sig.rankings["e5:recent"]

    # Half the cut is enough: the recent form would add only a few tokens of the turns before it
    half = "我跟你说，今天下班路上一直在想周末要不要回老家看我妈，她最近总说腰疼，又不肯去医院检查"
    assert LATEST_FILLS * E5_TOKENS <= embedder.tokens(half) < E5_TOKENS
    plan = _plan(Query.build(half, ["我妈最近老是催我跟她视频"]), {"e5": Counting()}, None, E5_TOKENS)["e5"]
    assert plan["latest"] == plan["recent"] == half
    # a fragment is still read with the turns before it
    plan = _plan(Query.build("那周三呢？", ["我妈最近老是催我跟她视频"]), {"e5": Counting()}, None, E5_TOKENS)["e5"]
    assert plan["recent"] == "我妈最近老是催我跟她视频\n那周三呢？" and plan["latest"] == "那周三呢？"


def test_pace_plans_with_the_slow_end_of_what_this_machine_measured(monkeypatch):
    """A deadline planned on the spec's estimate is overrun where queries run slower than where it was
    measured: the pace follows this machine, but one slow query is not the machine, the model's first
    (loading) query is not counted, and old measurements expire so a burst of load passes."""
    from ombre.memory import embed
    from ombre.memory.embed import E5, Pace

    clock = [1000.0]
    monkeypatch.setattr(embed.time, "monotonic", lambda: clock[0])
    pace = Pace(E5)
    pace.record(40, 5_000.0)  # the model loading
    assert pace.factor == 1.0 and pace.cost_ms(40) == E5.cost_ms(40)
    for _ in range(12):
        pace.record(40, 1.5 * E5.cost_ms(40))
    assert abs(pace.factor - 1.5) < 1e-9 and abs(pace.cost_ms(40, 2) - 1.5 * E5.cost_ms(40, 2)) < 1e-9
    pace.record(40, 10 * E5.cost_ms(40))  # one stall
    assert abs(pace.factor - 1.5) < 1e-9
    clock[0] += embed.PACE_MINUTES * 60 + 1
    assert pace.factor == 1.0  # nothing recent: the estimate again


def test_english_memories_get_latent_terms_and_an_english_question_ranks_by_them(svc):
    """The e5 model's latent terms (its sparse head) are written with each English memory and read by an English
    question; a Chinese memory gets only its marker (no model pass) and a Chinese question no latent ranking."""
    ids = {text: hold(svc, text) for text in ENGLISH_LIFE}
    zh = hold(svc, "她对芒果过敏")
    assert svc.store.latents_pending() == 0
    latents = dict(svc.store._query("SELECT id, count(*) FROM memory_latents WHERE latent >= 0 GROUP BY id"))
    assert zh not in latents and all(latents[ids[t]] > 10 for t in ENGLISH_LIFE)
    result = svc.breath(BreathRequest("which antibiotic am I allergic to?"), now=NOW, touch=False)
    ranked = [c for c in result.cards if "latent" in c.why["ranks"]]
    assert ranked and ranked[0].id == ids["I'm allergic to penicillin"]
    chinese = svc.breath(BreathRequest("她对什么过敏？"), now=NOW, touch=False)
    assert chinese.cards and not any("latent" in c.why["ranks"] for c in chinese.cards)


def test_a_big_stores_latent_terms_run_beside_the_rest_and_rank_the_same(svc, monkeypatch):
    """In a big store (OVERLAP_FROM) an English question's latent pass and search run in a thread beside the
    other signals, unless a deadline plans them one after the other: the signals come out the same."""
    import time

    from ombre.memory import signals
    from ombre.memory.query import Query

    for text in ENGLISH_LIFE:
        hold(svc, text)
    query = Query.build("which antibiotic am I allergic to?", None)
    threads: list[str] = []
    search = svc.store.latent_search

    def watched(*args):
        threads.append(threading.current_thread().name)
        return search(*args)

    monkeypatch.setattr(svc.store, "latent_search", watched)
    monkeypatch.setattr(signals, "OVERLAP_FROM", 1)
    beside = signals.signals_for(svc.store, query, encoders=svc.encoders)
    after = signals.signals_for(svc.store, query, encoders=svc.encoders, deadline=time.monotonic() + 60)
    assert threads[0] != threading.current_thread().name and threads[1] == threading.current_thread().name
    assert beside.rankings[signals.LATENT] and beside.rankings == after.rankings and beside.keyword == after.keyword


def test_an_older_store_gets_its_latent_terms_in_the_background(tmp_path, embedder):
    settings = Settings.from_env({"HOME": str(tmp_path)})
    early = open_service(settings, arbitrate=False, encoders={})  # written without the e5 model
    for text in ENGLISH_LIFE[:5]:
        hold(early, text)
    assert early.store.latents_pending() == 5
    later = open_service(settings, arbitrate=False, embedder=embedder)
    later.embed_pending(batch=2)
    assert later.store.latents_pending() == 0 and later.embedding["latent"] == {"todo": 5, "done": 5}


@pytest.mark.parametrize("preset, expected", [(None, "ACTIVE"), ("PASSIVE", "PASSIVE")])
def test_e5_loads_with_openmp_waits_that_do_not_throttle_unless_the_person_chose_otherwise(preset, expected):
    """A server's many threads each get an OpenMP team of e5's; libgomp's throttled waits made each query ~40 %
    slower (embed.OPENMP). The setting must be in the environment when the model loads, and a person's wins."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if preset:
        env["OMP_WAIT_POLICY"] = preset
    code = ("import os; from ombre.memory.embed import E5Embedder; e = E5Embedder(); e.query('你好'); "
            "print(os.environ['OMP_WAIT_POLICY'], os.environ['GOMP_SPINCOUNT'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [expected, "300000"]
