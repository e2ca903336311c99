"""The README and the docs cannot drift: the set-up commands are what CI runs, every option they show exists,
the command reference is the CLI's own help, and the figures are the benches' output."""
from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from ombre.cli import main

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
GUIDE = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
BENCHMARKS = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", setup, flags=re.S)
    assert len(commands) == 2
    assert "ombre demo" in commands[0] and "pip install" in commands[0]
    assert commands[1].strip() == "bash scripts/test"
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text()


def test_the_readme_stays_short_and_links_what_moved_out():
    assert len(README.splitlines()) <= 200
    for doc in ("docs/guide.md", "docs/cli.md", "docs/architecture.md", "docs/benchmarks.md"):
        assert f"]({doc})" in README and (REPO / doc).exists()


def test_the_command_reference_is_the_clis_own_help():
    import subprocess
    import sys

    check = subprocess.run([sys.executable, str(REPO / "scripts" / "cli_docs.py"), "--check"], cwd=REPO)
    assert check.returncode == 0, "docs/cli.md is stale: run `python scripts/cli_docs.py`"


def test_every_option_the_docs_show_exists():
    runner = CliRunner()
    for command, options in re.findall(r"#{2,3} `ombre ([a-z][\w-]*(?: [a-z][\w-]*)*)([^`]*)`", README + GUIDE):
        help_text = runner.invoke(main, [*command.split(), "--help"]).output
        for option in re.findall(r"--[a-z][a-z-]*", options):
            assert option in help_text, f"the docs show `ombre {command} {option}`, which --help lacks"
    for option in re.findall(r"`(--keep-(?:from|to)-[a-z]+)", README + GUIDE):
        assert option in runner.invoke(main, ["forge", "--help"]).output


def test_bench_figures_in_the_docs_come_from_the_bench_output():
    checks = {"forge_speed.txt": r"(payload|chatty) ",
              "recall_eval.txt": r"(memdaily|dialogue|companion|longchat|paraphrase|multisession|hook) +\d", "inject_threshold.txt": r"(both|e5|use) .* [\d.]+$",
              "recall_leave_one_out.txt": r"(memdaily|dialogue|companion|longchat) +held out",
              "breath_latency.txt": r" +\d+0000 ", "hook_latency.txt": r"service ",
              "breath_latency_postgresql.txt": r" +\d+0000 ", "load.txt": r"(breath|hold|hook) +[\d,k]+ ",
              "cost_replay.txt": r"(naive|dual-zone) ", "distill_eval.txt": r"distill "}
    for name, pattern in checks.items():
        lines = (REPO / "bench" / "out" / name).read_text(encoding="utf-8").splitlines()
        rows = [line for line in lines if re.match(pattern, line)]
        assert rows, name
        missing = [row for row in rows if row not in BENCHMARKS]
        assert not missing, f"docs/benchmarks.md lacks these lines of bench/out/{name}: {missing}"


def test_the_chinese_readme_has_the_same_two_setup_commands_and_real_options():
    zh = (REPO / "README.zh.md").read_text(encoding="utf-8")
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"```sh\n(.+?)\n```", zh.split("## 安装", 1)[1].split("\n## ", 1)[0], flags=re.S) == \
        re.findall(r"```sh\n(.+?)\n```", setup, flags=re.S)
    runner = CliRunner()
    for command, options in re.findall(r"`ombre ([a-z][\w-]*(?: [a-z][\w-]*)*)((?: --[a-z][a-z-]*)*)", zh):
        help_text = runner.invoke(main, [*command.split(), "--help"]).output
        assert "Usage:" in help_text, f"README.zh.md shows `ombre {command}`, which does not exist"
        for option in options.split():
            assert option in help_text, f"README.zh.md shows `ombre {command} {option}`, which --help lacks"
