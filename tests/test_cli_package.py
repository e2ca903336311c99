"""The CLI as a package: a subsystem's module loads only when one of its commands runs, the help list says
what each command's own help says, and an error is mapped the same way by every command."""
from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner

from ombre.cli import COMMANDS, main


def test_the_help_list_is_each_commands_own_first_line():
    ctx = click.Context(main)
    assert sorted(COMMANDS) == main.list_commands(ctx)
    for name, (_, summary) in COMMANDS.items():
        assert main.get_command(ctx, name).get_short_help_str(limit=10**6) == summary, name


def test_ombre_help_loads_no_subsystem():
    code = ("import sys; from ombre.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ombre.cli.', 'ombre.app', 'numpy', 'fastapi'))"
            " and m not in ('ombre.cli.base',)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))
    assert loaded == [], loaded
    assert "hold" in out.stdout and "Remember one thing" in out.stdout


def test_every_command_maps_an_error_to_message_json_and_code(tmp_path):
    env = {"HOME": str(tmp_path), "OMBRE_HOME": str(tmp_path / "o")}
    runner = CliRunner()
    for args in (["forge", str(tmp_path / "missing.jsonl"), "--json"], ["memories", "show", "nope", "--json"],
                 ["hold", "x", "--importance", "99", "--json"]):
        r = runner.invoke(main, args, env=env)
        assert r.exit_code != 0 and "Traceback" not in r.output, (args, r.output)
    r = runner.invoke(main, ["forge", str(tmp_path / "missing.jsonl"), "--json"], env=env)
    error = json.loads(r.stdout)  # the JSON on stdout, the message and hint on stderr
    assert error["error"] and error["message"] in r.stderr and r.exit_code in (1, 2)
