"""The `ombre` command is a thin adapter: options in, library result out (text or --json), clear errors."""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from click.testing import CliRunner

from ombre.cli import main
from tests.conftest import sha256
from tests.support.transcript_gen import companion_session


def _session(claude_home: Path, turns: int = 6) -> Path:
    b = companion_session(random.Random(21), turns=turns, image_every=3, payload_chars=4_000, days=2)
    folder = claude_home / "projects" / "-home-user-companion"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{b.sid}.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    old = time.time() - 3600
    os.utime(path, (old, old))
    return path


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_anchors_json_and_text(claude_home):
    path = _session(claude_home)
    out = _run("anchors", path.stem[:8], "--limit", "3", "--json")
    assert out.exit_code == 0
    data = json.loads(out.output)
    assert data["session"] == path.stem and len(data["anchors"]) == 3
    text = _run("anchors", path.stem, "--limit", "3").output
    assert all(f"idx {a['idx']:>5}  {a['short_uuid']}" in text for a in data["anchors"])


def test_forge_dry_run_report_names_what_the_seed_asks_for(claude_home):
    path = _session(claude_home)
    a = json.loads(_run("anchors", path.stem, "--json").output)["anchors"]
    out = _run("forge", path.stem, "--dry-run", "--keep-from-uuid", a[1]["short_uuid"], "--keep-to-idx",
               str(a[3]["idx"]), "--squash", "1000")
    assert out.exit_code == 0, out.output
    for needle in ("dry run: nothing written", str(path), "events", "tokens", "thinking", "pair(s) kept",
                   "squashed", "new sid", "(preview)", f"→ idx {a[1]['idx']}", "from", "to"):
        assert needle in out.output, needle
    assert len(list(path.parent.iterdir())) == 1


def test_forge_json_result_feeds_later_commands(claude_home):
    path = _session(claude_home)
    digest = sha256(path)
    out = _run("forge", path.stem, "--retain", "3000", "--json")
    data = json.loads(out.output)
    assert out.exit_code == 0 and Path(data["new_path"]).exists() and data["source_session"] == path.stem
    assert sha256(path) == digest
    again = json.loads(_run("usage", data["new_session"], "--json").output)
    assert again["session"] == data["new_session"]
    log = Path(os.environ["OMBRE_HOME"]) / "history.jsonl"
    assert json.loads(log.read_text().splitlines()[-1])["new_sid"] == data["new_session"]


def test_diet_uses_settings_from_the_environment(claude_home, monkeypatch):
    path = _session(claude_home)
    monkeypatch.setenv("AUTO_FORGE_DIET_SQUASH", "700")
    data = json.loads(_run("diet", path.stem, "--dry-run", "--json").output)
    assert data["mode"] == "diet" and data["payloads_squashed"] > 0 and data["images_squashed"] == 2


def test_forge_inject_file(claude_home, tmp_path):
    path = _session(claude_home)
    handoff = tmp_path / "SESSION_HANDOFF.md"
    handoff.write_text("正在谈：周末。\n", encoding="utf-8")
    data = json.loads(_run("forge", path.stem, "--retain", "1", "--inject", str(handoff), "--json").output)
    first = json.loads(Path(data["new_path"]).read_text(encoding="utf-8").splitlines()[0])
    assert data["injected"] and "正在谈：周末" in first["message"]["content"]


def _fails(args: list[str], needle: str, files_before: int, folder: Path) -> None:
    out = CliRunner().invoke(main, args)
    assert out.exit_code != 0, out.output
    assert needle in out.output, out.output
    assert len(list(folder.iterdir())) == files_before


def test_bad_input_is_a_clear_error_and_writes_nothing(claude_home, tmp_path):
    path = _session(claude_home)
    n = len(list(path.parent.iterdir()))
    sid = path.stem
    _fails(["forge", sid, "--retain", "100", "--keep-days", "2026-08-03"], "cannot be combined", n, path.parent)
    _fails(["forge", sid, "--keep-days", "2026-08-03", "--keep-from-idx", "0"], "cannot be combined", n,
           path.parent)
    _fails(["forge", sid, "--keep-from-idx", "0", "--keep-from-ts", "2026-08-03"], "same end twice", n, path.parent)
    _fails(["forge", sid, "--keep-from-ts", "next tuesday"], "cannot read the time", n, path.parent)
    _fails(["forge", sid, "--keep-from-ts", "2026-08-09", "--keep-to-ts", "2026-08-01"], "backwards", n,
           path.parent)
    _fails(["forge", "ffffffff"], "no session whose id starts with", n, path.parent)
    _fails(["forge", sid, "--inject", str(tmp_path / "missing.md")], "cannot read the handoff file", n, path.parent)
    _fails(["anchors", "not a session"], "not a session id", n, path.parent)
    out = CliRunner().invoke(main, ["forge", "ffffffff", "--json"])
    assert json.loads(out.output.split("\nerror:")[0])["error"] == "SessionError"


def test_config_shows_effective_settings(monkeypatch):
    monkeypatch.setenv("AUTO_FORGE_RETAIN", "42000")
    data = json.loads(_run("config", "--json").output)
    assert data["forge_retain"] == 42000 and data["diet_squash"] == 2000


def test_demo_runs_on_the_bundled_sample_without_a_claude_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    out = _run("demo")
    assert out.exit_code == 0
    assert "diet: written" in out.output and "forge: written" in out.output
    assert "originals byte-identical after both runs: yes" in out.output
    assert "arbitration: overwrite" in out.output and "【ombre · 本轮记忆" in out.output
    # the memory half runs on the bundled Chinese companion chat: a promise agreed across turns is distilled,
    # a passing state is not, and the handoff reads the topic the chat ended on
    distilled = out.output.split("== distill", 1)[1].split("==", 1)[0].split("\n", 1)[1]  # the kept lines
    assert "[约定]" in distilled and "每周三晚上" in distilled and "芒果过敏" in distilled
    assert "好累" not in distilled
    pack = out.output.split("【会话交接 · ombre handoff】", 1)[1]
    topic = pack.split("当前话题：", 1)[1].split("（", 1)[0]
    assert set(topic.split("、")) == {"妈妈", "礼物"} and "xterm" not in pack
    assert "<command-name>" not in pack  # a slash command's echo is not something the person said
    assert not (tmp_path / ".claude").exists() and not (tmp_path / ".ombre").exists()


def test_install_service_writes_two_units_and_uninstall_takes_back_exactly_those(tmp_path):
    """Issue #17 item 3: systemd user units for serve and the keeper, restart on failure, no secrets inside;
    a unit of the same name written by someone else is refused and left alone."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_TOKEN": "secret-token", "AUTO_FORGE_PCT": "72"}
    ombre = [str(Path(sys.executable).parent / "ombre")]
    run = lambda *a: subprocess.run(ombre + list(a), env=env, capture_output=True, text=True, timeout=60)  # noqa: E731
    units = tmp_path / "cfg" / "systemd" / "user"
    dry = run("install", "service", "--dry-run")
    assert dry.returncode == 0 and "ExecStart=" in dry.stdout and not units.exists()
    out = run("install", "service")
    assert out.returncode == 0 and "systemctl --user enable --now ombre-serve.service" in out.stdout, out.stderr
    serve, keeper = (units / "ombre-serve.service").read_text(), (units / "ombre-keeper.service").read_text()
    assert f"ExecStart={ombre[0]} serve" in serve and f"ExecStart={ombre[0]} keeper run" in keeper
    assert "Restart=on-failure" in serve and f'Environment="OMBRE_HOME={tmp_path / "ombre"}"' in keeper
    # settings go to the file the service, the CLI and the hooks all read: they cannot disagree
    shared = tmp_path / "ombre" / "service.env"
    assert f"EnvironmentFile=-{shared}" in serve and "AUTO_FORGE_PCT=72" in shared.read_text()
    assert shared.stat().st_mode & 0o777 == 0o600
    assert "secret-token" not in serve + keeper + shared.read_text() and "AUTO_FORGE_PCT" not in serve
    config = subprocess.run(ombre + ["config", "--json"], capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in env.items() if k != "AUTO_FORGE_PCT"})
    assert json.loads(config.stdout)["forge_pct"] == 72  # the CLI, without it in its environment, agrees
    assert "nothing to change" in run("install", "service").stdout
    (units / "notes.txt").write_text("mine")
    gone = run("uninstall", "service")
    assert gone.returncode == 0 and sorted(p.name for p in units.iterdir()) == ["notes.txt"]
    (units / "ombre-serve.service").write_text("[Service]\nExecStart=/usr/bin/true\n")  # someone else's
    refused = run("install", "service")
    assert refused.returncode != 0 and "was not written by ombre" in refused.stderr
    assert "nothing to change" in run("uninstall", "service").stdout
    assert (units / "ombre-serve.service").read_text().startswith("[Service]")
