"""End to end: distillation asks the person's own Claude Code (`OMBRE_LLM=claude-code`).

The real Claude Code CLI 2.1.112 runs `claude -p` against the recording fake Messages API. A companion chat
sits in a project folder a keeper would watch; `ombre distill --force` must store the candidate the model
names with the person's own words as its quote, and leave no new session file anywhere under the Claude
home. A model that answers no JSON lets the rules answer (logged as a fallback); past the daily cap no
model call is made at all.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.claude import ClaudeCode
from tests.support.fake_anthropic import FakeAnthropic, Reply
from tests.support.transcript_gen import SessionBuilder

pytestmark = pytest.mark.e2e


def _setup(tmp_path: Path, fake: FakeAnthropic, cli: Path, **env: str):
    cc = ClaudeCode.create(tmp_path, fake.url, cli)
    claude = tmp_path / "bin" / "claude"  # what the person's PATH would hold
    claude.parent.mkdir()
    claude.write_text(f'#!/bin/sh\nexec node "{cli}" "$@"\n')
    claude.chmod(0o755)
    b = SessionBuilder(random.Random(3))
    b.metadata()
    b.say("你好呀")
    b.reply([{"type": "text", "text": "你好！"}])
    b.say("我跟你说，我对芒果过敏，吃一点就起疹子。")
    b.reply([{"type": "text", "text": "记住啦，我以后不给你推荐芒果。"}])
    cc.project_dir.mkdir(parents=True)
    session = cc.project_dir / f"{b.sid}.jsonl"
    session.write_text(b.text())
    full_env = cc.env(OMBRE_HOME=str(tmp_path / "ombre"), OMBRE_LLM="claude-code", OMBRE_CLAUDE_BIN=str(claude),
                      OMBRE_LLM_TIMEOUT_MS="60000", OMBRE_DISTILL_WARMUP="1", OMBRE_VECTORS="0", **env)
    return cc, session, full_env


def _distill(session: Path, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-m", "ombre.cli", "distill", "--session", str(session), "--force",
                           "--json"], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _sessions(cc: ClaudeCode) -> set[Path]:
    return set((cc.claude_home / "projects").rglob("*.jsonl"))


def _ledger(tmp_path: Path) -> list[dict]:
    path = tmp_path / "ombre" / "llm_ledger.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_distillation_through_the_persons_claude_code(tmp_path: Path, cli: Path):
    answer = {"candidates": [{"type": "规则", "content": "她对芒果过敏", "quote": "我对芒果过敏", "importance": 8}]}
    with FakeAnthropic(default=Reply.text(json.dumps(answer, ensure_ascii=False))) as fake:
        cc, session, env = _setup(tmp_path, fake, cli)
        before = _sessions(cc)
        result = _distill(session, env)
        bodies = fake.messages_requests()
    assert result["ran"] and not result["fallback"], result
    assert [h["stored"] for h in result["held"]] == [True]
    asked = [b for b in bodies if "陪伴对话" in json.dumps(b.get("system"), ensure_ascii=False)]
    assert asked and not asked[0].get("tools")  # our prompt, no tools
    assert "我对芒果过敏" in json.dumps(asked[0]["messages"], ensure_ascii=False)
    memories = subprocess.run([sys.executable, "-m", "ombre.cli", "memories", "list", "--json"], env=env,
                              capture_output=True, text=True, timeout=60)
    stored = json.loads(memories.stdout)
    assert [m["evidence"]["quote"] for m in stored] == ["我对芒果过敏"]
    assert _sessions(cc) == before  # no new session file in any project folder
    ledger = _ledger(tmp_path)  # distillation, then the arbitration of the 规则 it found: both in the ledger
    assert [(e["backend"], e["purpose"]) for e in ledger] == [("claude-code:haiku", "distill"),
                                                              ("claude-code:haiku", "arbitrate")]
    assert ledger[0]["ok"] and ledger[0]["tokens_in"] > 0 and ledger[0]["ms"] > 0


def test_a_claude_code_that_gives_no_json_lets_the_rules_answer(tmp_path: Path, cli: Path):
    with FakeAnthropic(default=Reply.text("抱歉，我不太明白。")) as fake:
        cc, session, env = _setup(tmp_path, fake, cli)
        result = _distill(session, env)
    assert result["ran"] and result["fallback"].startswith("model failed, rules answered"), result
    assert any(h["stored"] for h in result["held"])  # the rules found the allergy
    assert _ledger(tmp_path)[-1]["ok"] is False
    log = [json.loads(x) for x in (tmp_path / "ombre" / "distill.jsonl").read_text().splitlines()]
    assert log[-1]["fallback"].startswith("model failed")


def test_past_the_daily_cap_claude_code_is_not_asked(tmp_path: Path, cli: Path):
    with FakeAnthropic() as fake:
        cc, session, env = _setup(tmp_path, fake, cli, OMBRE_LLM_DAILY_CALLS="0")
        result = _distill(session, env)
        assert fake.messages_requests() == []
    assert result["fallback"].startswith("rules answered: today's model budget"), result
    assert _ledger(tmp_path) == [] and os.path.exists(session)
