"""Choosing what a new window keeps: retain, keep-days, ranges by idx/uuid/ts, max-kept."""
from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from ombre.errors import SelectionError, UsageError
from ombre.transcript.chain import scan
from ombre.window.select import EndSpec, Selector, parse_days, parse_moment, select, turns
from tests.support.transcript_gen import SessionBuilder

SH = dt.timezone(dt.timedelta(hours=8))


def _session(tmp_path: Path) -> Path:
    """Six turns over three Shanghai days, at known times; one turn with a tool call."""
    b = SessionBuilder(random.Random(11))
    times = ["2026-08-03 09:00", "2026-08-03 21:30", "2026-08-04 08:15", "2026-08-04 23:50",
             "2026-08-05 07:00", "2026-08-05 16:30"]
    for n, when in enumerate(times):
        b.clock = dt.datetime.fromisoformat(when).replace(tzinfo=SH).astimezone(dt.timezone.utc)
        b.user(f"第{n}句话", gap_ms=1)
        if n == 2:
            b.tool_round([("Bash", {"command": "date"}, "Tue Aug 4")])
        b.reply([{"type": "text", "text": f"回复{n}" + "好" * 200}])
    path = tmp_path / "c0ffee00-0000-4000-8000-000000000000.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    return path


@pytest.fixture
def events(tmp_path):
    with scan(_session(tmp_path)) as t:
        yield t.measure(t.events)


def _starts(events, sel):
    return [events[i].text_preview for i in sel.kept if events[i].real_user]


def test_turns_begin_at_real_user_messages(events):
    spans = turns(events)
    assert len(spans) == 6
    assert all(events[s].real_user for s, _ in spans)
    assert spans[2][1] - spans[2][0] == 4  # user, tool_use, tool_result, reply


def test_retain_keeps_whole_turns_from_the_end(events):
    per_turn = sum(e.size for e in events[turns(events)[-1][0]:])
    sel = select(events, Selector(retain=per_turn * 2 + 1))
    assert _starts(events, sel) == ["第4句话", "第5句话"]


def test_retain_keeps_the_last_turn_even_when_it_alone_is_over(events):
    sel = select(events, Selector(retain=1))
    assert _starts(events, sel) == ["第5句话"]


def test_keep_days_uses_shanghai_calendar_days(events):
    sel = select(events, Selector(keep_days=(dt.date(2026, 8, 4),)))
    assert _starts(events, sel) == ["第2句话", "第3句话"]  # 23:50 Shanghai is still the 4th


def test_keep_days_with_no_turn_lists_the_days_there_are(events):
    with pytest.raises(SelectionError) as err:
        select(events, Selector(keep_days=(dt.date(2026, 9, 1),)))
    assert err.value.candidates == ["2026-08-03", "2026-08-04", "2026-08-05"]


def test_max_kept_trims_from_the_oldest_end(events):
    total = sum(e.size for e in events)
    sel = select(events, Selector(keep_days=(dt.date(2026, 8, 3), dt.date(2026, 8, 4), dt.date(2026, 8, 5)),
                                  max_kept=total // 2))
    assert sel.trimmed_turns >= 2
    assert _starts(events, sel)[-1] == "第5句话"
    assert sum(events[i].size for i in sel.kept) <= total // 2


def test_from_ts_takes_the_last_event_at_or_before_the_moment(events):
    sel = select(events, Selector(keep_from=EndSpec(ts="2026-08-04 10:00")))
    assert sel.resolved_from.preview.startswith("回复2")  # the reply to 08:15, not the 23:50 message
    assert _starts(events, sel)[0] == "第2句话"  # aligned back to the start of that turn


def test_from_ts_before_everything_takes_the_earliest(events):
    sel = select(events, Selector(keep_from=EndSpec(ts="2020-01-01")))
    assert sel.resolved_from.idx == 0


def test_to_ts_takes_the_first_event_at_or_after_the_moment(events):
    sel = select(events, Selector(keep_to=EndSpec(ts="2026-08-04 08:00")))
    assert sel.resolved_to.preview == "第2句话"
    assert _starts(events, sel)[-1] == "第2句话" and sel.resolved_from.idx == 0  # from defaults to the start


def test_to_ts_after_everything_takes_the_last(events):
    sel = select(events, Selector(keep_from=EndSpec(idx=0), keep_to=EndSpec(ts="2030-01-01T00:00:00Z")))
    assert sel.resolved_to.idx == len(events) - 1


def test_ends_mix_idx_uuid_and_unix_time(events):
    target = events[turns(events)[3][0]]
    moment = int(target.when.timestamp() * 1000)
    sel = select(events, Selector(keep_from=EndSpec(uuid=events[turns(events)[1][0]].uuid[:10]),
                                  keep_to=EndSpec(ts=str(moment))))
    assert _starts(events, sel) == ["第1句话", "第2句话", "第3句话"]


def test_ambiguous_uuid_prefix_lists_the_candidates(tmp_path):
    class SharedPrefix(SessionBuilder):
        def _uuid(self) -> str:  # every uuid starts with "abcd1234"
            return "abcd1234" + super()._uuid()[8:]

    b = SharedPrefix(random.Random(3))
    for n in range(3):
        b.say(f"第{n}句")
        b.reply([{"type": "text", "text": "嗯"}])
    path = tmp_path / "c0ffee00-0000-4000-8000-000000000001.jsonl"
    path.write_text(b.text(), encoding="utf-8")
    with scan(path) as t:
        with pytest.raises(SelectionError) as err:
            select(t.events, Selector(keep_from=EndSpec(uuid="ABCD1234")))
    assert len(err.value.candidates) == 6 and "ambiguous" in err.value.message
    assert all("abcd1234" in c for c in err.value.candidates)


def test_unknown_uuid_and_idx_out_of_range_are_errors(events):
    with pytest.raises(SelectionError):
        select(events, Selector(keep_from=EndSpec(uuid="ffffffffffff")))
    with pytest.raises(SelectionError, match="outside"):
        select(events, Selector(keep_to=EndSpec(idx=10_000)))


def test_from_after_to_is_an_error(events):
    with pytest.raises(SelectionError, match="backwards"):
        select(events, Selector(keep_from=EndSpec(ts="2026-08-05 12:00"), keep_to=EndSpec(ts="2026-08-03 12:00")))


@pytest.mark.parametrize("text,expected", [
    ("2026-08-05 16:30", "2026-08-05T08:30:00+00:00"),
    ("2026-08-05T16:30:00", "2026-08-05T08:30:00+00:00"),
    ("2026-08-05T08:30:00Z", "2026-08-05T08:30:00+00:00"),
    ("2026-08-05T16:30:00+08:00", "2026-08-05T08:30:00+00:00"),
    ("1785918600", "2026-08-05T08:30:00+00:00"),
    ("1785918600000", "2026-08-05T08:30:00+00:00"),
    ("2026-08-05", "2026-08-04T16:00:00+00:00"),
])
def test_moments_without_a_zone_are_shanghai_wall_time(text, expected):
    assert parse_moment(text).astimezone(dt.timezone.utc).isoformat() == expected


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-40 25:00", "", "16:30"])
def test_unreadable_moment_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="cannot read the time"):
        parse_moment(bad)


def test_parse_days():
    assert parse_days("2026-08-04, 2026-08-03,2026-08-04") == (dt.date(2026, 8, 3), dt.date(2026, 8, 4))
    with pytest.raises(UsageError):
        parse_days("2026-08-3x")
