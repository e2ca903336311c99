"""Dates that come back: the day's 今日纪念 card, and birthdays and anniversaries that recur in
the today/tomorrow reminders every year.

今日纪念 is at most one card a day — the same card for every recall that day, however many there are and
whenever a memory was added — and only for a date at least a year back: something created today never
counts, whatever its tags.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import cast

from ..clock import SHANGHAI
from .model import ASKED_ONLY, Memory
from .store import MemoryStore

ANNIVERSARY_TAGS = ("生日", "纪念日")
_RECURRING = re.compile(r"生日|纪念日|周年|birthday|anniversary", re.IGNORECASE)


def _day(value: str | None) -> dt.date | None:
    if not value:
        return None
    try:
        if "T" in value:
            return dt.datetime.fromisoformat(value).astimezone(SHANGHAI).date()
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def _md(day: dt.date) -> str:
    return f"{day.month:02d}-{day.day:02d}"


def recurs(m: Memory) -> bool:
    """A birthday or an anniversary: its event date comes back every year."""
    return any(t in ANNIVERSARY_TAGS for t in m.tags) or bool(_RECURRING.search(f"{m.title} {m.content}"))


def is_anniversary(m: Memory, today: dt.date) -> bool:
    """Month-day is today's and the date is at least a year back (or an older date tagged 生日/纪念日);
    a memory created today never counts, whatever its tags."""
    created = _day(m.created)
    if created is None or created >= today:
        return False
    when = _day(m.event_date) or created
    if (when.month, when.day) != (today.month, today.day) or when >= today:
        return False
    if today.year - when.year < 1:
        return False
    if any(t in ANNIVERSARY_TAGS for t in m.tags) and m.event_date:
        return True  # a birthday or anniversary told recently, about a date years back
    return (today - created).days >= 365


def _on(store: MemoryStore, days: list[dt.date], created_before: dt.date | None = None) -> list[Memory]:
    # a UTC creation stamp may fall on the day before in Shanghai: ask for that month-day too
    mds = sorted({_md(d) for day in days for d in (day, day - dt.timedelta(days=1))})
    return store.on_month_days(mds, created_before=created_before.isoformat() if created_before else None)


def pick(store: MemoryStore, today: dt.date) -> Memory | None:
    """Today's one anniversary card, or None. Asked anew on every recall (an index lookup), so a memory
    added during the day counts and a second recall sees the same card."""
    # a creation counts only a year back (a day more: the UTC stamp may be the Shanghai day before)
    # the companion's own reflections (沉淀) are not recalled unasked, a year on either
    candidates = [
        m
        for m in _on(store, [today], today - dt.timedelta(days=364))
        if is_anniversary(m, today) and m.type not in ASKED_ONLY
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda m: (m.pinned, m.importance, m.created, m.id))


def due(store: MemoryStore, days: list[dt.date]) -> list[tuple[Memory, dt.date]]:
    """What falls due on these days (today, tomorrow): memories dated on one of them, and birthdays and
    anniversaries whose month and day come round again on one of them."""
    out: dict[str, tuple[Memory, dt.date]] = {}
    for m in store.on_dates([d.isoformat() for d in days]):
        out[m.id] = (m, dt.date.fromisoformat(cast(str, m.event_date)))  # on_dates matched it: never None
    for m in _on(store, days, min(days)):  # recurrence is by event date; a creation today is no event
        when = _day(m.event_date)
        if m.id in out or when is None or not recurs(m):
            continue
        for day in days:
            if (when.month, when.day) == (day.month, day.day) and when.year < day.year:
                out[m.id] = (m, day)
                break
    return sorted(out.values(), key=lambda pair: (pair[1], -pair[0].importance))
