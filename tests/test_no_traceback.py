"""No tracebacks: every command, run the way a person might get it wrong — a bad value in a
setting, an OMBRE_HOME that cannot be a folder, an export path that cannot be written — answers with the
one-line message and hint, never a Python traceback."""
from __future__ import annotations

import json
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


# Every command of one case in one process (a process start imports the CLI afresh, ~0.5 s each, 35 commands
# for each of ten cases); each still runs through click's whole path, the one the `ombre` executable takes.
# What escapes `main` is what a person would see as a traceback, so the driver prints one for it.
DRIVER = """
import contextlib, io, json, sys, traceback
from ombre.cli import main
crashed = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main.main(args=args, prog_name="ombre", standalone_mode=True)
        except SystemExit:
            pass
        except BaseException:
            err.write(traceback.format_exc())
    said = out.getvalue() + err.getvalue()
    if "Traceback" in said:
        crashed.append("ombre " + " ".join(args) + ": " + said.strip().splitlines()[-1])
print(json.dumps(crashed))
"""


@pytest.mark.parametrize("what", list(BAD))
def test_every_command_under_a_bad_setting_answers_without_a_traceback(tmp_path, what):
    env = {**os.environ, "HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "ombre"), "OMBRE_VECTORS": "0",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "OMBRE_URL": "http://127.0.0.1:9", **BAD[what]}
    out = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(COMMANDS)], env=env, capture_output=True,
                         text=True, timeout=600, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    crashed = json.loads(out.stdout.strip().splitlines()[-1])
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
