"""The bill: what the chat cost, per day, from the usage Claude Code stores.

Every API reply Claude Code records carries its `usage` (input, cache creation split by 5-minute and 1-hour
lifetime, cache read, output). One reply is written as several lines (one per content block) that repeat
the same message id, and a forged or dieted session copies the old lines again with their usage reset for
the new window, so replies are counted once per message id, from the original file when Ombre's run log
knows the copy, across every file under the projects folder (subagent files included: they are billed too).
Costs are list prices per million tokens; a cache write costs 1.25× input (5 minutes) or 2× (1 hour), a
read 0.1×. After a swap the first turn writes the cache once and the next ones read it: the per-request
series and the swaps from the run log show that on one timeline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

from .. import jsonl_log
from ..clock import parse_timestamp
from ..errors import UsageError
from ..settings import Settings
from ..wire import loads

# (model name prefix, input $/MTok, output $/MTok), first match wins; list prices
PRICES: tuple[tuple[str, float, float], ...] = (
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4-6", 5.0, 25.0),
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude-3-haiku", 0.25, 1.25),
    ("opus", 5.0, 25.0),
    ("sonnet", 3.0, 15.0),
    ("haiku", 1.0, 5.0),
)
FALLBACK = ("(unknown: priced as Sonnet)", 3.0, 15.0)
WRITE_5M, WRITE_1H, READ = 1.25, 2.0, 0.1


def price(model: str) -> tuple[str, float, float]:
    name = (model or "").lower()
    for prefix, p_in, p_out in PRICES:
        if name.startswith(prefix):
            return prefix, p_in, p_out
    return FALLBACK


@dataclass
class Request:
    """One API reply, as billed."""

    at: str  # UTC ISO
    model: str
    input: int = 0
    write_5m: int = 0
    write_1h: int = 0
    cache_read: int = 0
    output: int = 0

    @property
    def cache_creation(self) -> int:
        return self.write_5m + self.write_1h

    @property
    def cost(self) -> float:
        _, p_in, p_out = price(self.model)
        return (
            self.input * p_in
            + self.write_5m * p_in * WRITE_5M
            + self.write_1h * p_in * WRITE_1H
            + self.cache_read * p_in * READ
            + self.output * p_out
        ) / 1e6


@dataclass
class Day:
    day: str
    requests: int = 0
    input: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    output: int = 0
    cost: float = 0.0
    swaps: list[str] = field(default_factory=list)  # "HH:MM tunnel-forge" in the person's zone
    background_calls: int = 0
    background_tokens: int = 0
    background_cost: float = 0.0

    @property
    def hit_ratio(self) -> float | None:
        """Of all prompt tokens, the share read from the cache."""
        total = self.input + self.cache_creation + self.cache_read
        return self.cache_read / total if total else None

    def add(self, r: Request) -> None:
        self.requests += 1
        self.input += r.input
        self.cache_creation += r.cache_creation
        self.cache_read += r.cache_read
        self.output += r.output
        self.cost += r.cost

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "hit_ratio": self.hit_ratio,
            "cost": round(self.cost, 6),
            "background_cost": round(self.background_cost, 6),
        }


@dataclass
class Bill:
    days: list[Day]
    total: Day
    requests: list[Request]  # oldest first, for the timeline
    models: dict[str, str]  # model → the price it was billed at
    files: int
    swaps: list[dict]  # the run log's successful swaps in the range (at, mode, new_sid), for the timeline

    def to_dict(self) -> dict:
        return {
            "days": [d.to_dict() for d in self.days],
            "total": self.total.to_dict(),
            "models": self.models,
            "files": self.files,
            "requests": len(self.requests),
        }


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _request(line: dict) -> tuple[str, Request] | None:
    message = line.get("message")
    if line.get("type") != "assistant" or not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    model = str(message.get("model") or "")
    if model == "<synthetic>":
        return None  # Claude Code's own placeholder replies: never sent to the API
    usage = message["usage"]
    creation = _int(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), dict) else {}
    write_1h = min(creation, _int(split.get("ephemeral_1h_input_tokens")))
    key = str(message.get("id") or line.get("requestId") or line.get("uuid") or "")
    return key, Request(
        str(line.get("timestamp") or ""),
        model,
        _int(usage.get("input_tokens")),
        creation - write_1h,
        write_1h,
        _int(usage.get("cache_read_input_tokens")),
        _int(usage.get("output_tokens")),
    )


def requests(
    projects_dir: Path, written: Collection[str] = frozenset(), since: float | None = None
) -> tuple[list[Request], int]:
    """Every billed reply under the projects folder, once each, oldest first; and how many files were read.

    `written` are the session ids Ombre wrote (forge, diet): their copies of earlier replies carry usage reset
    for the new window, not what was billed, so a reply found in an original file is counted from there.
    `since` (epoch seconds) passes over files last written before it: none of their lines can be later, and
    a person's months of transcripts need not be read for this week's bill (the dashboard asks on every
    load)."""
    seen: dict[str, Request] = {}
    files = sorted(projects_dir.glob("**/*.jsonl")) if projects_dir.is_dir() else []
    if since is not None:
        files = [p for p in files if _mtime(p) >= since]
    originals = [p for p in files if p.stem not in written]
    copies = [p for p in files if p.stem in written]
    for path in originals + copies:
        from_copy = path.stem in written
        known = set(seen) if from_copy else set()
        try:
            f = path.open("rb")
        except OSError:
            continue
        with f:
            for raw in f:
                if b'"usage"' not in raw:
                    continue
                try:
                    found = _request(loads(raw))
                except (ValueError, AttributeError):
                    continue  # a torn last line, or not a transcript line
                if found is None or not found[0]:
                    continue
                key, r = found
                if key in known:
                    continue
                # the lines of one reply repeat its usage (the last has the final output count); a copy in a
                # forged file is the same reply, dated by its first line
                earlier = seen.get(key)
                if earlier is None or r.output >= earlier.output:
                    if earlier is not None and earlier.at and earlier.at < r.at:
                        r.at = earlier.at
                    seen[key] = r
                elif r.at and r.at < earlier.at:
                    earlier.at = r.at
    return sorted(seen.values(), key=lambda r: r.at), len(files)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")  # let the read say what is wrong with it


def _local_day(stamp: str, zone: ZoneInfo) -> tuple[str, str] | None:
    moment = parse_timestamp(stamp)
    if moment is None:
        return None
    local = moment.astimezone(zone)
    return local.date().isoformat(), local.strftime("%H:%M")


def compute(settings: Settings, days: int | None = None, now: dt.datetime | None = None) -> Bill:
    """The bill per day in the person's zone (the last `days` days, today included; None: all)."""
    if days is not None and days < 1:
        raise UsageError(f"{days} is not a number of days", hint="give 1 or more, or leave it out for all")
    zone = ZoneInfo(settings.tz)
    now = now or dt.datetime.now(dt.timezone.utc)
    first_day = now.astimezone(zone).date() - dt.timedelta(days=days - 1) if days else None
    first = first_day.isoformat() if first_day else ""
    # a day's margin before the window: a clock that was off when a file was written
    since = (dt.datetime.combine(first_day, dt.time(), zone) - dt.timedelta(days=1)).timestamp() if first_day else None
    runs = jsonl_log.read(settings.history_log, limit=100_000)
    all_requests, files = requests(settings.projects_dir, {str(e["new_sid"]) for e in runs if e.get("new_sid")}, since)
    by_day: dict[str, Day] = {}

    def day(d: str) -> Day:
        return by_day.setdefault(d, Day(d))

    kept = []
    for r in all_requests:
        when = _local_day(r.at, zone)
        if when is None or when[0] < first:
            continue
        day(when[0]).add(r)
        kept.append(r)
    swaps = []
    # a tunnel logs its forge (or diet) and then itself, with the same new session: one swap, named by the last
    by_sid = {entry["new_sid"]: entry for entry in runs if entry.get("ok") and entry.get("new_sid")}
    for entry in by_sid.values():
        when = _local_day(str(entry.get("at", "")), zone)
        if when and when[0] >= first:
            day(when[0]).swaps.append(f"{when[1]} {entry.get('mode')}")
            swaps.append({k: entry.get(k) for k in ("at", "mode", "new_sid")})
    background = settings.llm_model or ("claude-haiku-4-5" if settings.llm == "claude-code" else "")
    for entry in jsonl_log.read(settings.llm_ledger, limit=100_000):
        when = _local_day(str(entry.get("at", "")), zone)
        if not when or when[0] < first:
            continue
        tokens_in, tokens_out = _int(entry.get("tokens_in")), _int(entry.get("tokens_out"))
        _, p_in, p_out = price(str(entry.get("model") or background))
        d = day(when[0])
        d.background_calls += 1
        d.background_tokens += tokens_in + tokens_out
        d.background_cost += (tokens_in * p_in + tokens_out * p_out) / 1e6
    ordered = [by_day[d] for d in sorted(by_day)]
    total = Day("total")
    for d in ordered:
        for name in (
            "requests",
            "input",
            "cache_creation",
            "cache_read",
            "output",
            "cost",
            "background_calls",
            "background_tokens",
            "background_cost",
        ):
            setattr(total, name, getattr(total, name) + getattr(d, name))
        total.swaps += [f"{d.day} {s}" for s in d.swaps]
    models = {r.model: price(r.model)[0] for r in kept}
    return Bill(ordered, total, kept, models, files, swaps)
