"""cc-connect as it really is: where its session file is, where it looks for the transcript
before resuming, and refusing a re-bind it would turn into a fresh start. Files are of the shapes and names
cc-connect writes; the sessions are generated transcripts whose recorded cwd is the work dir."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from ombre.errors import BridgeError, UsageError
from ombre.settings import Settings
from ombre.transcript.sessions import project_dir_name
from ombre.tunnel import cc_connect
from ombre.tunnel.bridges import CcConnectBridge, from_settings
from ombre.tunnel.tunnel import TunnelOptions, run
from tests.support.servers import cc_connect_file
from tests.support.transcript_gen import SessionBuilder


def session_in(claude_home: Path, work_dir: str, seed: int = 1) -> Path:
    """A short chat Claude Code would have written for `work_dir`, in Claude Code's own folder for it."""
    b = SessionBuilder(random.Random(seed), cwd=work_dir)
    b.metadata()
    for text in ("今天好累啊", "周四下午三点我要去复诊，你记得提醒我。", "晚安"):
        b.say(text)
        b.reply([{"type": "text", "text": "好的。"}])
    folder = claude_home / "projects" / project_dir_name(work_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    return path


def tag(work_dir: str) -> str:
    return hashlib.sha256(work_dir.encode()).hexdigest()[:8]


def test_the_session_file_name_is_cc_connects_and_an_older_name_wins_when_it_exists(tmp_path):
    data = tmp_path / "cc"
    assert cc_connect.session_store_path(data, "companion", Path("/srv/bot")) == \
        data / "sessions" / f"companion_{tag('/srv/bot')}.json"
    assert cc_connect.session_store_path(data, "companion", None) == data / "sessions" / "companion.json"
    legacy = data / f"companion_{tag('/srv/bot')}.sessions.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text("{}")
    assert cc_connect.session_store_path(data, "companion", Path("/srv/bot")) == legacy


def test_the_session_file_is_found_from_cc_connects_config(tmp_path):
    work = tmp_path / "work"
    data = tmp_path / "ccdata"
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data}"\n\n[[projects]]\nname = "companion"\n[projects.agent]\ntype = "claudecode"\n'
                      f'[projects.agent.options]\nwork_dir = "{work}"\n\n[[projects]]\nname = "coder"\n'
                      '[projects.agent]\ntype = "codex"\n', encoding="utf-8")
    env = {"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_BRIDGE": "cc-connect",
           "OMBRE_CC_CONNECT_CONFIG": str(config), "OMBRE_BRIDGE_STOP": "true", "OMBRE_BRIDGE_START": "true"}
    bridge = from_settings(Settings.from_env(env))
    assert bridge.session_file == data / "sessions" / f"companion_{tag(str(work))}.json"
    assert bridge.work_dir == work and bridge.home == tmp_path
    with pytest.raises(UsageError, match="no project 'nope'"):
        from_settings(Settings.from_env({**env, "OMBRE_BRIDGE_PROJECT": "nope"}))
    config.write_text(config.read_text() + '\n[[projects]]\nname = "second"\n[projects.agent]\ntype = "claudecode"\n')
    with pytest.raises(UsageError, match="2 Claude Code projects") as caught:
        from_settings(Settings.from_env(env))
    assert "OMBRE_BRIDGE_PROJECT" in caught.value.hint


def test_without_a_config_the_work_dir_alone_finds_the_file(tmp_path):
    f = cc_connect_file(tmp_path, "x", work_dir="/home/user/companion")
    (f.parent / f"other_{tag('/elsewhere')}.json").write_text("{}")
    env = {"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_BRIDGE": "cc-connect",
           "OMBRE_CC_CONNECT_CONFIG": str(tmp_path / "none.toml"), "OMBRE_BRIDGE_STOP": "true",
           "OMBRE_BRIDGE_START": "true"}
    with pytest.raises(UsageError, match="cannot tell which cc-connect project") as caught:
        from_settings(Settings.from_env(env))
    assert "OMBRE_BRIDGE_WORK_DIR" in caught.value.hint
    found = from_settings(Settings.from_env({**env, "OMBRE_BRIDGE_WORK_DIR": "/home/user/companion"}))
    assert found.session_file == f and found.work_dir == Path("/home/user/companion")
    with pytest.raises(BridgeError, match="no cc-connect session file"):
        from_settings(Settings.from_env({**env, "OMBRE_BRIDGE_WORK_DIR": "/home/user/another"}))


def test_a_qq_key_re_points_only_that_conversation(tmp_path):
    work = "/home/user/companion"
    old, new = session_in(tmp_path / ".claude", work, 1), session_in(tmp_path / ".claude", work, 2)
    f = cc_connect_file(tmp_path, old.stem, work_dir=work, key="qq:42")
    data = json.loads(f.read_text())
    data["sessions"]["s2"] = {**data["sessions"]["s1"], "id": "s2", "agent_session_id": "other-chat"}
    data["active_session"]["telegram:-100:7"] = "s2"
    f.write_text(json.dumps(data))
    bridge = CcConnectBridge(f, "true", "true", key="qq:42", home=tmp_path)
    bridge.bind(new.stem, new.parent)
    after = json.loads(f.read_text())
    assert after["sessions"]["s1"]["agent_session_id"] == new.stem
    assert after["sessions"]["s1"]["past_agent_session_ids"] == [old.stem]
    assert after["sessions"]["s2"] == data["sessions"]["s2"]


def test_a_session_under_claude_config_dir_is_refused_before_anything_is_written(tmp_path):
    """cc-connect checks $HOME/.claude/projects, never CLAUDE_CONFIG_DIR: a session written elsewhere would be
    cleared and the chat started fresh, so the tunnel stops before forging."""
    work = "/home/user/companion"
    path = session_in(tmp_path / "other-claude", work)
    f = cc_connect_file(tmp_path, path.stem, work_dir=work)
    before, listing = f.read_bytes(), sorted(p.name for p in path.parent.iterdir())
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "other-claude"),
           "OMBRE_HOME": str(tmp_path / "ombre")}
    bridge = CcConnectBridge(f, "true", "true", home=tmp_path)
    with pytest.raises(BridgeError, match="cc-connect would not find") as caught:
        run(Settings.from_env(env), path, TunnelOptions(hold=False), bridge=bridge, holder=None)
    assert "CLAUDE_CONFIG_DIR" in caught.value.message
    assert f.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == listing
    dry = run(Settings.from_env(env), path, TunnelOptions(dry_run=True), bridge=bridge, holder=None)
    assert any("would not find" in w for w in dry.warnings)


def test_a_work_dir_cc_connect_encodes_differently_is_refused(tmp_path):
    """Claude Code names the folder of /home/user/my+bot `-home-user-my-bot`; cc-connect looks for
    `-home-user-my+bot` and, failing that, a case-insensitive match of it: it would start fresh."""
    work = "/home/user/my+bot"
    old, new = session_in(tmp_path / ".claude", work, 1), session_in(tmp_path / ".claude", work, 2)
    assert cc_connect.resume_file(tmp_path, Path(work), old.stem) is None
    bridge = CcConnectBridge(cc_connect_file(tmp_path, old.stem, work_dir=work), "true", "true", home=tmp_path)
    with pytest.raises(BridgeError, match="would not find"):
        bridge.bind(new.stem, new.parent)
    assert bridge.bound_sid() == old.stem
    plain = "/home/user/my_bot.v2"  # '_' and '.' are encoded alike by both: found
    ok = session_in(tmp_path / ".claude", plain, 3)
    assert cc_connect.resume_file(tmp_path, Path(plain), ok.stem) == ok


def test_a_session_file_of_another_work_dir_is_refused(tmp_path):
    old = session_in(tmp_path / ".claude", "/home/user/companion", 1)
    new = session_in(tmp_path / ".claude", "/home/user/companion", 2)
    f = cc_connect_file(tmp_path, old.stem, work_dir="/srv/another-bot")
    bridge = CcConnectBridge(f, "true", "true", home=tmp_path)
    with pytest.raises(BridgeError, match="another work dir"):
        bridge.bind(new.stem, new.parent)
    assert bridge.bound_sid() == old.stem
