"""The README cannot drift: its set-up commands are what CI runs, and every option it shows exists."""
from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from ombre.cli import main

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", setup, flags=re.S)
    assert len(commands) == 2
    assert "ombre demo" in commands[0] and "pip install" in commands[0]
    assert commands[1].strip() == "bash scripts/test"
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text()


def test_every_option_the_readme_shows_exists():
    runner = CliRunner()
    for command, options in re.findall(r"### `ombre ([a-z][\w-]*(?: [a-z][\w-]*)*)([^`]*)`", README):
        help_text = runner.invoke(main, [*command.split(), "--help"]).output
        for option in re.findall(r"--[a-z][a-z-]*", options):
            assert option in help_text, f"README shows `ombre {command} {option}`, which --help lacks"
    for option in re.findall(r"`(--keep-(?:from|to)-[a-z]+)", README):
        assert option in runner.invoke(main, ["forge", "--help"]).output


def test_bench_figures_in_the_readme_come_from_the_bench_output():
    checks = {"forge_speed.txt": r"(payload|chatty) ",
              "recall_eval.txt": r"(memdaily|dialogue|companion|longchat|paraphrase|multisession|hook) +\d", "inject_threshold.txt": r"(both|e5|use) .* [\d.]+$",
              "recall_leave_one_out.txt": r"(memdaily|dialogue|companion|longchat) +held out",
              "breath_latency.txt": r" +\d+0000 ", "hook_latency.txt": r"service ",
              "cost_replay.txt": r"(naive|dual-zone) ", "distill_eval.txt": r"distill "}
    for name, pattern in checks.items():
        lines = (REPO / "bench" / "out" / name).read_text(encoding="utf-8").splitlines()
        rows = [line for line in lines if re.match(pattern, line)]
        assert rows, name
        missing = [row for row in rows if row not in README]
        assert not missing, f"README lacks these lines of bench/out/{name}: {missing}"


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
