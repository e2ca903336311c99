"""The anniversary channel (seed §9.2): at most one card a day, and never for something created today."""
from __future__ import annotations

import datetime as dt

from .model import SHANGHAI, Memory
from .store import MemoryStore

ANNIVERSARY_TAGS = ("生日", "纪念日")


def _day(value: str | None) -> dt.date | None:
    if not value:
        return None
    try:
        if "T" in value:
            return dt.datetime.fromisoformat(value).astimezone(SHANGHAI).date()
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


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


def pick(store: MemoryStore, today: dt.date) -> Memory | None:
    """Today's one anniversary card, or None when there is none or one was already shown today."""
    key = f"anniversary:{today.isoformat()}"
    if store.meta(key) is not None:
        return None  # shown already today, or looked for and none: the scan runs once a day
    found = _find(store, today)
    store.set_meta(key, found.id if found else "")
    return found


def _find(store: MemoryStore, today: dt.date) -> Memory | None:
    yesterday = today - dt.timedelta(days=1)  # a UTC timestamp may fall on the day before in Shanghai
    seen: dict[str, Memory] = {}
    for md in (f"{today.month:02d}-{today.day:02d}", f"{yesterday.month:02d}-{yesterday.day:02d}"):
        for m in store.on_month_day(md):
            seen[m.id] = m
    candidates = [m for m in seen.values() if is_anniversary(m, today)]
    if not candidates:
        return None
    return max(candidates, key=lambda m: (m.pinned, m.importance, m.created))
