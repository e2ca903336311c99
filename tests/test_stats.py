"""`ombre stats` on the real fixture transcripts, recounted here independently: every
assistant reply's stored usage once per message id, per Shanghai day."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import FIXTURES

FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def recount(folder: Path) -> dict[str, dict[str, int]]:
    """Per Shanghai day: each message id's usage from its line with the most output, dated by its first line."""
    replies: dict[str, tuple[str, dict]] = {}
    for path in folder.rglob("*.jsonl"):
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            message = line.get("message") if isinstance(line, dict) else None
            if (line.get("type") != "assistant" or not isinstance(message, dict) or "usage" not in message
                    or message.get("model") == "<synthetic>" or not message.get("id")):
                continue
            when, usage = line["timestamp"], message["usage"]
            old = replies.get(message["id"])
            if old is None or usage.get("output_tokens", 0) >= old[1].get("output_tokens", 0):
                replies[message["id"]] = (min(when, old[0]) if old else when, usage)
            else:
                replies[message["id"]] = (min(when, old[0]), old[1])
    days: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for when, usage in replies.values():
        day = dt.datetime.fromisoformat(when.replace("Z", "+00:00")).astimezone(ZoneInfo("Asia/Shanghai")).date()
        days[day.isoformat()]["requests"] += 1
        for f in FIELDS:
            days[day.isoformat()][f] += int(usage.get(f) or 0)
    return days


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    home = tmp_path / "claude"
    shutil.copytree(FIXTURES, home / "projects")
    for p in home.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return home


def stats(tmp_path: Path, claude: Path, *args: str) -> dict:
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(claude), "OMBRE_HOME": str(tmp_path / "o")}
    out = subprocess.run([sys.executable, "-m", "ombre.cli", "stats", "--json", *args], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_bill_of_the_fixtures_equals_a_recount_of_their_usage(tmp_path, claude):
    expected = recount(claude / "projects")
    bill = stats(tmp_path, claude)
    assert [d["day"] for d in bill["days"]] == sorted(expected)
    for d in bill["days"]:
        e = expected[d["day"]]
        assert (d["requests"], d["input"], d["cache_creation"], d["cache_read"], d["output"]) == \
            (e["requests"], e["input_tokens"], e["cache_creation_input_tokens"], e["cache_read_input_tokens"],
             e["output_tokens"]), d["day"]
        prompt = d["input"] + d["cache_creation"] + d["cache_read"]
        assert d["hit_ratio"] == pytest.approx(d["cache_read"] / prompt)
    assert bill["total"]["requests"] == sum(e["requests"] for e in expected.values()) > 100
    assert bill["total"]["cost"] > 0 and set(bill["models"].values()) <= {
        "claude-sonnet", "claude-haiku-4", "claude-opus-4-6", "claude-opus-4-5", "claude-opus-4"}


def test_a_forged_copy_is_not_billed_twice_and_swaps_and_background_spend_are_on_their_day(tmp_path, claude):
    from ombre.window.forge import ForgeOptions, run
    from ombre.window.select import Selector

    before = stats(tmp_path, claude)["total"]
    source = claude / "projects" / "spotter-2.1" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    history = tmp_path / "o" / "history.jsonl"
    result = run(source, ForgeOptions(selector=Selector(retain=40_000), history=history))
    assert result.events_kept > 0
    # a tunnel logs the forge it ran and then itself, with the same new session: one swap, not two
    forged = json.loads(history.read_text().splitlines()[-1])
    with history.open("a") as log:
        log.write(json.dumps({**forged, "mode": "tunnel-forge"}) + "\n")
    ledger = tmp_path / "o" / "llm_ledger.jsonl"
    ledger.write_text(json.dumps({"at": "2026-02-12T03:00:00+00:00", "day": "2026-02-12", "backend": "claude-code",
                                  "model": "claude-haiku-4-5", "ok": True, "tokens_in": 1_000_000,
                                  "tokens_out": 100_000}) + "\n")
    after = stats(tmp_path, claude)
    assert {k: after["total"][k] for k in ("requests", "input", "cache_read", "output")} == \
        {k: before[k] for k in ("requests", "input", "cache_read", "output")}
    today = dt.datetime.now(ZoneInfo("Asia/Shanghai")).date().isoformat()
    swapped = [d for d in after["days"] if d["swaps"]]
    assert [d["day"] for d in swapped] == [today] and len(swapped[0]["swaps"]) == 1
    assert swapped[0]["swaps"][0].endswith(" tunnel-forge")
    feb12 = next(d for d in after["days"] if d["day"] == "2026-02-12")
    assert feb12["background_calls"] == 1 and feb12["background_cost"] == pytest.approx(1.0 + 0.5)
    recent = stats(tmp_path, claude, "--days", "1")
    assert [d["day"] for d in recent["days"]] == [today] and recent["total"]["requests"] == 0


def test_a_weeks_bill_reads_only_the_files_written_that_week(tmp_path, claude):
    """Months of transcripts are not read for this week's bill (the dashboard asks on every load): a file
    last written before the window cannot hold a line inside it."""
    import time

    files = sorted((claude / "projects").rglob("*.jsonl"))
    old = time.time() - 400 * 86400
    for p in files:
        os.utime(p, (old, old))
    os.utime(files[0], None)  # written just now
    assert stats(tmp_path, claude, "--days", "7")["files"] == 1
    assert stats(tmp_path, claude)["files"] == len(files) > 1
