"""The keeper: a sidecar that runs diet and forge by itself, as an explicit state machine.

    a session id that changed after /new (a flag `ombre handoff prepare --write` set) → the nudge, once
    read usage and idle time
      ├─ off, breaker open, below the diet threshold, not idle, or the daily cap reached → skip
      ├─ ≥ forge % (re-armed, past the forge cooldown) → (distill) → hold handoff → forge → re-bind → nudge
      └─ ≥ diet % (re-armed, past the diet cooldown) → diet → re-bind

A threshold fires once and re-arms only when usage has fallen below it by the hysteresis band, so
usage jittering around a line cannot fire twice. State (cooldowns, today's count, failures) is written
atomically before and after each run, so a restart or a crash never forgets a cooldown; a state file
that cannot be read counts as "just ran" (cooldowns start now). After `max_failures` failures in a row
the breaker opens and automatic runs stop until `ombre keeper reset`. Every decision is one line of
metrics.jsonl: skip / trigger / ok / fail with the used %, mode, hold result and error.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Callable

from .. import jsonl_log
from ..clock import parse_timestamp, shanghai_date
from ..errors import InvariantError, LiveSessionError, OmbreError, SelectionError, TranscriptError
from ..files import replace_atomic
from ..settings import Settings
from ..transcript.reader import Fingerprint
from ..transcript.sessions import find_session
from ..transcript.usage import used_pct
from ..wire import loads
from . import new_window
from .bridges import Bridge
from .tunnel import Holder, TunnelOptions, TunnelResult
from .tunnel import run as run_tunnel

METRICS_MAX_BYTES = 5_000_000  # a line every pass: about a month of 30-second passes per generation
REFUSALS_KEPT = 20
EARLIEST = dt.datetime.min.replace(tzinfo=dt.timezone.utc)


@dataclass
class KeeperState:
    last_diet: str | None = None  # ISO times of the last attempt (a failed attempt also starts the cooldown)
    last_forge: str | None = None
    # cooldowns started without a run (`ombre keeper seed`, an unreadable state file): shown apart from the runs
    seeded: str | None = None
    day: str = ""  # the Shanghai day runs_today counts
    runs_today: int = 0
    failures: int = 0  # in a row
    breaker: bool = False
    armed_diet: bool = True
    armed_forge: bool = True
    note: str = ""
    # rewrites refused for a file as it was (its fingerprint): tried again only once the session changes
    refused: list[dict] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path, now: dt.datetime) -> "KeeperState":
        if not path.exists():
            return cls()
        try:
            data = loads(path.read_text(encoding="utf-8"))
            known = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in known})
        except (OSError, ValueError, TypeError):
            # Unreadable (say, truncated by a crash on a file system without atomic rename): assume a run just
            # happened, so nothing fires before the cooldowns pass, rather than firing at once.
            stamp = now.isoformat(timespec="seconds")
            path.replace(path.with_name(path.name + ".unreadable"))
            return cls(seeded=stamp, note="state file was unreadable: cooldowns restarted")

    def cooling_from(self, kind: str) -> str | None:
        """When `kind`'s cooldown started: its last run, or a later seed."""
        last = self.last_diet if kind == "diet" else self.last_forge
        stamps = [x for x in (last, self.seeded) if x]
        return max(stamps, key=lambda x: parse_timestamp(x) or EARLIEST) if stamps else None

    def save(self, path: Path) -> None:
        replace_atomic(path, json.dumps(asdict(self), ensure_ascii=False, indent=2).encode("utf-8"))


@dataclass
class Reading:
    session: str
    path: str
    used_pct: float | None
    idle_s: float
    fingerprint: str = ""  # size:mtime of the file as read; the forge refuses to cut if it moves under it


@dataclass
class Decision:
    action: str  # skip | diet | forge
    reason: str


def _since(stamp: str | None, now: dt.datetime) -> float:
    if not stamp:
        return float("inf")
    try:
        return (now - dt.datetime.fromisoformat(stamp)).total_seconds()
    except ValueError:
        return 0.0


def _wait_s(cooldown_mins: int, last: str | None, now: dt.datetime) -> float:
    """Seconds until a cooldown is over: ≤ 0 once it is (−inf if it never ran)."""
    return cooldown_mins * 60 - _since(last, now)


def _minutes_left(cooldown_mins: int, last: str | None, now: dt.datetime) -> int:
    return round(max(0.0, _wait_s(cooldown_mins, last, now)) / 60)


def decide(state: KeeperState, reading: Reading, s: Settings, now: dt.datetime) -> Decision:
    """What to do now; re-arms thresholds in `state` (the only change it makes)."""
    pct = reading.used_pct
    if pct is not None:
        if pct < s.diet_pct - s.hysteresis_pct:
            state.armed_diet = True
        if pct < s.forge_pct - s.hysteresis_pct:
            state.armed_forge = True
    if not s.auto_forge:
        return Decision("skip", "AUTO_FORGE=0")
    if state.breaker:
        return Decision("skip", f"breaker open after {state.failures} failures in a row (ombre keeper reset)")
    if pct is None:
        return Decision("skip", "no usage recorded yet")
    if pct < s.diet_pct:
        return Decision("skip", f"below the diet threshold ({pct:.1f}% < {s.diet_pct}%)")
    if reading.idle_s < s.idle_secs:
        return Decision("skip", f"not idle ({reading.idle_s:.0f}s < {s.idle_secs}s)")
    if state.runs_today >= s.max_per_day:
        return Decision("skip", f"daily cap reached ({state.runs_today}/{s.max_per_day})")
    forge_wait = _wait_s(s.forge_cooldown_mins, state.cooling_from("forge"), now)
    diet_wait = _wait_s(s.diet_cooldown_mins, state.cooling_from("diet"), now)
    if pct >= s.forge_pct and state.armed_forge and forge_wait <= 0:
        return Decision("forge", f"{pct:.1f}% ≥ {s.forge_pct}%")
    if state.armed_diet and diet_wait <= 0:
        return Decision("diet", f"{pct:.1f}% ≥ {s.diet_pct}%")
    if pct >= s.forge_pct and forge_wait > 0:
        return Decision("skip", f"forge cooldown: {forge_wait / 60:.0f} min left")
    if diet_wait > 0:
        return Decision("skip", f"diet cooldown: {diet_wait / 60:.0f} min left")
    return Decision("skip", "already ran at this level; waits for usage to drop below the hysteresis band")


def read(path: Path, s: Settings, now: dt.datetime, previous: Reading | None = None) -> Reading:
    """Usage % and idle time. A file that has not changed since `previous` is not parsed again (the chat
    is idle most of the time, and a long transcript takes seconds to read)."""
    before = Fingerprint.of(path)
    stamp = f"{before.size}:{before.mtime_ns}"
    idle = now.timestamp() - before.mtime_ns / 1e9
    if previous is not None and previous.path == str(path) and previous.fingerprint == stamp:
        return Reading(previous.session, previous.path, previous.used_pct, idle, stamp)
    session, pct = used_pct(path, s.context_window)
    if Fingerprint.of(path) != before:  # a reply is being written: not idle, whatever the clock says
        idle = 0.0
    return Reading(session, str(path), pct, idle, stamp)


def metric(s: Settings, entry: dict) -> dict:
    return jsonl_log.append(s.metrics_log, entry, max_bytes=METRICS_MAX_BYTES)


@dataclass
class Keeper:
    settings: Settings
    bridge: Bridge | None
    holder: Holder | None
    # async distillation: asked every pass whether it is due, and forced right before a forge
    distill: Callable[[Path, bool], None] | None = None
    tunnel: Callable[..., TunnelResult] = run_tunnel
    _distilled: str = ""  # the fingerprint distillation last saw
    _reading: Reading | None = None  # the last pass's reading, reused while the file is unchanged

    def tick(self, path: Path, now: dt.datetime | None = None) -> dict:
        """One pass of the state machine for the session at `path`; returns the last metrics line."""
        s = self.settings
        now = now or dt.datetime.now(dt.timezone.utc)
        nudged = new_window.on_session(s, path.stem)
        if nudged is not None:
            metric(
                s,
                {
                    "decision": "note",
                    "session": path.stem,
                    "reason": f"the chat moved to a new session after /new: continuation nudge {nudged}",
                },
            )
        state = KeeperState.load(s.keeper_state, now)
        loaded = replace(state)
        today = shanghai_date(now)
        if state.day != today:
            state.day, state.runs_today = today, 0
        try:
            reading = read(path, s, now, self._reading)
            self._reading = reading
        except (OmbreError, OSError) as exc:
            self._save_if_changed(state, loaded)
            return metric(s, {"decision": "skip", "reason": f"cannot read the session: {exc}", "session": path.stem})
        decision = decide(state, reading, s, now)
        refusal = refused_for(state, reading, decision.action)
        if refusal is not None:
            decision = Decision(
                "skip",
                f"{decision.action} was refused for this file as it is "
                f"({refusal['reason']}); tried again once the session changes",
            )
        if decision.action != "skip" and self.bridge is None:
            # Without a bridge nothing would resume the new file: the chat would go on in the old one.
            decision = Decision("skip", "no bridge to re-bind (set OMBRE_BRIDGE): automatic swaps are off")
        base = {"session": reading.session, "used_pct": reading.used_pct, "fingerprint": reading.fingerprint}
        # asked when the chat is idle and the file changed since it last asked (reading a long transcript every
        # pass would cost seconds), and always right before a forge
        idle_and_new = reading.idle_s >= s.idle_secs and reading.fingerprint != self._distilled
        if self.distill is not None and (decision.action == "forge" or idle_and_new):
            self._distilled = reading.fingerprint
            try:
                self.distill(path, decision.action == "forge")
            except Exception as exc:  # noqa: BLE001 — distillation failing never blocks the keeper or a swap
                metric(s, {**base, "decision": "note", "reason": f"distill failed: {exc}"})
        if decision.action == "skip":
            self._save_if_changed(state, loaded)
            return metric(s, {**base, "decision": "skip", "reason": decision.reason})
        # Written before the run: a crash inside it must not forget that a run started.
        setattr(state, f"last_{decision.action}", now.isoformat(timespec="seconds"))
        setattr(state, f"armed_{decision.action}", False)
        state.runs_today += 1
        state.save(s.keeper_state)
        metric(s, {**base, "decision": "trigger", "mode": decision.action, "reason": decision.reason})
        try:
            result = self.tunnel(s, path, TunnelOptions(mode=decision.action), bridge=self.bridge, holder=self.holder)
        except Exception as exc:  # noqa: BLE001 — recorded, counted, and the breaker decides
            if is_refusal(exc):
                return self._refused(state, base, decision, reading, exc)
            return self._failed(state, base, decision, str(exc))
        if not result.ok:
            return self._failed(state, base, decision, result.rebind, result)
        state.failures = 0
        state.save(s.keeper_state)
        return metric(
            s,
            {
                **base,
                "decision": "ok",
                "mode": decision.action,
                "new_sid": result.new_sid,
                "hold": result.hold,
                "rebind": result.rebind,
                "pct_after": result.forge.get("pct_after"),
            },
        )

    def _save_if_changed(self, state: KeeperState, loaded: KeeperState) -> None:
        # a skip is the usual pass (every 30 s): only a re-arm or a new day needs a write (a missing or
        # unreadable file loads with no day, so it always counts as a new day)
        if state != loaded:
            state.save(self.settings.keeper_state)

    def _refused(self, state: KeeperState, base: dict, decision: Decision, reading: Reading, exc: Exception) -> dict:
        """The file cannot be rewritten as it is: remember it, so the next passes skip it instead of failing
        into the breaker; a new turn changes the fingerprint and lifts it."""
        reason = exc.message if isinstance(exc, OmbreError) else str(exc)
        entry = {
            "fingerprint": reading.fingerprint,
            "session": reading.session,
            "path": reading.path,
            "mode": decision.action,
            "reason": reason.splitlines()[0][:300],
            "at": base.get("at") or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        state.refused = (state.refused + [entry])[-REFUSALS_KEPT:]
        state.save(self.settings.keeper_state)
        return metric(
            self.settings,
            {
                **base,
                "decision": "fail",
                "mode": decision.action,
                "error": reason,
                "refused": True,
                "breaker": state.breaker,
            },
        )

    def _failed(
        self, state: KeeperState, base: dict, decision: Decision, error: str, result: TunnelResult | None = None
    ) -> dict:
        s = self.settings
        state.failures += 1
        state.breaker = state.failures >= s.max_failures
        state.save(s.keeper_state)
        return metric(
            s,
            {
                **base,
                "decision": "fail",
                "mode": decision.action,
                "error": error,
                "hold": result.hold if result else None,
                "breaker": state.breaker,
            },
        )


def is_refusal(exc: BaseException) -> bool:
    """A rewrite refused for what the file holds (a shape or line it cannot carry, a broken invariant), not for
    a passing condition (a turn in flight, a bridge, a full disk): trying the same file again cannot help."""
    if isinstance(exc, LiveSessionError):
        return False
    return isinstance(exc, (InvariantError, SelectionError, TranscriptError))


def refused_for(state: KeeperState, reading: Reading, mode: str) -> dict | None:
    return (
        next((r for r in state.refused if r.get("fingerprint") == reading.fingerprint and r.get("mode") == mode), None)
        if mode != "skip"
        else None
    )


def standing_refusals(state: KeeperState) -> list[dict]:
    """Refusals whose file is still as it was refused (a changed file is tried again)."""
    out = []
    for r in state.refused:
        try:
            now = Fingerprint.of(Path(r["path"]))
        except (OSError, KeyError, TypeError):
            continue
        if f"{now.size}:{now.mtime_ns}" == r.get("fingerprint"):
            out.append(r)
    return out


def status(s: Settings, path: Path | None, bridge: Bridge | None, now: dt.datetime | None = None) -> dict:
    """What `ombre keeper status` shows."""
    now = now or dt.datetime.now(dt.timezone.utc)
    state = KeeperState.load(s.keeper_state, now)
    reading = None
    if path is not None:
        try:
            reading = asdict(read(path, s, now))
        except (OmbreError, OSError) as exc:
            reading = {"error": str(exc)}
    bound = None
    if bridge is not None:
        try:
            bound = bridge.bound_sid()
        except OmbreError as exc:
            bound = f"unreadable: {exc.message}"
    newest = newest_written(s)
    return {
        "auto_forge": s.auto_forge,
        "reading": reading,
        "last_diet": state.last_diet,
        "last_forge": state.last_forge,
        "seeded": state.seeded,
        "diet_cooldown_left_min": _minutes_left(s.diet_cooldown_mins, state.cooling_from("diet"), now),
        "forge_cooldown_left_min": _minutes_left(s.forge_cooldown_mins, state.cooling_from("forge"), now),
        "today": state.runs_today if state.day == shanghai_date(now) else 0,
        "max_per_day": s.max_per_day,
        "failures_in_a_row": state.failures,
        "breaker": state.breaker,
        "bound_sid": bound,
        "newest_sid": newest,
        "bound_is_newest": bound is None or newest is None or bound == newest,
        "last_outcomes": jsonl_log.read(s.metrics_log, limit=20),
        "note": state.note,
        "refused": standing_refusals(state),
    }


def seed(s: Settings, now: dt.datetime | None = None, by: str = "ombre keeper seed") -> str:
    """Start both cooldowns now (after a deploy or a parser change), so the keeper cannot fire back
    to back; today's count, failures and the breaker are kept. Returns the time written."""
    now = now or dt.datetime.now(dt.timezone.utc)
    state = KeeperState.load(s.keeper_state, now)
    stamp = now.isoformat(timespec="seconds")
    state.seeded = stamp
    state.note = f"seeded by {by} {stamp}: cooldowns start now"
    state.save(s.keeper_state)
    return stamp


def newest_written(s: Settings) -> str | None:
    """The newest session id a diet, forge or tunnel wrote (from the run log)."""
    for entry in reversed(jsonl_log.read(s.history_log, limit=200)):
        if entry.get("ok") and entry.get("new_sid"):
            return entry["new_sid"]
    return None


def reset(s: Settings, now: dt.datetime | None = None) -> None:
    """Close the breaker (after the person fixed what made the runs fail); cooldowns and counts stay."""
    state = KeeperState.load(s.keeper_state, now or dt.datetime.now(dt.timezone.utc))
    state.failures, state.breaker = 0, False
    state.save(s.keeper_state)


def watched(s: Settings, bridge: Bridge | None, session: str | None) -> Path:
    """The session to watch this pass: the bridge's bound one, else the newest in the given project (a forged
    successor is newer than what was named)."""
    if bridge is not None:
        bound = bridge.bound_sid()
        if bound:
            return find_session(bound, s.projects_dir)
    start = find_session(session, s.projects_dir)
    return find_session(str(start.parent), s.projects_dir)


def run_forever(
    keeper: Keeper, session: str | None, *, interval: float, once: bool, report: Callable[[dict], None]
) -> None:
    """`ombre keeper run`: a pass every `interval` seconds on the watched session, each outcome reported; an
    error of one pass is that pass's outcome, and the next pass comes anyway."""
    while True:
        try:
            entry = keeper.tick(watched(keeper.settings, keeper.bridge, session))
        except OmbreError as exc:
            entry = {"decision": "skip", "reason": exc.message}
        report(entry)
        if once:
            return
        time.sleep(interval)
