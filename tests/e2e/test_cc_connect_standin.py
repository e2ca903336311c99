"""End to end against a cc-connect that behaves as its source does.

The stand-in (standin_cc_connect.py) runs the real Claude Code CLI as one long-lived stream-json process per
conversation, keeps its session file the way cc-connect does (read once, rewritten whole on every save) and
clears a stored id whose transcript it cannot find under $HOME before resuming. Ombre finds that file from
cc-connect's config, re-binds it with stop → edit → start, refuses a binding the stand-in would turn into a
fresh start, and continues a /new once.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.claude import ClaudeCode
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.servers import free_port

pytestmark = pytest.mark.e2e
STANDIN = Path(__file__).with_name("standin_cc_connect.py")
KEY = "qq:42"


@dataclass
class Bot:
    cc: ClaudeCode
    fake: FakeAnthropic
    config: Path
    state: Path
    env: dict

    def ctl(self, command: str, *args: str) -> str:
        proc = subprocess.run([sys.executable, str(STANDIN), command, "--config", str(self.config), "--state",
                               str(self.state), *args], env=self.env, capture_output=True, text=True, timeout=150)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def send(self, text: str) -> dict:
        return json.loads(self.ctl("send", "--key", KEY, text))

    def log(self) -> list[dict]:
        return [json.loads(line) for line in (self.state / "log.jsonl").read_text(encoding="utf-8").splitlines()]

    def session_file(self) -> dict:
        files = list((self.cc.home / ".cc-connect" / "sessions").glob("companion_*.json"))
        assert len(files) == 1
        return json.loads(files[0].read_text(encoding="utf-8"))

    def ombre(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ombre.cli", *args], env={**self.env, **env}, cwd=self.cc.workdir,
                              capture_output=True, text=True, timeout=240)

    def transcript(self, sid: str) -> Path:
        """The session's file once Claude has flushed the turn's reply (it writes a beat after the turn's
        result event: the person's line can be there while the reply is not yet)."""
        path = self.cc.project_dir / f"{sid}.jsonl"
        for _ in range(200):
            if path.exists() and (data := path.read_bytes()).endswith(b"\n"):
                said = [r["type"] for r in map(json.loads, data.splitlines()) if r.get("type") in ("user", "assistant")]
                if said and said[-1] == "assistant":
                    return path
            time.sleep(0.05)
        raise AssertionError(f"{path} never held the turn's reply")

    def sent_to_model(self, since: int) -> str:
        return json.dumps([r.body for r in self.fake.requests[since:] if "count_tokens" not in r.path],
                          ensure_ascii=False)


@pytest.fixture
def bot(tmp_path: Path, cli: Path):
    with FakeAnthropic() as fake:
        cc = ClaudeCode.create(tmp_path, fake.url, cli)
        config = tmp_path / "cc-connect.toml"
        config.write_text(f'[[projects]]\nname = "companion"\n[projects.agent]\ntype = "claudecode"\n'
                          f'[projects.agent.options]\nwork_dir = "{cc.workdir}"\n', encoding="utf-8")
        state = tmp_path / "standin"
        ctl = f"{sys.executable} {STANDIN} {{}} --config {config} --state {state}"
        env = cc.env(OMBRE_CLAUDE_CLI=str(cli), OMBRE_HOME=str(tmp_path / "ombre"),
                     OMBRE_URL=f"http://127.0.0.1:{free_port()}", OMBRE_BRIDGE="cc-connect",
                     OMBRE_CC_CONNECT_CONFIG=str(config), OMBRE_BRIDGE_KEY=KEY,
                     OMBRE_BRIDGE_STOP=ctl.format("stop"), OMBRE_BRIDGE_START=ctl.format("start"),
                     OMBRE_BRIDGE_NUDGE=f"{ctl.format('send')} --key {KEY} {{text}}")
        b = Bot(cc, fake, config, state, env)
        b.ctl("start")
        try:
            yield b
        finally:
            b.ctl("stop")


def test_a_tunnel_re_binds_the_running_bridge_and_it_resumes_the_forged_session(bot):
    first = bot.send("今天好累啊，加班到十点。")
    assert first["resumed"] is False and first["agent_session_id"]
    old = first["agent_session_id"]
    assert bot.send("周四下午三点我要去复诊，你记得提醒我。")["agent_session_id"] == old
    bot.transcript(old)
    before = len(bot.fake.requests)
    out = bot.ombre("tunnel", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["ok"] and result["rebind"] == "ok" and result["started"] and result["nudge"] == "sent"
    assert result["old_sid"] == old and result["bound_sid"] == old
    saved = bot.session_file()["sessions"]["s1"]
    assert saved["agent_session_id"] == result["new_sid"] and saved["past_agent_session_ids"] == [old]
    # the nudge was the restarted bridge's first turn: it resumed the forged session, handoff first
    starts = [e for e in bot.log() if e["event"] == "start"]
    assert starts[-1]["resume"] == result["new_sid"]
    assert not any(e.get("message", "").startswith("session ID does not belong") for e in bot.log())
    assert "会话交接" in bot.sent_to_model(before) and "复诊" in bot.sent_to_model(before)
    again = bot.send("我回来了")
    assert again["agent_session_id"] == result["new_sid"] and not again["cleared"]
    # Ombre never touches the old session (its backup is the file as forged); Claude itself, stopped with the
    # bridge, appends its last-prompt line
    original = Path(result["backup"]).read_bytes()
    after = (bot.cc.project_dir / f"{old}.jsonl").read_bytes()
    assert after.startswith(original)
    assert all(json.loads(line)["type"] == "last-prompt" for line in after[len(original):].splitlines())


def test_a_binding_cc_connect_would_not_resume_is_refused_and_would_have_started_fresh(bot, tmp_path):
    old = bot.send("今天好累啊")["agent_session_id"]
    # The same chat forged under another Claude home (CLAUDE_CONFIG_DIR), which cc-connect never looks in.
    other = tmp_path / "other-claude"
    (other / "projects" / bot.cc.project_dir.name).mkdir(parents=True)
    shutil.copy2(bot.transcript(old), other / "projects" / bot.cc.project_dir.name)
    forged = bot.ombre("forge", old, "--json", CLAUDE_CONFIG_DIR=str(other))
    assert forged.returncode == 0, forged.stderr
    new = json.loads(forged.stdout)["new_session"]
    before = bot.session_file()
    refused = bot.ombre("rebind", new, CLAUDE_CONFIG_DIR=str(other))
    assert refused.returncode == 6 and "cc-connect would not find" in refused.stderr, refused.stderr
    assert bot.session_file() == before  # not edited, and the bridge was never stopped
    assert bot.send("还在吗")["agent_session_id"] == old
    # What the refusal prevented: the same edit done by hand (stop → edit → start) makes cc-connect clear
    # the id and start a fresh session.
    bot.ctl("stop")
    path = next((bot.cc.home / ".cc-connect" / "sessions").glob("companion_*.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["sessions"]["s1"]["agent_session_id"] = new
    path.write_text(json.dumps(data), encoding="utf-8")
    bot.ctl("start")
    fresh = bot.send("我回来了")
    assert fresh["cleared"] and fresh["agent_session_id"] not in (old, new)
    assert any(e.get("message") == "session ID does not belong to this project, clearing it" for e in bot.log())


def test_slash_new_is_continued_once_by_the_keeper(bot):
    old = bot.send("周四下午三点我要去复诊，你记得提醒我。")["agent_session_id"]
    bot.transcript(old)
    wrote = bot.ombre("handoff", "prepare", "--write")
    assert wrote.returncode == 0, wrote.stderr
    handoff = (bot.cc.workdir / "SESSION_HANDOFF.md").read_text(encoding="utf-8")
    assert "复诊" in handoff
    waiting = bot.ombre("keeper", "run", "--once")
    assert waiting.returncode == 0, waiting.stderr
    bot.ctl("new", "--key", KEY)  # the person sends /new
    before = len(bot.fake.requests)
    moved = bot.send("我开了个新窗口")
    assert moved["agent_session_id"] != old and moved["resumed"] is False
    for _ in range(2):
        tick = bot.ombre("keeper", "run", "--once")
        assert tick.returncode == 0, tick.stderr
    sent = bot.sent_to_model(before)
    assert sent.count("刚用 /new 开了新窗口") == 1 and "SESSION_HANDOFF.md" in sent
    metrics = (Path(bot.env["OMBRE_HOME"]) / "metrics.jsonl").read_text(encoding="utf-8")
    assert metrics.count("continuation nudge sent") == 1
    assert bot.session_file()["active_session"][KEY] != "s1"  # the /new session, untouched by ombre
