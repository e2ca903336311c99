"""`ombre doctor` on a broken set-up (each check says what to do; --fix does the safe ones)
and on a healthy one (a real `ombre serve`, the hooks installed, the keeper seeded, a backup)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import Server, free_port, ombre_env

OMBRE = [str(Path(sys.executable).parent / "ombre")]


def _doctor(env: dict, *args: str) -> tuple[int, list[dict]]:
    out = subprocess.run(OMBRE + ["doctor", "--json", *args], env=env, capture_output=True, text=True, timeout=120)
    return out.returncode, json.loads(out.stdout)


def test_a_broken_set_up_gets_a_to_do_for_each_failed_check_and_fix_does_the_safe_ones(tmp_path):
    env = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}")
    subprocess.run(OMBRE + ["hold", "她喜欢桂花乌龙", "--quote", "我最喜欢桂花乌龙"], env=env, check=True,
                   capture_output=True)
    code, checks = _doctor(env)
    by = {c["name"]: c for c in checks}
    assert code == 1
    for name in ("memory service", "hooks and MCP", "keeper cooldowns", "backup"):
        assert not by[name]["ok"] and by[name]["todo"], by[name]
    assert by["database"]["ok"]
    code, fixed = _doctor(env, "--fix")
    by = {c["name"]: c for c in fixed}
    assert by["keeper cooldowns"]["fixed"].startswith("seeded") and by["backup"]["fixed"].startswith("took")
    assert (tmp_path / "ombre" / "keeper-state.json").exists()
    code, again = _doctor(env)
    by = {c["name"]: c for c in again}
    assert by["keeper cooldowns"]["ok"] and by["backup"]["ok"] and not by["memory service"]["ok"]


def _healthy(tmp_path: Path, server: Server) -> dict:
    """A set-up every check passes on: a real serve, the hooks installed, the keeper seeded, a backup."""
    env = ombre_env(tmp_path, OMBRE_URL=server.url)
    for args in (["install", "claude-code"], ["keeper", "seed"], ["backup"]):
        out = subprocess.run(OMBRE + args, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    return env


def test_a_healthy_set_up_passes(tmp_path):
    server = Server(tmp_path)
    try:
        code, checks = _doctor(_healthy(tmp_path, server))
    finally:
        server.stop()
    assert code == 0, [c for c in checks if not c["ok"]]
    assert all(c["ok"] for c in checks)


def test_cc_connect_checks_each_fail_alone_and_fix_starts_a_bridge_an_interrupted_swap_left_stopped(tmp_path):
    """The bridge as cc-connect really is: its auto-compress and reset-on-idle settings, a bound session it
    would not find, and a tunnel killed between stopping and starting it."""
    from tests.support.servers import cc_connect_file
    from tests.test_cc_connect import session_in

    work = "/home/user/companion"
    path = session_in(tmp_path / ".claude", work)
    cc_connect_file(tmp_path, path.stem, work_dir=work)
    config = tmp_path / ".cc-connect" / "config.toml"
    toml = ('[[projects]]\nname = "companion"\n{extra}[projects.agent]\ntype = "claudecode"\n'
            f'[projects.agent.options]\nwork_dir = "{work}"\n')
    config.write_text(toml.format(extra=""), encoding="utf-8")
    running = tmp_path / "bridge.running"
    env = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}", OMBRE_BRIDGE="cc-connect",
                    OMBRE_BRIDGE_STOP=f"rm -f {running}", OMBRE_BRIDGE_START=f"touch {running}")
    env.pop("CLAUDE_CONFIG_DIR", None)

    def by_name(*args: str, **extra: str) -> dict:
        return {c["name"]: c for c in _doctor({**env, **extra}, *args)[1]}

    healthy = by_name()
    assert healthy["bridge"]["ok"] and healthy["cc-connect settings"]["ok"], healthy
    assert "interrupted swap" not in healthy

    config.write_text(toml.format(extra="reset_on_idle_mins = 30\n") + "[projects.auto_compress]\nenabled = true\n")
    wrong = by_name()["cc-connect settings"]
    assert not wrong["ok"] and "auto_compress" in wrong["detail"] and "reset_on_idle_mins = 30" in wrong["detail"]
    assert "reset_on_idle_mins = 0" in wrong["todo"]
    assert by_name(AUTO_FORGE="0")["cc-connect settings"]["detail"].startswith("reset_on_idle_mins")
    config.write_text(toml.format(extra="reset_on_idle_mins = 0\n") + "[projects.auto_compress]\nenabled = false\n")

    elsewhere = by_name(CLAUDE_CONFIG_DIR=str(tmp_path / "other"))["bridge"]
    assert not elsewhere["ok"], elsewhere  # the session is not under the Claude home ombre is told about

    (tmp_path / "ombre").mkdir(exist_ok=True)
    (tmp_path / "ombre" / "tunnel-journal.json").write_text(json.dumps({"step": "bind", "new_sid": path.stem}))
    stopped = by_name()
    assert not stopped["interrupted swap"]["ok"] and stopped["bridge"]["ok"] and not running.exists()
    fixed = by_name("--fix")["interrupted swap"]
    assert fixed["fixed"].startswith("started the bridge") and running.exists()
    assert "interrupted swap" not in by_name()


def test_the_bridge_check_fails_when_cc_connect_would_not_find_the_bound_session(tmp_path):
    from tests.support.servers import cc_connect_file
    from tests.test_cc_connect import session_in

    work = "/home/user/my+bot"  # Claude Code and cc-connect name this work dir's folder differently
    path = session_in(tmp_path / ".claude", work)
    cc_connect_file(tmp_path, path.stem, work_dir=work)
    env = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}", OMBRE_BRIDGE="cc-connect",
                    OMBRE_BRIDGE_WORK_DIR=work, OMBRE_BRIDGE_STOP="true", OMBRE_BRIDGE_START="true")
    env.pop("CLAUDE_CONFIG_DIR", None)
    bridge = {c["name"]: c for c in _doctor(env)[1]}["bridge"]
    assert not bridge["ok"] and "would not resume" in bridge["detail"] and "start fresh" in bridge["todo"]


def test_the_arbitration_check_shows_open_contradictions_and_fails_when_the_judge_failed(tmp_path):
    env = ombre_env(tmp_path, OMBRE_URL=f"http://127.0.0.1:{free_port()}", OMBRE_VECTORS="0")

    def hold(*args: str, **extra: str) -> None:
        out = subprocess.run(OMBRE + ["hold", *args, "--type", "承诺"], env={**env, **extra}, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr

    hold("每周三晚上八点语音", "--quote", "以后每周三晚上八点都语音吧")
    hold("每周三晚上九点语音", "--quote", "每周三晚上九点语音")
    arbitration = {c["name"]: c for c in _doctor(env)[1]}["arbitration"]
    assert arbitration["ok"] and "open contradiction" in arbitration["detail"], arbitration
    assert not arbitration["detail"].startswith("0 ") and "contradiction" in arbitration["detail"]
    assert "ask the person" in arbitration["todo"]
    hold("每周日早上陪她晨跑", "--quote", "以后每周日早上你陪我晨跑", OMBRE_LLM="openai", OMBRE_LLM_MODEL="m",
         OMBRE_LLM_BASE_URL="http://127.0.0.1:9/v1", OMBRE_LLM_TIMEOUT_MS="500")
    failed = {c["name"]: c for c in _doctor(env)[1]}["arbitration"]
    assert not failed["ok"] and "could not be arbitrated" in failed["detail"] and "OMBRE_LLM" in failed["todo"]


BREAKS = {
    "memory service": lambda home, server, env: server.stop(),
    "hooks and MCP": lambda home, server, env: subprocess.run(OMBRE + ["uninstall", "claude-code"], env=env,
                                                              check=True, capture_output=True),
    "keeper cooldowns": lambda home, server, env: (home / "ombre" / "keeper-state.json").unlink(),
    "keeper runs": lambda home, server, env: (home / "ombre" / "metrics.jsonl").write_text(
        json.dumps({"at": "2026-12-04T00:00:00+00:00", "decision": "fail", "error": "forge failed: disk full"}) + "\n"),
    "distillation": lambda home, server, env: (home / "ombre" / "distill.jsonl").write_text(
        json.dumps({"at": "2026-12-04T00:00:00+00:00", "reason": "model failed: timeout", "fallback": True}) + "\n"),
    "backup": lambda home, server, env: [p.unlink() for p in (home / "ombre" / "backups").rglob("*.db")],
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_check_fails_alone_on_an_otherwise_healthy_set_up(tmp_path, name):
    server = Server(tmp_path)
    try:
        env = _healthy(tmp_path, server)
        BREAKS[name](tmp_path, server, env)
        code, checks = _doctor(env)
    finally:
        server.stop()
    failed = [c["name"] for c in checks if not c["ok"]]
    assert code == 1 and failed == [name], checks
    assert next(c for c in checks if c["name"] == name)["todo"]
