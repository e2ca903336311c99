"""No tracebacks: every command, run the way a person might get it wrong — a bad value in a
setting, an OMBRE_HOME that cannot be a folder, an export path that cannot be written — answers with the
one-line message and hint, never a Python traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

# each command with arguments that get it past click's own checks
COMMANDS = [["anchors"], ["diet", "--dry-run"], ["forge", "--dry-run"], ["usage"], ["config"], ["hold", "她喜欢猫"],
            ["breath", "猫"], ["backup"], ["restore", "/nonexistent.db"], ["memories", "list"],
            ["memories", "show", "abc"], ["memories", "trace", "abc"], ["memories", "pin", "abc"],
            ["memories", "archive", "abc"], ["memories", "export", "/proc/ombre-cannot-write.jsonl"],
            ["memories", "import", "/nonexistent.jsonl"], ["handoff", "prepare"], ["tunnel"], ["rebind", "abc"],
            ["bridge", "status"], ["keeper", "status"], ["keeper", "seed"], ["keeper", "reset"], ["keeper", "run", "--once"],
            ["distill", "status"], ["distill"], ["install", "claude-code", "--dry-run"],
            ["handoff", "prepare", "--write"], ["doctor"], ["stats"], ["namespace", "list"],
            ["namespace", "add", "bad name"], ["memories", "migrate", "--to", "postgresql://x:y@127.0.0.1:9/none"],
            ["memories", "edit", "abc", "--importance", "3"], ["memories", "forget", "abc", "--yes"]]
BAD = {
    "good settings, wrong arguments": {},
    "a setting that is not a number": {"AUTO_FORGE_PCT": "seventy"},
    "an unknown encoder": {"OMBRE_ENCODERS": "bert"},
    "an unknown model backend": {"OMBRE_LLM": "gpt-magic"},
    "an OMBRE_HOME under a file": {"OMBRE_HOME": "/dev/null/ombre"},
    "a cc-connect config that is not TOML": {"OMBRE_BRIDGE": "cc-connect", "OMBRE_CC_CONNECT_CONFIG": "/etc/passwd",
                                             "OMBRE_BRIDGE_STOP": "true", "OMBRE_BRIDGE_START": "true"},
    "a database address that is not PostgreSQL": {"OMBRE_DB": "mysql://localhost/x"},
    "a PostgreSQL that does not answer": {"OMBRE_DB": "postgresql://x:y@127.0.0.1:9/none"},
    "a namespace name with a space": {"OMBRE_NAMESPACE": "two words"},
    "cc-connect with no way to find its file": {"OMBRE_BRIDGE": "cc-connect", "OMBRE_BRIDGE_STOP": "true",
                                                "OMBRE_BRIDGE_START": "true"},
}


@pytest.mark.parametrize("what", list(BAD))
def test_every_command_under_a_bad_setting_answers_without_a_traceback(tmp_path, what):
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "OMBRE_URL": "http://127.0.0.1:9", **BAD[what]}
    crashed = []
    for args in COMMANDS:
        out = subprocess.run([sys.executable, "-m", "ombre.cli", *args], env=env, capture_output=True, text=True,
                             timeout=120, cwd=tmp_path)
        if "Traceback" in out.stderr or "Traceback" in out.stdout:
            crashed.append(f"ombre {' '.join(args)}: {out.stderr.strip().splitlines()[-1]}")
    assert crashed == [], "\n".join(crashed)


def test_serve_on_a_busy_port_says_so(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0"}
        out = subprocess.run([sys.executable, "-m", "ombre.cli", "serve", "--port", str(port)], env=env,
                             capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert "in use" in out.stderr and str(port) in out.stderr
