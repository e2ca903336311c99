"""Time on the ground floor: the one zone constant and every helper that reads or writes a moment.

Stored times are UTC ISO strings; a day, a reminder or a handoff is read in Shanghai time, the zone of the
people this tool is for (a person shown times elsewhere sets OMBRE_TZ, read by Settings.local).
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

SHANGHAI = ZoneInfo("Asia/Shanghai")


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def shanghai_date(moment: dt.datetime) -> str:
    return moment.astimezone(SHANGHAI).date().isoformat()


def parse_timestamp(value: object) -> dt.datetime | None:
    """An ISO time as written by Claude Code or Ombre; one without a zone is UTC (as both write them)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)
