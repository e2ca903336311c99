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


def test_edit_reindexes_and_keeps_the_caps_and_forget_deletes_for_good(run, tmp_path, monkeypatch):
    """Issue #18 item 2's actions, on the CLI the dashboard shares: an edit goes through hold's checks and the
    scarcity caps and leaves a trace; forget removes the memory, its keywords and vectors, and logs it."""
    import sqlite3

    monkeypatch.setenv("OMBRE_MAX_PINNED", "1")
    a = json.loads(run("hold", "她喜欢桂花乌龙", "--quote", "我最喜欢桂花乌龙", "--json").output)["id"]
    b = json.loads(run("hold", "她养了一只叫年糕的猫", "--quote", "我家猫叫年糕", "--pinned", "--json").output)["id"]
    edited = json.loads(run("memories", "edit", a, "--content", "她喜欢少糖的茉莉奶绿", "--json").output)
    assert edited["content"] == "她喜欢少糖的茉莉奶绿" and edited["changed"][0].startswith("content:")
    assert json.loads(run("breath", "奶绿", "--json").output)["cards"][0]["id"] == a
    assert json.loads(run("memories", "trace", a, "--json").output)["trace"][-1]["action"] == "edited"
    bad = run("memories", "edit", a, "--importance", "11")
    assert bad.exit_code != 0 and "importance" in bad.output
    assert run("memories", "edit", a, "--type", "八卦").exit_code != 0
    pinned = json.loads(run("memories", "pin", a, "--json").output)
    assert pinned["pinned"] and any("置顶已满" in n for n in pinned["notes"])
    assert json.loads(run("memories", "show", b, "--json").output)["pinned"] is False  # the cap demoted the other
    assert run("memories", "forget", a).exit_code != 0  # needs --yes
    assert json.loads(run("memories", "forget", a, "--yes", "--json").output)["forgotten"] == a
    assert run("memories", "show", a).exit_code != 0
    assert all(c["id"] != a for c in json.loads(run("breath", "奶绿 乌龙", "--json").output)["cards"])
    db = sqlite3.connect(tmp_path / "ombre" / "ombre.db")
    assert db.execute("SELECT count(*) FROM memories_fts WHERE memory_id=?", (a,)).fetchone()[0] == 0
    assert db.execute("SELECT decision, memory_id FROM gate_log ORDER BY seq DESC LIMIT 1").fetchone() == ("forget", a)
