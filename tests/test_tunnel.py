"""The tunnel, the bridges and the keeper on generated sessions.

Bridges are real files of the shapes the bridges write, with stop/start commands that are real shell
commands keeping a "running" flag; the memory side is a real SQLite store (or a broken one).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ombre import jsonl_log
from ombre.app import holder, open_service
from ombre.errors import BridgeError
from ombre.settings import Settings
from ombre.tunnel.bridges import CcConnectBridge, FileBridge
from ombre.tunnel.handoff import prepare
from ombre.tunnel.keeper import Keeper, KeeperState, Reading, decide, status
from ombre.tunnel.tunnel import TunnelOptions, recover, run
from ombre.window.verify import Expectation, verify_session
from tests.conftest import sha256
from tests.support.servers import cc_connect_file, free_port
from tests.support.transcript_gen import SessionBuilder, ascii_text

NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.timezone.utc)
PRIVATE = ["今天好累啊，加班到十点。", "周四下午三点我要去复诊，你记得提醒我。", "我对花生过敏，千万别推荐花生。",
           "其实我有点想你。", "晚上吃了番茄炒蛋。"]


def heavy_session(folder: Path, used: int, *, turns: int = 24, seed: int = 1) -> Path:
    """A chat whose tool output fills the window; the last reply's stored usage is `used` tokens."""
    rng = random.Random(seed)
    b = SessionBuilder(rng)
    b.metadata()
    for t in range(turns):
        b.say(PRIVATE[t % len(PRIVATE)] if t >= turns - len(PRIVATE) else f"帮我看看第{t}份日志")
        if t < turns - len(PRIVATE):
            b.tool_round([("Bash", {"command": "cat log", "description": "log"}, ascii_text(rng, 12_000))],
                         thinking="看看日志。")
        b.reply([{"type": "thinking", "thinking": "想一想。", "signature": "c2ln"},
                 {"type": "text", "text": f"好的，第{t}件事我记下了。"}])
    lines = b.text().splitlines()
    last = json.loads(lines[-1])
    last["message"]["usage"] = {"input_tokens": 3, "cache_creation_input_tokens": 0,
                                "cache_read_input_tokens": used - 123, "output_tokens": 120}
    lines[-1] = json.dumps(last, ensure_ascii=False, separators=(",", ":"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    idle = (NOW - dt.timedelta(minutes=10)).timestamp()
    os.utime(path, (idle, idle))
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    # no CLAUDE_CONFIG_DIR: cc-connect looks for sessions under $HOME/.claude only
    return {"HOME": str(tmp_path),
            "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_URL": f"http://127.0.0.1:{free_port()}"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path / ".claude" / "projects" / "-home-user-companion"


def file_bridge(tmp_path: Path, sid: str) -> FileBridge:
    flag = tmp_path / "bridge.running"
    flag.touch()
    bound = tmp_path / "bound-sid"
    bound.write_text(sid + "\n")
    return FileBridge(bound, f"rm -f {flag}", f"touch {flag}")


def texts(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- the acceptance script ------------------------------------------------------------------
def test_tool_output_at_60_percent_diets_and_the_dialogue_is_still_there(tmp_path, env, project):
    path = heavy_session(project, used=120_000)
    settings = Settings.from_env(env)
    bridge = file_bridge(tmp_path, path.stem)
    entry = Keeper(settings, bridge, holder(settings)).tick(path, now=NOW)
    assert entry["decision"] == "ok" and entry["mode"] == "diet", entry
    new = project / f"{entry['new_sid']}.jsonl"
    assert bridge.bound_sid() == entry["new_sid"] and (tmp_path / "bridge.running").exists()
    for said in PRIVATE + ["帮我看看第0份日志", "好的，第0件事我记下了。"]:
        assert said in texts(new)
    assert entry["pct_after"] < settings.diet_pct
    verify_session(new, Expectation(session_id=entry["new_sid"]))


def test_at_75_percent_forge_runs_holds_the_handoff_and_the_private_context_survives(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    settings = Settings.from_env(env)  # the memory service is not running: hold goes to the store directly
    bridge = file_bridge(tmp_path, path.stem)
    entry = Keeper(settings, bridge, holder(settings)).tick(path, now=NOW)
    assert entry["decision"] == "ok" and entry["mode"] == "forge" and entry["hold"].startswith("ok "), entry
    new = texts(project / f"{entry['new_sid']}.jsonl")
    for said in PRIVATE:
        assert said in new  # the recent private turns are in the new window, word for word
    assert "会话交接" in new and "ombreHandoff" in new

    svc = open_service(settings, arbitrate=False, encoders={})
    handoffs = svc.store.list(type="会话交接")
    svc.close()
    assert len(handoffs) == 1 and handoffs[0].evidence.from_session == path.stem


def test_two_cycles_respect_cooldowns_and_the_daily_cap(tmp_path, env, project):
    settings = Settings.from_env({**env, "AUTO_FORGE_MAX_PER_DAY": "2"})
    first = heavy_session(project, used=150_000, seed=1)
    bridge = file_bridge(tmp_path, first.stem)
    keeper = Keeper(settings, bridge, None)

    def tick(used: int, minutes: float, seed: int) -> dict:
        when = NOW + dt.timedelta(minutes=minutes)
        path = heavy_session(project, used=used, seed=seed)
        os.utime(path, (when.timestamp() - 600, when.timestamp() - 600))
        bridge.path.write_text(path.stem)
        return keeper.tick(path, now=when)

    assert keeper.tick(first, now=NOW)["mode"] == "forge"
    assert tick(60_000, 10, 2)["reason"].startswith("below the diet threshold")
    assert tick(120_000, 20, 3)["mode"] == "diet"  # the second run of the day
    assert tick(60_000, 30, 4)["decision"] == "skip"
    assert tick(150_000, 100, 5)["reason"] == "daily cap reached (2/2)"  # cooldown over, cap not
    assert tick(150_000, 24 * 60, 6)["mode"] == "forge"  # a new Shanghai day
    decisions = [json.loads(x)["decision"] for x in (tmp_path / "ombre" / "metrics.jsonl").read_text().splitlines()]
    assert decisions == ["trigger", "ok", "skip", "trigger", "ok", "skip", "skip", "trigger", "ok"]


def test_forge_waits_out_its_cooldown(env):
    s = Settings.from_env(env)
    state = KeeperState(last_forge=(NOW - dt.timedelta(minutes=10)).isoformat(),
                        last_diet=(NOW - dt.timedelta(minutes=10)).isoformat())
    assert decide(state, _reading(80), s, NOW).reason == "forge cooldown: 80 min left"
    assert decide(state, _reading(80), s, NOW + dt.timedelta(minutes=81)).action == "forge"


def test_with_the_memory_side_broken_the_tunnel_and_bridge_still_work(tmp_path, env, project):
    (tmp_path / "ombre").mkdir()
    (tmp_path / "ombre" / "ombre.db").write_bytes(b"not a database at all")
    path = heavy_session(project, used=150_000)
    settings = Settings.from_env(env)
    bridge = file_bridge(tmp_path, path.stem)
    result = run(settings, path, TunnelOptions(), bridge=bridge, holder=holder(settings))
    assert result.ok and result.hold.startswith("failed") and bridge.bound_sid() == result.new_sid
    assert (tmp_path / "bridge.running").exists()


# -- the state machine ---------------------------------------------------------------------------------
def _reading(pct: float, idle: float = 600) -> Reading:
    return Reading("s", "p", pct, idle)


def test_keeper_skips_when_busy_below_threshold_or_off(env):
    s = Settings.from_env(env)
    state = KeeperState()
    assert decide(state, _reading(40), s, NOW).reason.startswith("below the diet threshold")
    assert decide(state, _reading(60, idle=30), s, NOW).reason.startswith("not idle")
    assert decide(state, _reading(None), s, NOW).action == "skip"
    off = Settings.from_env({**env, "AUTO_FORGE": "0"})
    assert decide(state, _reading(90), off, NOW).reason == "AUTO_FORGE=0"


def test_hysteresis_stops_a_jittering_reading_from_firing_twice(env):
    s = Settings.from_env({**env, "AUTO_FORGE_DIET_COOLDOWN_MINS": "0"})
    state = KeeperState(armed_diet=False, last_diet=NOW.isoformat())
    assert decide(state, _reading(55.2), s, NOW).action == "skip"
    assert decide(state, _reading(53.5), s, NOW).action == "skip" and not state.armed_diet  # inside the band
    assert decide(state, _reading(51.0), s, NOW).action == "skip" and state.armed_diet  # fell below: re-armed
    assert decide(state, _reading(55.1), s, NOW).action == "diet"


def test_the_breaker_opens_after_repeated_failures(tmp_path, env, project):
    settings = Settings.from_env({**env, "AUTO_FORGE_MAX_FAILURES": "2", "AUTO_FORGE_DIET_COOLDOWN_MINS": "0",
                                  "AUTO_FORGE_HYSTERESIS_PCT": "0"})

    def failing(*args, **kwargs):
        raise RuntimeError("disk full")

    path = heavy_session(project, used=120_000)
    keeper = Keeper(settings, file_bridge(tmp_path, path.stem), None, tunnel=failing)
    outcomes = []
    for minutes in (0, 1, 2):
        state = KeeperState.load(settings.keeper_state, NOW)
        state.armed_diet = True
        state.save(settings.keeper_state)
        outcomes.append(keeper.tick(path, now=NOW + dt.timedelta(minutes=minutes)))
    assert [o["decision"] for o in outcomes] == ["fail", "fail", "skip"]
    assert outcomes[1]["breaker"] and outcomes[2]["reason"].startswith("breaker open")


def test_a_session_the_rewrite_refuses_is_skipped_until_it_changes_not_hammered(tmp_path, env, project):
    """Issue #29 item 5: a refusal is remembered for the file's fingerprint; later passes skip it (logged with
    the reason) instead of failing into the breaker; status and doctor name it; a changed file is tried again."""
    from ombre.doctor import run as doctor

    settings = Settings.from_env({**env, "AUTO_FORGE_MAX_FAILURES": "2", "AUTO_FORGE_DIET_COOLDOWN_MINS": "0",
                                  "AUTO_FORGE_HYSTERESIS_PCT": "0"})
    path = heavy_session(project, used=120_000)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines.insert(len(lines) - 3, '{"parentUuid": "x", "broken')  # a line no rewrite may carry, in the kept tail
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    idle = (NOW - dt.timedelta(minutes=10)).timestamp()
    os.utime(path, (idle, idle))
    keeper = Keeper(settings, file_bridge(tmp_path, path.stem), None)
    outcomes = []
    for minutes in range(4):
        state = KeeperState.load(settings.keeper_state, NOW)
        state.armed_diet = True
        state.save(settings.keeper_state)
        outcomes.append(keeper.tick(path, now=NOW + dt.timedelta(minutes=minutes)))
    assert [o["decision"] for o in outcomes] == ["fail", "skip", "skip", "skip"]
    assert outcomes[0]["refused"] and "malformed line" in outcomes[0]["error"]
    assert all("refused for this file" in o["reason"] and "malformed line" in o["reason"] for o in outcomes[1:])
    state = KeeperState.load(settings.keeper_state, NOW)
    assert not state.breaker and state.failures == 0
    report = status(settings, path, None, now=NOW)
    assert [r["session"] for r in report["refused"]] == [path.stem] and "malformed" in report["refused"][0]["reason"]
    check = next(c for c in doctor(settings) if c.name == "keeper refusals")
    assert not check.ok and path.stem in check.detail and "malformed" in check.detail
    with path.open("a", encoding="utf-8") as f:  # the chat goes on: the file changes and is tried again
        f.write(lines[-1] + "\n")
    os.utime(path, (idle + 1, idle + 1))
    state = KeeperState.load(settings.keeper_state, NOW)
    state.armed_diet = True
    state.save(settings.keeper_state)
    again = keeper.tick(path, now=NOW + dt.timedelta(minutes=9))
    assert again["decision"] == "fail" and again["refused"]  # tried, since the file is not the one refused
    assert next(c for c in doctor(settings) if c.name == "keeper refusals").ok is False


def test_a_truncated_state_file_restarts_the_cooldowns_instead_of_firing(tmp_path, env, project):
    settings = Settings.from_env(env)
    settings.keeper_state.parent.mkdir(parents=True)
    settings.keeper_state.write_text('{"last_diet": "2026-12-0')
    path = heavy_session(project, used=150_000)
    entry = Keeper(settings, file_bridge(tmp_path, path.stem), None).tick(path, now=NOW)
    assert entry["decision"] == "skip" and "cooldown" in entry["reason"]
    unbridged = Keeper(settings, None, None).tick(path, now=NOW + dt.timedelta(days=1))
    assert unbridged["reason"].startswith("no bridge to re-bind")
    assert settings.keeper_state.with_name("keeper-state.json.unreadable").exists()


# -- bridges -------------------------------------------------------------------------------------------
def test_cc_connect_binding_keeps_the_old_id_and_refuses_a_missing_file(tmp_path, project):
    path = heavy_session(project, used=100_000)
    f = cc_connect_file(tmp_path, path.stem)
    bridge = CcConnectBridge(f, "true", "true", home=tmp_path)
    assert bridge.bound_sid() == path.stem
    with pytest.raises(BridgeError, match="start a fresh session"):
        bridge.bind("00000000-0000-4000-8000-000000000000", project)
    assert bridge.bound_sid() == path.stem
    other = heavy_session(project, used=100_000, seed=9)
    bridge.bind(other.stem, project)
    data = json.loads(f.read_text())["sessions"]["s1"]
    assert data["agent_session_id"] == other.stem and data["past_agent_session_ids"] == [path.stem]
    assert data["history"] == [] and data["name"] == "default"  # everything else as cc-connect wrote it


def test_a_corrupt_bridge_file_stops_the_tunnel_before_anything_is_written(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    f = cc_connect_file(tmp_path, path.stem)
    f.write_text('{"sessions": {"s1": ')
    before = sorted(p.name for p in project.iterdir())
    with pytest.raises(BridgeError, match="cannot read the bridge"):
        run(Settings.from_env(env), path, TunnelOptions(), bridge=CcConnectBridge(f, "true", "true", home=tmp_path), holder=None)
    assert sorted(p.name for p in project.iterdir()) == before and f.read_text() == '{"sessions": {"s1": '


def test_a_failed_bind_leaves_the_old_session_bound_and_running_and_rebind_finishes(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    settings = Settings.from_env(env)
    flag = tmp_path / "running"
    good = CcConnectBridge(cc_connect_file(tmp_path, path.stem), f"rm -f {flag}", f"touch {flag}", home=tmp_path)
    result = run(settings, path, TunnelOptions(hold=False), bridge=_FailingBind(good), holder=None)
    assert not result.ok and "ombre rebind" in result.rebind and result.started and flag.exists()
    assert good.bound_sid() == path.stem
    out = subprocess.run([sys.executable, "-m", "ombre.cli", "rebind", result.new_sid, "--json"], capture_output=True,
                         text=True, env={**os.environ, **env, "OMBRE_BRIDGE": "cc-connect",
                                         "OMBRE_BRIDGE_FILE": str(good.session_file),
                                         "OMBRE_BRIDGE_STOP": good.stop_command, "OMBRE_BRIDGE_START": good.start_command})
    assert out.returncode == 0, out.stderr
    assert good.bound_sid() == result.new_sid and flag.exists()


class _FailingBind:
    """A bridge whose edit fails (a full disk, a read-only file), delegating everything else."""

    def __init__(self, inner: CcConnectBridge) -> None:
        self.inner, self.name = inner, "cc-connect"

    def bound_sid(self):
        return self.inner.bound_sid()

    def target(self, sid, project_dir):
        return self.inner.target(sid, project_dir)

    def stop(self):
        self.inner.stop()

    def start(self):
        self.inner.start()

    def bind(self, sid, project_dir):
        raise BridgeError("cannot write the session file: read-only file system")


# -- fault injection: the tunnel killed at each step -------------------------------------------------------
KILLER = """
import os, sys
from pathlib import Path
from ombre.settings import Settings
from ombre.tunnel.bridges import CcConnectBridge
from ombre.app import holder
from ombre.tunnel.tunnel import TunnelOptions, run
step_to_die, path, cc, flag = sys.argv[1:5]
settings = Settings.from_env()
bridge = CcConnectBridge(Path(cc), f"rm -f {flag}", f"touch {flag}")
def on_step(step):
    if step == step_to_die:
        os._exit(137)  # like SIGKILL: no finally, no cleanup
run(settings, Path(path), TunnelOptions(), bridge=bridge, holder=holder(settings), on_step=on_step)
"""


@pytest.mark.parametrize("step", ["backup", "handoff", "hold", "forge", "stop", "bind", "start"])
def test_a_tunnel_killed_at_any_step_never_leaves_a_bad_binding(tmp_path, env, project, step):
    path = heavy_session(project, used=150_000)
    original = sha256(path)
    cc = cc_connect_file(tmp_path, path.stem)
    flag = tmp_path / "running"
    flag.touch()
    proc = subprocess.run([sys.executable, "-c", KILLER, step, str(path), str(cc), str(flag)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 137, proc.stderr
    bridge = CcConnectBridge(cc, f"rm -f {flag}", f"touch {flag}", home=tmp_path)
    bound = bridge.bound_sid()
    assert sha256(path) == original  # the old session is always intact and resumable
    if bound != path.stem:
        assert step == "start"  # only once the edit is done does the binding move
        verify_session(project / f"{bound}.jsonl", Expectation(session_id=bound))
    assert (project / f"{bound}.jsonl").is_file()
    recover(Settings.from_env(env), bridge)  # what the next tunnel, rebind or keeper pass does first
    assert flag.exists()  # a bridge left stopped is started again


# -- handoff -----------------------------------------------------------------------------------------------
def test_handoff_pack_quotes_only_what_was_said(project):
    path = heavy_session(project, used=100_000)
    pack = prepare(path)
    text = pack.render()
    assert "「今天好累啊，加班到十点。」" in text and "「我对花生过敏，千万别推荐花生。」" in text
    assert "「周四下午三点我要去复诊，你记得提醒我。」" in text
    for row in pack.state + pack.red_lines + pack.quotes:
        assert row.text.rstrip("…") in texts(path)
    assert prepare(path).render().splitlines()[2:] == text.splitlines()[2:]  # same input, same pack


def test_a_change_to_a_promise_rides_in_the_handoff_beside_it(project):
    """The next window must not keep the old time: the change said after a request is an open item too."""
    b = SessionBuilder(random.Random(7))
    b.metadata()
    for said, answer in (("每天早上七点提醒我喝一杯温水", "好的，每天七点提醒你。"),
                         ("嗯 改成七点半吧 七点我还没醒", "好，改成七点半。")):
        b.say(said)
        b.reply([{"type": "text", "text": answer}])
    project.mkdir(parents=True, exist_ok=True)
    path = project / f"{b.sid}.jsonl"
    path.write_text(b.text())
    items = [row.text for row in prepare(path).open_items]
    assert items[0] == "每天早上七点提醒我喝一杯温水" and "嗯 改成七点半吧 七点我还没醒" in items[1:]


# -- the command line ----------------------------------------------------------------------------------------
def ombre(args: list[str], env: dict[str, str], **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ombre.cli", *args], env={**os.environ, **env, **extra},
                          capture_output=True, text=True, timeout=120)


def test_tunnel_dry_run_shows_the_plan_and_writes_nothing(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    bound = tmp_path / "bound-sid"
    bound.write_text(path.stem)
    before = sorted(p.name for p in project.iterdir())
    out = ombre(["tunnel", str(path), "--dry-run", "--json"], env, OMBRE_BRIDGE="file", OMBRE_BRIDGE_FILE=str(bound))
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["bound_sid"] == path.stem and plan["new_sid"] and plan["rebind"] == "dry run"
    assert "会话交接" in plan["handoff_preview"] and plan["hold"].startswith("would hold")
    assert plan["forge"]["events_kept"] > 0
    assert sorted(p.name for p in project.iterdir()) == before and bound.read_text() == path.stem
    assert not (tmp_path / "ombre" / "backups").exists() and not (tmp_path / "ombre" / "ombre.db").exists()


def test_bridge_and_keeper_status_say_when_the_bridge_lags(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    bound = tmp_path / "bound-sid"
    bound.write_text(path.stem)
    bridge_env = {"OMBRE_BRIDGE": "file", "OMBRE_BRIDGE_FILE": str(bound)}
    forged = ombre(["forge", str(path), "--json"], env)  # forged by hand, never re-bound
    new_sid = json.loads(forged.stdout)["new_session"]
    status = json.loads(ombre(["bridge", "status", "--json"], env, **bridge_env).stdout)
    assert status == {"bridge": "file", "bound_sid": path.stem, "newest_sid": new_sid, "differ": True}
    keeper = ombre(["keeper", "status"], env, **bridge_env)
    assert keeper.returncode == 0 and "DIFFER" in keeper.stdout and "75.0%" in keeper.stdout
    assert ombre(["rebind", new_sid], env, **bridge_env).returncode == 0
    assert json.loads(ombre(["bridge", "status", "--json"], env, **bridge_env).stdout)["differ"] is False


def test_keeper_run_once_writes_a_metrics_line(tmp_path, env, project):
    heavy_session(project, used=60_000)
    out = ombre(["keeper", "run", "--once", str(project)], env)
    assert out.returncode == 0 and json.loads(out.stdout)["decision"] == "skip"
    assert json.loads((tmp_path / "ombre" / "metrics.jsonl").read_text())["reason"].startswith("below")


def test_bad_bridge_settings_and_a_missing_project_folder_are_clear_errors(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    out = ombre(["tunnel", str(path)], env, OMBRE_BRIDGE="cc-connect")
    assert out.returncode == 2 and "OMBRE_BRIDGE_FILE" in out.stderr
    out = ombre(["tunnel", str(path)], env, OMBRE_BRIDGE="telegram-magic")
    assert out.returncode == 2 and "not a bridge ombre knows" in out.stderr
    bridge = FileBridge(tmp_path / "bound")
    with pytest.raises(BridgeError, match="does not exist"):
        bridge.bind(path.stem, tmp_path / "no-such-project")
    assert bridge.bound_sid() is None


def test_the_nudge_is_sent_quietly_and_forge_ombre_hold_0_skips_the_hold(tmp_path, env, project):
    path = heavy_session(project, used=150_000)
    said = tmp_path / "nudge.txt"
    settings = Settings.from_env({**env, "FORGE_OMBRE_HOLD": "0", "OMBRE_BRIDGE_NUDGE": f"printf %s {{text}} > {said}"})
    result = run(settings, path, TunnelOptions(), bridge=file_bridge(tmp_path, path.stem),
                 holder=holder(settings))
    assert result.ok and result.hold == "off" and result.nudge == "sent"
    assert "breath(is_session_start=True)" in said.read_text() and "不要提换窗口" in said.read_text()
    assert not (tmp_path / "ombre" / "ombre.db").exists()  # nothing was held
    log = [json.loads(x) for x in (tmp_path / "ombre" / "history.jsonl").read_text().splitlines()]
    assert log[-1]["mode"] == "tunnel-forge" and log[-1]["old_sid"] == path.stem and log[-1]["new_sid"] == result.new_sid
    assert log[-1]["hold"] == "off" and log[-1]["rebind"] == "ok" and log[-1]["retain"] == 60_000


def test_backups_and_logs_do_not_grow_without_end(tmp_path, env, project):
    settings = Settings.from_env({**env, "OMBRE_BACKUPS_KEEP": "2"})
    sessions = [heavy_session(project, used=150_000, seed=s) for s in (11, 12, 13)]
    for path in sessions:
        run(settings, path, TunnelOptions(hold=False, nudge=False), bridge=file_bridge(tmp_path, path.stem), holder=None)
    kept = sorted(p.name.split(".")[0] for p in settings.backups_dir.iterdir())
    assert kept == sorted(p.stem for p in sessions[1:])  # the two newest runs' backups
    log = tmp_path / "log.jsonl"
    for n in range(200):
        jsonl_log.append(log, {"n": n, "pad": "x" * 100}, max_bytes=5_000)
    assert log.stat().st_size <= 5_200 and log.with_name("log.jsonl.1").exists()
    assert json.loads(log.read_text().splitlines()[-1])["n"] == 199


def test_keeper_seed_then_a_pass_over_the_forge_line_must_skip(tmp_path, env, project):
    """Issue #17 item 2: after `ombre keeper seed`, a session past the forge threshold is left
    alone until the cooldowns pass — the keeper cannot fire right after a deploy."""
    path = heavy_session(project, used=150_000)
    out = ombre(["keeper", "seed", "--json"], env)
    assert out.returncode == 0, out.stderr
    seeded = json.loads(out.stdout)
    state = json.loads((tmp_path / "ombre" / "keeper-state.json").read_text())
    # the seed starts the cooldowns but is not a run: status shows no diet or forge, and the seed apart
    assert state["seeded"] == seeded["seeded"] and state.get("last_forge") is None and state.get("last_diet") is None
    status = json.loads(ombre(["keeper", "status", "--json"], env).stdout)
    assert status["last_forge"] is None and status["seeded"] == seeded["seeded"]
    assert status["forge_cooldown_left_min"] > 0 and status["diet_cooldown_left_min"] > 0
    now = dt.datetime.fromisoformat(seeded["seeded"]) + dt.timedelta(minutes=5)
    entry = Keeper(Settings.from_env(env), file_bridge(tmp_path, path.stem), None).tick(path, now=now)
    assert entry["decision"] == "skip" and "cooldown" in entry["reason"], entry
    assert sorted(p.name for p in project.glob("*.jsonl")) == [path.name]  # nothing was forged


# -- the /new path ----------------------------------------------------------------------
def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ombre.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def _nudge_env(env: dict, tmp_path: Path) -> tuple[dict, Path]:
    sent = tmp_path / "nudges.txt"
    return {**env, "OMBRE_BRIDGE_NUDGE": f"printf '%s\\n' {{text}} >> {sent}"}, sent


def test_slash_new_flag_sends_the_continuation_once_when_the_session_changes(tmp_path, env, project):
    env, sent = _nudge_env(env, tmp_path)
    old = heavy_session(project, used=60_000)
    work = tmp_path / "work"
    work.mkdir()
    out = _cli(env, "handoff", "prepare", str(old), "--write", "--to", str(work))
    assert out.returncode == 0, out.stderr
    handoff = (work / "SESSION_HANDOFF.md").read_text(encoding="utf-8")
    assert handoff.startswith("【会话交接") and "「周四下午三点我要去复诊，你记得提醒我。」" in handoff
    settings = Settings.from_env(env)
    keeper = Keeper(settings, None, None)
    keeper.tick(old, now=NOW)  # still on the old session: waiting
    assert not sent.exists() and (settings.ombre_home / "waiting-for-new.json").exists()
    new = heavy_session(project, used=20_000, turns=6, seed=5)  # what /new started
    keeper.tick(new, now=NOW)
    assert sent.read_text(encoding="utf-8").count("SESSION_HANDOFF.md") == 1
    notes = [e for e in jsonl_log.read(settings.metrics_log, limit=50) if "after /new" in e.get("reason", "")]
    assert len(notes) == 1 and notes[0]["reason"].endswith("nudge sent")
    keeper.tick(new, now=NOW + dt.timedelta(minutes=1))
    keeper.tick(heavy_session(project, used=20_000, turns=6, seed=6), now=NOW + dt.timedelta(minutes=2))
    assert sent.read_text(encoding="utf-8").count("SESSION_HANDOFF.md") == 1  # once, never again


@pytest.mark.parametrize("swap", ["forge", "diet", "tunnel"])
def test_a_swap_clears_the_slash_new_flag_so_only_one_continuation_fires(tmp_path, env, project, swap):
    env, sent = _nudge_env(env, tmp_path)
    old = heavy_session(project, used=150_000)
    assert _cli(env, "handoff", "prepare", str(old), "--write", "--to", str(tmp_path)).returncode == 0
    settings = Settings.from_env(env)
    args = {"forge": ["forge", str(old), "--json"], "diet": ["diet", str(old), "--json"],
            "tunnel": ["tunnel", str(old), "--no-hold", "--json"]}[swap]
    out = _cli(env, *args)
    assert out.returncode == 0, out.stderr
    assert not (settings.ombre_home / "waiting-for-new.json").exists()
    new_sid = json.loads(out.stdout)["new_session" if swap != "tunnel" else "new_sid"]
    Keeper(settings, None, None).tick(project / f"{new_sid}.jsonl", now=NOW)
    assert not sent.exists()  # no /new nudge (and with no bridge the tunnel sends none of its own)
    assert any(e.get("mode") == "new-flag-cleared" for e in jsonl_log.read(settings.history_log, limit=50))


def test_a_session_ombre_wrote_is_not_taken_for_slash_new(tmp_path, env, project):
    env, sent = _nudge_env(env, tmp_path)
    old = heavy_session(project, used=150_000)
    settings = Settings.from_env(env)
    from ombre.tunnel import new_window

    new_window.write(settings, old.stem, "交接", tmp_path)
    result = run_forge_quietly(old)
    jsonl_log.append(settings.history_log, {"mode": "forge", "ok": True, "new_sid": result})
    Keeper(settings, None, None).tick(project / f"{result}.jsonl", now=NOW)
    assert not sent.exists() and new_window.waiting(settings) is None


def run_forge_quietly(path: Path) -> str:
    """A forge by some other route that did not clear the flag (an older ombre, a script)."""
    from ombre.window.forge import ForgeOptions
    from ombre.window.forge import run as forge
    from ombre.window.select import Selector

    return forge(path, ForgeOptions(selector=Selector(retain=20_000))).new_session
