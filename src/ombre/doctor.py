"""`ombre doctor`: the set-up's checklist as one command.

Each check reads what the other commands already keep — the memory service's /health, the install plan, the
bridge and keeper state, the run and distillation logs, the database and its backups — and says, when it
fails, what to do. `fix` does only the safe ones: seed the keeper's cooldowns, take a backup, start a bridge
that an interrupted swap left stopped (from the tunnel's journal).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from . import jsonl_log
from .app import bridge as bridge_of
from .app import open_store
from .client import health as probe
from .errors import OmbreError
from .inject.install import plan
from .memory import backup
from .settings import Settings
from .transcript.sessions import find_session
from .tunnel import cc_connect, new_window
from .tunnel.keeper import KeeperState, newest_written, seed, standing_refusals
from .tunnel.tunnel import journal_path, recover
from .write.async_distill import reads_from, started

BACKUP_MAX_AGE = dt.timedelta(days=2)
SESSION_MAX_BYTES = 50_000_000  # past this a bound session is carrying unsquashed images or tool output


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    todo: str = ""  # what to do when it failed
    fixed: str = ""  # what --fix did about it


def _same_place(a: str, b: str) -> bool:
    loopback = {"127.0.0.1", "localhost", "::1"}
    pa, pb = urlsplit(a), urlsplit(b)

    def host(p):
        return "loopback" if p.hostname in loopback else p.hostname

    return (host(pa), pa.port or 80) == (host(pb), pb.port or 80)


def _serve(s: Settings, health: dict | None, own_url: str | None = None) -> Check:
    """`health`: the service's /health (None: nothing answered); `own_url`: where it answers, when the
    caller is the service itself (the dashboard)."""
    if own_url and not _same_place(own_url, s.memory_url):
        # the dashboard's own service is up by definition; what matters is whether the hooks reach it
        return Check(
            "memory service",
            False,
            f"this service answers at {own_url}, but the hooks and the CLI ask {s.memory_url}",
            f"set OMBRE_URL={own_url} where they run, then `ombre install claude-code` "
            "again (it passes OMBRE_URL to the hooks)",
        )
    if health is None:
        return Check(
            "memory service",
            False,
            f"nothing answers at {s.memory_url}",
            "start it: `ombre serve` (or `systemctl --user start ombre-serve` after `ombre install service`)",
        )
    ok = health.get("status") == "ok"
    if "version" not in health:  # a service with a token tells the tokenless only whether it is up
        return Check(
            "memory service",
            ok,
            f"{health.get('status')} at {s.memory_url} (it has a token and says no more without it)",
            "" if ok else "set OMBRE_TOKEN to see why",
        )
    return Check(
        "memory service",
        ok,
        f"{health.get('status')} at {s.memory_url}, version {health.get('version')}, "
        f"{health.get('memories')} memories" + ("" if ok else f": {health.get('reason')}"),
        "" if ok else "see the reason; `ombre serve` logs it at start",
    )


def _installed(s: Settings) -> Check:
    try:
        pending = [c for c in plan(s, install=True, env=dict(os.environ)) if c.changed]
    except OmbreError as exc:
        return Check("hooks and MCP", False, exc.message, exc.hint)
    if pending:
        return Check(
            "hooks and MCP",
            False,
            "not installed for this ombre: " + ", ".join(c.what for c in pending),
            "run `ombre install claude-code`",
        )
    return Check("hooks and MCP", True, "the hooks, the MCP server and the discipline point at this ombre")


def _bridge(s: Settings, fix: bool) -> list[Check]:
    try:
        bridge = bridge_of(s)
    except OmbreError as exc:
        return [Check("bridge", False, exc.message, exc.hint)]
    if bridge is None:
        return [Check("bridge", True, "no bridge configured (OMBRE_BRIDGE): the keeper only watches")]
    checks = []
    if journal_path(s).exists():
        # a tunnel died between stopping the bridge and starting it again: the chat may be down
        check = Check(
            "interrupted swap",
            False,
            f"a tunnel run stopped half-way ({journal_path(s)}): the bridge may still be stopped",
            "`ombre doctor --fix` (or the next tunnel, rebind or keeper pass) starts it again",
        )
        if fix:
            try:
                check.fixed = recover(s, bridge) or "nothing to finish"
            except OmbreError as exc:
                check.todo = f"starting it failed: {exc.message}"
        checks.append(check)
    try:
        bound = bridge.bound_sid()
    except OmbreError as exc:
        return checks + [Check("bridge", False, f"cannot read what the bridge is bound to: {exc.message}", exc.hint)]
    newest = newest_written(s)
    if newest and bound != newest:
        return checks + [
            Check(
                "bridge",
                False,
                f"bound to {bound}, but the newest written session is {newest}",
                f"re-bind it: `ombre rebind {newest}`",
            )
        ]
    if not bound:
        return checks + [Check("bridge", True, "nothing bound yet")]
    try:
        path = bridge.target(bound, find_session(bound, s.projects_dir).parent)
    except OmbreError as exc:
        return checks + [
            Check(
                "bridge",
                False,
                f"bound to {bound}, but the bridge would not resume it: {exc.message}",
                "the next message would start fresh: re-bind it to a session "
                "the bridge can find (`ombre bridge status`)",
            )
        ]
    if path.stat().st_size > SESSION_MAX_BYTES:
        return checks + [
            Check(
                "bridge",
                False,
                f"the bound session is {path.stat().st_size / 1e6:.0f} MB",
                "squash it: `ombre diet` (images and tool output)",
            )
        ]
    return checks + [Check("bridge", True, f"bound to the newest session {bound}, where the bridge looks ({path})")]


def _cc_connect(s: Settings) -> list[Check]:
    """cc-connect's own window work undoes the keeper's: /compact behind its back, or a fresh session."""
    if s.bridge != "cc-connect":
        return []
    try:
        config = (
            cc_connect.read_config(s.cc_connect_config, s.user_home or Path.home()) if s.cc_connect_config else None
        )
        project = config.project(s.bridge_project) if config and config.projects else None
    except OmbreError as exc:
        return [Check("cc-connect settings", False, exc.message, exc.hint)]
    if config is None or project is None:  # a project is only ever read from a config
        return [
            Check(
                "cc-connect settings",
                True,
                f"no cc-connect config at {s.cc_connect_config}: cannot tell "
                "whether its auto-compress is off (it is off unless [projects.auto_compress] enables it)",
            )
        ]
    wrong = []
    if project.auto_compress and s.auto_forge:
        wrong.append("[projects.auto_compress] enabled = true (it sends /compact: the summary the keeper avoids)")
    if project.reset_on_idle_mins:
        wrong.append(f"reset_on_idle_mins = {project.reset_on_idle_mins} (a fresh session after that much quiet)")
    return [
        Check(
            "cc-connect settings",
            not wrong,
            "; ".join(wrong) or f"project {project.name}: auto-compress off, no reset on idle",
            f"in {config.path}, project {project.name}: set auto_compress enabled = false and "
            "reset_on_idle_mins = 0, then restart cc-connect"
            if wrong
            else "",
        )
    ]


def _waiting_for_new(s: Settings) -> list[Check]:
    flag = new_window.waiting(s)
    if flag is None:
        return []
    return [
        Check(
            "waiting for /new",
            True,
            f"since {flag.set_at}: when the chat leaves {flag.old_sid} the keeper "
            f"sends the continuation once ({flag.handoff})",
        )
    ]


def _keeper(s: Settings) -> list[Check]:
    checks = []
    if not s.keeper_state.exists():
        checks.append(
            Check(
                "keeper cooldowns",
                False,
                f"no state file at {s.keeper_state}",
                "seed it: `ombre keeper seed` (so a first pass cannot fire at once)",
            )
        )
    else:
        state = KeeperState.load(s.keeper_state, dt.datetime.now(dt.timezone.utc))
        checks.append(
            Check(
                "keeper cooldowns",
                not state.breaker,
                f"last diet {state.last_diet or 'never'}, last forge {state.last_forge or 'never'}"
                + (f"; seeded {state.seeded}" if state.seeded else "")
                + (f"; breaker OPEN after {state.failures} failures" if state.breaker else ""),
                "fix the error of the last runs, then `ombre keeper reset`" if state.breaker else "",
            )
        )
    if s.keeper_state.exists():
        refused = standing_refusals(KeeperState.load(s.keeper_state, dt.datetime.now(dt.timezone.utc)))
        checks.append(
            Check(
                "keeper refusals",
                not refused,
                "; ".join(f"{r['mode']} of session {r['session']} refused: {r['reason']}" for r in refused)
                or "no session the keeper cannot rewrite",
                "the keeper skips these sessions until they change; `ombre forge SESSION --dry-run` shows "
                "why, and a report with the file helps fix it"
                if refused
                else "",
            )
        )
    runs = [e for e in jsonl_log.read(s.metrics_log, limit=200) if e.get("decision") in ("ok", "fail")][-20:]
    failed = [e for e in runs if e.get("decision") == "fail"]
    last = failed[-1].get("error") or failed[-1].get("reason") if failed else ""
    checks.append(
        Check(
            "keeper runs",
            not (runs and runs[-1].get("decision") == "fail"),
            f"{len(runs) - len(failed)} ok, {len(failed)} failed of the last {len(runs)}"
            + (f"; last error: {last}" if last else ""),
            "read the error above and `ombre keeper status`" if failed else "",
        )
    )
    return checks


def _writes(s: Settings) -> Check:
    outcomes = jsonl_log.read(s.distill_log, limit=20)
    failed = [o for o in outcomes if str(o.get("reason", "")).startswith("model failed") or o.get("fallback")]
    held = sum(1 for o in outcomes for h in o.get("held") or [] if h.get("stored"))
    ok = len(failed) < max(1, len(outcomes)) or not outcomes
    return Check(
        "distillation",
        ok,
        f"last {len(outcomes)} runs: {held} memories held, {len(failed)} model failures or fallbacks",
        "" if ok else "check OMBRE_LLM and `ombre distill status`",
    )


def _distill_start(s: Settings) -> Check:
    if not s.async_distill:
        return Check("distillation start", True, "background distillation is off (ASYNC_DISTILL=0)")
    return Check(
        "distillation start",
        True,
        reads_from(s) + ("" if started(s) else " (no install recorded: `ombre install claude-code` records it)"),
    )


NOT_VERDICTS = ("imported", "edited")  # trace entries that arbitration did not write


def _arbitration(s: Settings) -> list[Check]:
    """How the last writes were arbitrated: open contradictions wait for the person; a failed arbitration
    (the model down) wrote memories as 未确认 and says which backend to look at."""
    if not s.db and (not s.memory_db.exists() or backup.problem(s.memory_db) is not None):
        return []  # the database check says what is wrong
    try:
        store = open_store(s)
    except OmbreError:
        return []  # the database check says what is wrong
    try:
        open_conflicts = [m for m in store.list() if m.conflicts]
        gate = store.gate_log(50)
        verdicts: dict[str, int] = {}
        for m in store.list(archived=None, limit=200):
            for t in m.trace[-5:]:
                if t.get("action") in NOT_VERDICTS:
                    continue
                verdicts[t.get("action", "?")] = verdicts.get(t.get("action", "?"), 0) + 1
    finally:
        store.close()
    failed = [g for g in gate[:20] if any(r.startswith("仲裁没有完成") for r in g.reasons)]
    detail = (
        f"{len(open_conflicts)} open contradiction(s)"
        + (f" ({', '.join(m.id for m in open_conflicts[:5])})" if open_conflicts else "")
        + "; recent verdicts: "
        + (", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())) or "none")
        + (f"; {len(failed)} of the last {min(20, len(gate))} writes could not be arbitrated" if failed else "")
    )
    todo = (
        "the model behind arbitration failed: check OMBRE_LLM, `ombre distill status`; those memories are 未确认"
        if failed
        else "ask the person which is right, then `ombre memories archive` the wrong one"
        if open_conflicts
        else ""
    )
    return [Check("arbitration", not failed, detail, todo)]


def _pool_check(s: Settings, health: dict | None) -> Check:
    """PostgreSQL's connection pool as the running service reports it (its /health), else its settings."""
    pool = (health or {}).get("pool")
    bounds = f"{s.pg_pool_min}–{s.pg_pool_max} connections, {s.pg_pool_timeout_ms / 1000:g} s wait"
    if not isinstance(pool, dict):
        return Check(
            "database pool",
            True,
            f"{bounds} (OMBRE_PG_POOL_MIN/MAX/TIMEOUT_MS); the running service's own use shows here when it answers",
        )
    busy = pool.get("waiting", 0) or pool.get("timeouts", 0)
    return Check(
        "database pool",
        not busy,
        f"{pool.get('open')} open of {pool.get('max')} ({pool.get('idle')} idle), "
        f"{pool.get('waiting')} waiting now, {pool.get('timeouts')} timed out since the service started",
        "" if not busy else "raise OMBRE_PG_POOL_MAX (within PostgreSQL's max_connections) and restart `ombre serve`",
    )


def _database(s: Settings, fix: bool, health: dict | None = None) -> list[Check]:
    if s.db:
        try:
            store = open_store(s)
            try:
                n = store.count()
            finally:
                store.close()
        except OmbreError as exc:
            return [Check("database", False, exc.message, exc.hint)]
        return [
            Check(
                "database",
                True,
                f"PostgreSQL {s.database_label}: {n} memories (back it up with pg_dump or your provider's backups)",
            ),
            _pool_check(s, health),
        ]
    if not s.memory_db.exists():
        return [Check("database", True, f"no memory database yet ({s.memory_db}): nothing held")]
    wrong = backup.problem(s.memory_db)
    checks = [
        Check(
            "database",
            wrong is None,
            wrong or f"{s.memory_db} passes SQLite's check",
            "" if wrong is None else "restore the newest good backup: `ombre backup --list`, `ombre restore FILE`",
        )
    ]
    newest = backup.backups(s.backups_dir)[-1:]
    age = dt.datetime.now().timestamp() - newest[0].stat().st_mtime if newest else None
    fresh = age is not None and age < BACKUP_MAX_AGE.total_seconds()
    check = Check(
        "backup",
        fresh,
        f"newest {newest[0]} ({age / 3600:.0f} h old)" if age is not None else "no backup yet",
        "" if fresh else "take one: `ombre backup` (ombre serve takes one a day)",
    )
    if not fresh and fix and wrong is None:
        made = backup.take(s.memory_db, s.backups_dir, s.backups_keep)
        check.fixed = f"took {made}"
    checks.append(check)
    return checks


def run(s: Settings, fix: bool = False, serve_health: dict | None = None, serve_url: str | None = None) -> list[Check]:
    """`serve_health` and `serve_url`: the service's own /health and address, when the caller is `ombre serve`
    itself (the dashboard)."""
    # asked once: the service check and the pool's read the same answer (a hung service costs one wait)
    health = serve_health if serve_health is not None else probe(s.memory_url, timeout=2, token=s.token)
    checks = [
        _serve(s, health, serve_url),
        _installed(s),
        *_bridge(s, fix),
        *_cc_connect(s),
        *_waiting_for_new(s),
        *_keeper(s),
        _writes(s),
        _distill_start(s),
        *_arbitration(s),
        *_database(s, fix, health),
    ]
    if fix:
        for c in checks:
            if c.name == "keeper cooldowns" and not c.ok and not s.keeper_state.exists():
                c.fixed = f"seeded the cooldowns at {seed(s, by='ombre doctor --fix')}"
    return checks


def report(checks: list[Check]) -> str:
    lines = []
    for c in checks:
        mark = "ok  " if c.ok else ("FIXED" if c.fixed else "FAIL")
        lines.append(f"{mark:<5} {c.name}: {c.detail}")
        if c.fixed:
            lines.append(f"      fixed: {c.fixed}")
        elif not c.ok and c.todo:
            lines.append(f"      to do: {c.todo}")
    failed = sum(1 for c in checks if not c.ok and not c.fixed)
    lines.append("all good" if not failed else f"{failed} check(s) need you")
    return "\n".join(lines)


def as_dicts(checks: list[Check]) -> list[dict]:
    return [asdict(c) for c in checks]
