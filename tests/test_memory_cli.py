"""The memory commands are thin adapters: options in, MemoryService result out, clear errors."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ombre.cli import main


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("OMBRE_HOME", str(tmp_path / "ombre"))

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args))

    return invoke


def test_hold_breath_and_memories(run, tmp_path):
    held = run("hold", "每周三晚上我们语音", "--type", "承诺", "--quote", "以后每周三晚上都语音吧", "--importance", "8",
               "--tag", "承诺", "--json")
    assert held.exit_code == 0, held.output
    mid = json.loads(held.output)["id"]
    found = json.loads(run("breath", "什么时候打电话", "--json").output)
    assert found["cards"][0]["id"] == mid
    assert json.loads(run("memories", "show", mid, "--json").output)["evidence"]["quote"] == "以后每周三晚上都语音吧"
    assert json.loads(run("memories", "pin", mid, "--json").output)["pinned"] is True
    refused = run("memories", "archive", mid)
    assert refused.exit_code != 0 and "commitment" in refused.output
    assert json.loads(run("memories", "archive", mid, "--force", "--json").output)["archived"] is True
    assert json.loads(run("memories", "list", "--json").output) == []
    assert json.loads(run("memories", "restore", mid, "--json").output)["archived"] is False
    out = tmp_path / "export.jsonl"
    assert "exported 1" in run("memories", "export", str(out)).output
    start = json.loads(run("breath", "--session-start", "--json").output)
    assert start["pinned"][0]["id"] == mid and "每周三" in start["text"]


def test_refused_hold_exits_non_zero_and_says_why(run):
    out = run("hold", "她今天很难过，她就是这种人，总是这样", "--auto")
    assert out.exit_code == 3 and "not held: log_only" in out.output and "永久性格" in out.output


def test_bad_hold_input(run):
    for args, needle in ((["hold", "x", "--importance", "0"], "importance"),
                         (["hold", "x", "--type", "八卦"], "unknown type"),
                         (["hold", "   "], "empty")):
        out = run(*args)
        assert out.exit_code != 0 and needle in out.output
    assert json.loads(run("memories", "list", "--json").output) == []


def test_import_of_a_broken_file_imports_nothing(run, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "好的一行", "id": "aaa"}\nnot json\n', encoding="utf-8")
    out = run("memories", "import", str(bad))
    assert out.exit_code != 0 and "bad.jsonl:2" in out.output
    assert json.loads(run("memories", "list", "--json").output) == []
