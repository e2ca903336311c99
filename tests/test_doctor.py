"""`ombre doctor` (issue #17 item 1) on a broken set-up (each check says what to do; --fix does the safe ones)
and on a healthy one (a real `ombre serve`, the hooks installed, the keeper seeded, a backup)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.servers import Server, free_port, ombre_env

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


def test_a_healthy_set_up_passes(tmp_path):
    server = Server(tmp_path)
    try:
        env = ombre_env(tmp_path, OMBRE_URL=server.url)
        for args in (["install", "claude-code"], ["keeper", "seed"], ["backup"]):
            out = subprocess.run(OMBRE + args, env=env, capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
        code, checks = _doctor(env)
    finally:
        server.stop()
    assert code == 0, [c for c in checks if not c["ok"]]
    assert all(c["ok"] for c in checks)
