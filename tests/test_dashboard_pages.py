"""What a newcomer hits first on the dashboard, over a real `ombre serve` (the browser tests in tests/e2e drive
the same pages through Chromium): the address as typed, the hook log, the doctor table, a one-point plot."""
from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import httpx
import pytest

from ombre.serve.ui import svg
from tests.support.servers import Server, free_port


@pytest.fixture
def served(tmp_path: Path):
    # the hooks and the CLI are told another address than the one this service answers at
    s = Server(tmp_path, env={"OMBRE_URL": f"http://127.0.0.1:{free_port()}"})
    yield s, tmp_path
    s.stop()


def test_ui_with_a_trailing_slash_is_the_overview(served):
    server, _ = served
    plain, slashed = (httpx.get(server.url + path, timeout=30) for path in ("/ui", "/ui/"))
    assert plain.status_code == slashed.status_code == 200
    assert "<h1" in slashed.text and slashed.text.split("<h1", 1)[1][:80] == plain.text.split("<h1", 1)[1][:80]


def test_the_hook_log_shows_what_each_card_said(served):
    server, home = served
    held = httpx.post(server.url + "/v1/hold", json={"content": "她对芒果过敏", "quote": "我芒果过敏"},
                      timeout=30).json()["id"]
    line = {"at": dt.datetime.now(dt.timezone.utc).isoformat(), "event": "user-prompt-submit", "outcome": "shown",
            "ms": 80, "cards": [held]}
    (home / "ombre" / "hooks.jsonl").write_text(json.dumps(line) + "\n")
    page = httpx.get(server.url + "/ui/hooks", timeout=30).text
    assert re.search(rf'<a class="card" href="/ui/memories/{held}">她对芒果过敏</a>', page), page[-2000:]


def test_the_dashboards_doctor_checks_this_service_and_says_where_the_hooks_ask(served):
    server, _ = served
    page = httpx.get(server.url + "/ui/keeper", timeout=30).text
    assert f"this service answers at {server.url}" in page and "OMBRE_URL=" in page


def test_a_plot_of_one_point_keeps_its_two_time_labels_apart():
    at = dt.datetime(2026, 3, 10, 20, 14, tzinfo=dt.timezone.utc)
    drawn = svg.timeline([svg.Point(at, 1000.0, "read", "one request")])
    ticks = re.findall(rf'<text class="tick" x="([\d.]+)" y="{svg.HEIGHT - 8}" text-anchor="(start|end)">([^<]+)</text>',
                       drawn)
    (x0, _, first), (x1, _, last) = ticks
    assert float(x1) - float(x0) > 400 and first != last
    point = float(re.search(r'<circle class="pt read" cx="([\d.]+)"', drawn).group(1))
    assert float(x0) < point < float(x1)
