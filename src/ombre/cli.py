"""The `ombre` command: thin adapters that parse options, call the library, and print the result."""
from __future__ import annotations

import functools
import json
import sys
import threading
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Callable

import click

from .errors import OmbreError, UsageError
from .settings import Settings


def _emit(as_json: bool, value: object, human: Callable[[], str]) -> None:
    if as_json:
        data = value.to_dict() if hasattr(value, "to_dict") else (
            asdict(value) if is_dataclass(value) else value)
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        click.echo(human())


def _say(exc: OmbreError) -> None:
    click.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=True)


def handles_errors(fn: Callable) -> Callable:
    """Print an OmbreError as message + hint (or JSON) and exit with its code; no tracebacks for users."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OmbreError as exc:
            if kwargs.get("as_json"):
                click.echo(json.dumps(exc.to_dict(), ensure_ascii=False, indent=2))
            _say(exc)
            sys.exit(exc.exit_code)

    return wrapper


def _session(settings: Settings, ref: str | None) -> Path:
    from .transcript.sessions import find_session

    return find_session(ref, settings.projects_dir)


json_option = click.option("--json", "as_json", is_flag=True, help="Print a machine-readable result.")
dry_run_option = click.option("--dry-run", is_flag=True, help="Report what would happen; write nothing.")
session_argument = click.argument("session", required=False)


class OmbreGroup(click.Group):
    """The CLI's one net for what a person can get wrong outside a command's own handling — a bad setting
    read before any command runs, a folder that cannot be created or written: the one-line message and
    hint, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OmbreError as exc:
            _say(exc)
            sys.exit(exc.exit_code)
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            _say(UsageError(f"cannot use{where}: {exc.strerror or exc}",
                            hint="check OMBRE_HOME and the paths you gave: each must be a folder or file you can "
                                 "write"))
            sys.exit(2)


@click.group(cls=OmbreGroup)
@click.version_option(package_name="ombre")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Ombre keeps a long-running Claude Code companion the same person while its bill stays low.

    SESSION is a session id, an id prefix, a path to a .jsonl file, or a folder (its newest session);
    without it, the newest session of the current folder's project is used.
    """
    ctx.obj = Settings.from_env()


@main.command()
@session_argument
@click.option("--limit", default=20, show_default=True, help="How many recent user messages to show.")
@json_option
@click.pass_obj
@handles_errors
def anchors(settings: Settings, session: str | None, limit: int, as_json: bool) -> None:
    """Recent real user messages with idx, short uuid and Shanghai time (for --keep-from/--keep-to)."""
    from .window.anchors import anchors as list_anchors

    path = _session(settings, session)
    items = list_anchors(path, limit)
    _emit(as_json, {"session": path.stem, "path": str(path), "anchors": [a.to_dict() for a in items]},
          lambda: _format_anchors(path, items))


def _format_anchors(path: Path, items: list) -> str:
    lines = [f"session {path.stem}  ({path})"]
    if not items:
        lines.append("  no real user messages or compaction summaries on the active chain")
    lines += [_anchor_line(a) for a in items]
    return "\n".join(lines)


def _anchor_line(a) -> str:
    return f"  idx {a.idx:>5}  {a.short_uuid}  {a.time}  {a.preview}"


@main.command()
@session_argument
@click.option("--retain", type=int, default=None, help="Tokens of recent dialogue to keep [default: "
              "AUTO_FORGE_DIET_RETAIN or 150000].")
@click.option("--squash", type=int, default=None, help="Cap, in characters, for each tool payload [default: "
              "AUTO_FORGE_DIET_SQUASH or 2000].")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def diet(settings: Settings, session: str | None, retain: int | None, squash: int | None, dry_run: bool,
         as_json: bool) -> None:
    """Squash tool output and images, keep the dialogue and thinking; write a new session id."""
    from .window.diet import DietOptions, run

    path = _session(settings, session)
    result = run(path, DietOptions.from_settings(settings, retain=retain, squash=squash, dry_run=dry_run))
    _swapped(settings, result, "diet")
    _emit(as_json, result, lambda: format_result(result))


def selection_options(fn: Callable) -> Callable:
    """forge's selection options (seed §6), shared by `forge` and `tunnel`."""
    options = [
        click.option("--retain", type=int, default=None, help="Keep the recent tail up to this many tokens "
                     "[default: AUTO_FORGE_RETAIN or 60000]."),
        click.option("--keep-days", default=None, help="Keep the turns of these Shanghai days: 2026-08-03,2026-08-04."),
        click.option("--keep-from-idx", type=int, default=None),
        click.option("--keep-from-uuid", default=None),
        click.option("--keep-from-ts", default=None),
        click.option("--keep-to-idx", type=int, default=None),
        click.option("--keep-to-uuid", default=None),
        click.option("--keep-to-ts", default=None, help="Range ends: one of idx/uuid/ts per end (see `ombre "
                     "anchors`); times without a zone are Asia/Shanghai; Unix seconds or ms also work."),
        click.option("--max-kept", type=int, default=None, help="Trim a larger kept set from its oldest end "
                     "[default: AUTO_FORGE_MAX_KEPT or 100000]."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _selector(settings: Settings, **selection):
    from .window.select import build_selector

    return build_selector(settings.forge_retain, settings.forge_max_kept, **selection)


def _read_handoff_file(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the handoff file {path}: {exc}", hint="give a UTF-8 text file") from None
    if not text.strip():
        raise UsageError(f"the handoff file {path} is empty", hint="write the handoff text first")
    return text


@main.command()
@session_argument
@selection_options
@click.option("--squash", type=int, default=None, help="Also cap each tool payload at this many characters.")
@click.option("--inject", "inject_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Put this handoff text in as the first (clearly marked) user event.")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def forge(settings: Settings, session: str | None, squash: int | None, inject_file: Path | None, dry_run: bool,
          as_json: bool, **selection) -> None:
    """Cut to the recent raw tail (thinking kept) or a chosen range; write a new session id."""
    from .window.forge import ForgeOptions, run

    selector = _selector(settings, **selection)
    inject_text = _read_handoff_file(inject_file) if inject_file is not None else None
    path = _session(settings, session)
    result = run(path, ForgeOptions(selector=selector, squash=squash, inject_text=inject_text,
                                    inject_source=str(inject_file) if inject_file else None, dry_run=dry_run,
                                    window=settings.context_window, history=settings.history_log))
    _swapped(settings, result, "forge")
    _emit(as_json, result, lambda: format_result(result))


def _swapped(settings: Settings, result, what: str) -> None:
    """A written forge or diet carries the continuation: a /new still awaited must not send a second one."""
    from .tunnel import new_window

    if not result.dry_run:
        new_window.clear(settings, f"{what} wrote {result.new_session}")


def format_result(r) -> str:
    head = f"{r.mode} (dry run: nothing written)" if r.dry_run else f"{r.mode}: written"
    lines = [
        head,
        f"  source    {r.source_session}",
        f"  file      {r.source_path}",
        f"  kept      {r.events_kept}/{r.events_total} events, {r.turns_kept}/{r.turns_total} turns, "
        f"~{r.tokens_kept:,} tokens",
        f"  context   {_pct(r.pct_before)} → ~{_pct(r.pct_after)} of {r.window:,}",
        f"  thinking  {r.thinking_kept} block(s) kept" + (f", {r.thinking_dropped} dropped" if r.thinking_dropped
                                                          else ""),
        f"  tools     {r.tool_pairs_kept} tool_use/tool_result pair(s) kept",
        f"  squashed  {r.payloads_squashed} payload(s), {r.images_squashed} image(s), "
        f"{r.chars_removed:,} characters removed",
    ]
    sel = r.selection
    if sel.get("days"):
        lines.append(f"  days      {', '.join(sel['days'])} (Asia/Shanghai)")
    for side in ("from", "to"):
        end = sel.get(side)
        if end:
            lines.append(f"  {side:<9} {end['requested']} → idx {end['idx']} (turn-aligned idx {end['turn_idx']})"
                         f"  {end['when']}  {end['preview']}")
    lines.append(f"  idx       {sel.get('kept_from_idx')} … {sel.get('kept_to_idx')}")
    if sel.get("turns_trimmed_for_max_kept"):
        lines.append(f"  trimmed   {sel['turns_trimmed_for_max_kept']} oldest turn(s) over --max-kept")
    if r.carried:
        names = {"summary": "the compaction summary", "request": "the cut turn's opening request"}
        lines.append("  carried   " + " and ".join(names[c] for c in r.carried) + ", verbatim, in the first user "
                     "message (what the model knew of the part cut away)")
    if r.injected:
        lines.append("  handoff   injected as the first user event")
    lines.append(f"  new sid   {r.new_session}" + (" (preview)" if r.dry_run else ""))
    if not r.dry_run:
        lines.append(f"  new file  {r.new_path} ({r.bytes_after:,} bytes, was {r.bytes_before:,})")
        lines.append("  next      re-bind your bridge to the new sid (Claude Code: --resume " + r.new_session + ")")
    for w in r.warnings:
        lines.append(f"  warning   {w}")
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "?%" if value is None else f"{value:.1f}%"


@main.command()
@session_argument
@json_option
@click.pass_obj
@handles_errors
def usage(settings: Settings, session: str | None, as_json: bool) -> None:
    """How full the session's context window is (stored usage) and what our estimate says."""
    from .transcript.usage import read_usage

    report = read_usage(_session(settings, session), settings.context_window)
    _emit(as_json, report, lambda: report.format())


@main.command()
@click.option("--days", type=int, default=None, help="Only the last N days (today included) [default: all].")
@json_option
@click.pass_obj
@handles_errors
def stats(settings: Settings, days: int | None, as_json: bool) -> None:
    """The bill per day from the usage stored in the transcripts: tokens, cache hits, cost, swaps, background."""
    from .transcript.bill import compute

    bill = compute(settings, days)

    def human() -> str:
        rows = [f"{'day':<11}{'requests':>9}{'input':>10}{'cache+':>12}{'cache read':>13}{'output':>10}{'hit':>7}"
                f"{'cost $':>10}"]
        for d in bill.days + [bill.total]:
            hit = f"{d.hit_ratio:.0%}" if d.hit_ratio is not None else "-"
            rows.append(f"{d.day:<11}{d.requests:>9,}{d.input:>10,}{d.cache_creation:>12,}{d.cache_read:>13,}"
                        f"{d.output:>10,}{hit:>7}{d.cost:>10.2f}"
                        + (f"  swaps: {', '.join(d.swaps)}" if d.swaps and d.day != "total" else "")
                        + (f"  background: {d.background_calls} calls ${d.background_cost:.3f}"
                           if d.background_calls else ""))
        rows.append("priced as: " + (", ".join(f"{m} → {p}" for m, p in sorted(bill.models.items())) or "(no usage)")
                    + f"; {bill.files} transcript files under {settings.projects_dir}")
        return "\n".join(rows)

    _emit(as_json, bill.to_dict(), human)


@main.command()
@json_option
@click.pass_obj
def config(settings: Settings, as_json: bool) -> None:
    """Show the effective settings (from the environment)."""
    from .write.llm import ledger

    data = settings.as_dict()
    data["llm_today"] = ledger(settings).today()  # background model spend beside the caps that bound it
    _emit(as_json, data, lambda: "\n".join(f"{k:<22} {v}" for k, v in data.items()))


@main.command()
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the demo's Claude home in this folder instead of a temporary one.")
@click.pass_obj
@handles_errors
def demo(settings: Settings, keep: Path | None) -> None:
    """Show diet, forge, memory and the per-turn block, on a bundled real session in a temporary home."""
    from .demo import run_demo
    from .transcript.usage import UsageReport
    from .window.forge import ForgeResult

    for step in run_demo(settings, keep):
        click.echo(f"\n== {step.title}")
        value = step.value
        if isinstance(value, ForgeResult):
            click.echo(format_result(value))
        elif isinstance(value, UsageReport):
            click.echo(value.format())
        elif isinstance(value, list):
            click.echo("\n".join(_anchor_line(a) for a in value))
        elif isinstance(value, str) and value:
            click.echo(value)


def _via_serve(settings: Settings, route: str, body: dict) -> dict | None:
    """Ask a running `ombre serve` on this very database (its models are loaded: no model load per command);
    None when none answers, and the command opens the store itself. Once the service has answered /health,
    its answer is the answer: a refusal is raised as such, and a lost reply is never retried locally (a hold
    could land twice)."""
    import urllib.error
    import urllib.request

    headers = {"content-type": "application/json"} | ({"authorization": f"Bearer {settings.token}"}
                                                       if settings.token else {})
    from .client import health

    up = health(settings.memory_url, timeout=0.5, token=settings.token)
    # ours when it serves this store (the owner is told which), or this namespace to this namespace's token
    # (which is not told the store); anything else — nothing, another store, a service that says only "ok" —
    # is not ours to write through
    ours = up is not None and up.get("namespace") == settings.namespace and (
        up.get("database") == settings.database_label or "database" not in up and bool(settings.token))
    if not ours:
        return None
    request = urllib.request.Request(settings.memory_url + route, json.dumps(body, ensure_ascii=False).encode(),
                                     headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            answer = json.loads(exc.read())
        except ValueError:
            answer = {}
        raise UsageError(answer.get("message") or f"ombre serve refused the request ({exc.code})",
                         hint=answer.get("hint", "")) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"ombre serve did not answer ({exc}); the request may or may not have been carried out",
                         hint="check with `ombre memories list`, then try again") from None


def _service(settings: Settings):
    from .app import open_service

    return open_service(settings)


@main.command()
@click.argument("content")
@click.option("--title", default="")
@click.option("--type", "kind", default="事件", show_default=True, help="偏好 | 事件 | 规则 | 承诺 | 约定 | 会话交接 | …")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--importance", type=int, default=5, show_default=True)
@click.option("--pinned", is_flag=True)
@click.option("--valence", type=float, default=0.5, show_default=True)
@click.option("--arousal", type=float, default=0.3, show_default=True)
@click.option("--domain", default="")
@click.option("--event-date", default=None, help="The day it happened, YYYY-MM-DD.")
@click.option("--quote", default=None, help="The person's own words (≤ 2 sentences); without it: 未确认.")
@click.option("--from-session", default=None, help="The session the words come from.")
@click.option("--auto", "auto", is_flag=True, help="Judge it as an automatic write (stricter gate).")
@json_option
@click.pass_obj
@handles_errors
def hold(settings: Settings, content: str, title: str, kind: str, tags: tuple[str, ...], importance: int,
         pinned: bool, valence: float, arousal: float, domain: str, event_date: str | None, quote: str | None,
         from_session: str | None, auto: bool, as_json: bool) -> None:
    """Remember one thing (write_gate, scarcity and the evidence chain apply)."""
    from .memory.hold import HoldRequest, HoldResult

    req = HoldRequest(content=content, title=title, type=kind, tags=list(tags), importance=importance, pinned=pinned,
                      valence=valence, arousal=arousal, domain=domain, event_date=event_date, quote=quote,
                      from_session=from_session, source="auto" if auto else "manual")
    served = _via_serve(settings, "/v1/hold", asdict(req))
    if served is not None:
        result = HoldResult(**served)
    else:
        service = _service(settings)
        try:
            result = service.hold(req)
        finally:
            service.close()
    _emit(as_json, result, lambda: _format_hold(result))
    if not result.stored:
        sys.exit(3)


def _format_hold(r) -> str:
    head = f"held {r.id} ({r.status}, importance {r.importance}{', pinned' if r.pinned else ''})" if r.stored \
        else f"not held: {r.decision}"
    verdict = []
    if r.arbitration:
        a = r.arbitration
        verdict = [f"  verdict  {a['action']}" + (f" → {a['target']}" if a.get("target") else "")
                   + f" (by {a['by']})" + (f": {a['reason']}" if a.get("reason") else "")]
    return "\n".join([head] + verdict + [f"  reason   {x}" for x in r.reasons] + [f"  warning  {x}" for x in r.warnings]
                      + [f"  scarcity {x}" for x in r.scarcity])


@main.command()
@click.argument("query", required=False, default="")
@click.option("--max-results", type=int, default=5, show_default=True)
@click.option("--max-tokens", type=int, default=1800, show_default=True)
@click.option("--domain", default=None)
@click.option("--valence", type=float, default=None)
@click.option("--arousal", type=float, default=None)
@click.option("--session-start", is_flag=True, help="With no query: the handoff block for a new window.")
@click.option("--context", "context", multiple=True,
              help="An earlier utterance of the person (repeat, oldest first): what a fragment of a query is about.")
@json_option
@click.pass_obj
@handles_errors
def breath(settings: Settings, query: str, max_results: int, max_tokens: int, domain: str | None,
           valence: float | None, arousal: float | None, session_start: bool, context: tuple[str, ...],
           as_json: bool) -> None:
    """Recall memories for a query (keywords and two encoders, rank-fused), or the handoff block at
    session start."""
    from .memory.breath import BreathRequest

    req = BreathRequest(query=query, max_results=max_results, max_tokens=max_tokens, domain=domain, valence=valence,
                        arousal=arousal, is_session_start=session_start, context=list(context) or None)
    served = _via_serve(settings, "/v1/breath", asdict(req))
    if served is not None:
        _emit(as_json, served, lambda: "\n".join([served.get("text", "")]
                                                  + [f"  degraded {d}" for d in served.get("degraded", [])]))
        return
    service = _service(settings)
    try:
        result = service.breath(req)
    finally:
        service.close()
    _emit(as_json, result, lambda: _format_breath(result))


def _format_breath(r) -> str:
    return "\n".join([r.render()] + [f"  degraded {d}" for d in r.degraded])


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--token", envvar="OMBRE_TOKEN", default=None, help="Bearer token (required off loopback).")
@click.option("--allow-host", "allow_host", multiple=True, metavar="NAME",
              help="Another name requests may use for this service (besides 127.0.0.1, localhost, ::1 and --host).")
@click.option("--stdio", is_flag=True, help="Serve MCP over stdio: relayed to the running service (OMBRE_URL), "
              "answered in this process only when that does not answer.")
@click.pass_obj
@handles_errors
def serve(settings: Settings, host: str, port: int, token: str | None, allow_host: tuple[str, ...],
          stdio: bool) -> None:
    """Run the memory service: HTTP API (/v1/hold, /v1/breath, /v1/memories/ID, /health) and MCP at /mcp."""
    from .memory import backup

    def open_checked():
        if not settings.db:  # a PostgreSQL store is checked and backed up by its own server
            backup.check_at_start(settings.memory_db, settings.backups_dir)
        return _service(settings)

    if stdio:
        # what Claude Code starts for each of its processes: a relay to the running service (OMBRE_URL),
        # which opens the store in this process only when that service does not answer
        from .serve.mcp import Relay, build_mcp

        relay = Relay(settings.memory_url + "/mcp", token or settings.token, open_checked)
        try:
            build_mcp(relay=relay).run("stdio")
        finally:
            relay.close()
        return
    service = open_checked()
    try:
        import uvicorn

        from .serve.http import check_bind, create_app
        from .wire import allowed_hosts

        check_bind(host, token)
        service.warm()
        # memories without a vector from every encoder (an older store, a model that was away) are embedded
        # while serving; recall finds them by their other signals meanwhile (progress: GET /health)
        threading.Thread(target=service.embed_pending, name="ombre-embed", daemon=True).start()
        if not settings.db:
            threading.Thread(target=backup.daily, args=(settings.memory_db, settings.backups_dir,
                                                        settings.backups_keep), name="ombre-backup", daemon=True).start()
        # the ready line is printed once the socket listens (uvicorn's own "started" is at log level info)
        config = uvicorn.Config(create_app(service, token, allowed_hosts(host, allow_host)), host=host, port=port,
                                log_level="warning")
        server = uvicorn.Server(config)

        def ready() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
                click.echo(f"ombre serve ready on http://{host}:{bound} (MCP at /mcp, health at /health; "
                           f"database {settings.database_label})", err=True)

        threading.Thread(target=ready, name="ombre-ready", daemon=True).start()
        server.run()
        if not server.started:
            raise UsageError(f"ombre serve could not listen on {host}:{port} (is the port in use?)",
                             hint="stop what holds the port, or pick another with --port")
    finally:
        service.close()


@main.command("ui")
@click.option("--no-browser", is_flag=True, help="Print the address only.")
@click.pass_obj
@handles_errors
def ui_command(settings: Settings, no_browser: bool) -> None:
    """Open the dashboard (the running `ombre serve` at OMBRE_URL, started first if nothing answers)."""
    import subprocess
    import time
    import urllib.parse
    import webbrowser

    from .client import health

    if health(settings.memory_url, timeout=2) is None:
        where = urllib.parse.urlsplit(settings.memory_url)
        if where.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise UsageError(f"nothing answers at {settings.memory_url}", hint="start `ombre serve` on that machine")
        logs = settings.ombre_home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "serve.log", "ab") as log:
            subprocess.Popen([sys.executable, "-m", "ombre.cli", "serve", "--host", where.hostname,
                              "--port", str(where.port or 8765)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             start_new_session=True)
        click.echo(f"started ombre serve (log: {logs / 'serve.log'})", err=True)
        deadline = time.monotonic() + 90
        while health(settings.memory_url, timeout=2) is None:
            if time.monotonic() > deadline:
                raise UsageError(f"ombre serve did not answer at {settings.memory_url} within 90 s",
                                 hint=f"read {logs / 'serve.log'}")
            time.sleep(0.3)
    url = settings.memory_url + "/ui" + (f"?token={urllib.parse.quote(settings.token)}" if settings.token else "")
    click.echo(url)
    if not no_browser:
        webbrowser.open(url)  # nothing happens on a machine without a browser; the address is printed


@main.command()
@click.option("--fix", is_flag=True, help="Do the safe fixes: seed the keeper's cooldowns, take a backup.")
@json_option
@click.pass_obj
@handles_errors
def doctor(settings: Settings, fix: bool, as_json: bool) -> None:
    """Check the whole set-up (seed §11.4): service, hooks, bridge, keeper, distillation, database, backup."""
    from . import doctor as checkup

    checks = checkup.run(settings, fix=fix)
    _emit(as_json, checkup.as_dicts(checks), lambda: checkup.report(checks))
    if any(not c.ok and not c.fixed for c in checks):
        sys.exit(1)


def _sqlite_only(settings: Settings, what: str) -> None:
    if settings.db:
        raise UsageError(f"`ombre {what}` works on the SQLite file; OMBRE_DB is a PostgreSQL store",
                         hint="back it up with its server's tools (pg_dump, or the managed service's backups)")


@main.command("backup")
@click.option("--list", "listing", is_flag=True, help="List the backups instead of taking one.")
@json_option
@click.pass_obj
@handles_errors
def backup_command(settings: Settings, listing: bool, as_json: bool) -> None:
    """Back up the memory database (a consistent copy, safe while `ombre serve` runs)."""
    from .memory import backup

    _sqlite_only(settings, "backup")
    if listing:
        found = [{"path": str(p), "bytes": p.stat().st_size} for p in backup.backups(settings.backups_dir)]
        _emit(as_json, found, lambda: "\n".join(f"{f['path']}  {f['bytes']:,} bytes" for f in found)
              or "no backups yet")
        return
    made = backup.take(settings.memory_db, settings.backups_dir, settings.backups_keep)
    report = {"backup": str(made), "bytes": made.stat().st_size, "kept": len(backup.backups(settings.backups_dir))}
    _emit(as_json, report, lambda: f"backed up to {made} ({report['bytes']:,} bytes; {report['kept']} kept)")


@main.command("restore")
@click.argument("file", type=click.Path(path_type=Path))
@json_option
@click.pass_obj
@handles_errors
def restore_command(settings: Settings, file: Path, as_json: bool) -> None:
    """Put a backup in place of the memory database (checked first; the current one is kept aside)."""
    _sqlite_only(settings, "restore")
    from .client import health
    from .memory import backup

    # the service of this OMBRE_HOME holds the database open; one of another home on that port does not
    running = health(settings.memory_url, timeout=1, token=settings.token)
    if running is not None:
        home = running.get("home")
        if home is None or Path(home).resolve() == settings.ombre_home.resolve():
            raise UsageError(f"ombre serve is running at {settings.memory_url} and holds the database open"
                             + ("" if home else " (it does not say which OMBRE_HOME it serves)"),
                             hint="stop it, run `ombre restore` again, then start it")
    aside = backup.restore(file, settings.memory_db)
    report = {"restored": str(file), "database": str(settings.memory_db), "previous_kept_at": str(aside) if aside else None}
    _emit(as_json, report, lambda: f"restored {file} to {settings.memory_db}"
          + (f"; the previous database is kept at {aside}" if aside else ""))


@main.group()
def namespace() -> None:
    """Namespaces: one person or companion each, on one store (a token per namespace for `ombre serve`)."""


@namespace.command("add")
@click.argument("name")
@json_option
@click.pass_obj
@handles_errors
def namespace_add(settings: Settings, name: str, as_json: bool) -> None:
    """Make a bearer token for namespace NAME (printed once; the store keeps only its digest)."""
    from .memory import namespaces

    service = _service(settings)
    try:
        token = namespaces.add(service, name)
    finally:
        service.close()
    _emit(as_json, {"namespace": name, "token": token},
          lambda: f"{token}\nnamespace {name}: give this token to its clients as OMBRE_TOKEN (shown only now)")


@namespace.command("list")
@json_option
@click.pass_obj
@handles_errors
def namespace_list(settings: Settings, as_json: bool) -> None:
    """Every namespace on this store, with its memories and tokens."""
    service = _service(settings)
    try:
        rows = service.store.namespaces()
    finally:
        service.close()
    _emit(as_json, [{"namespace": n, "memories": m, "tokens": t} for n, m, t in rows],
          lambda: "\n".join(f"{n:<20} {m:>6} memories  {t} token(s)" for n, m, t in rows) or "(none)")


@main.group()
def memories() -> None:
    """List, inspect, pin, archive, restore, export and import memories."""


def _memory_line(m) -> str:
    flags = ("📌" if m.pinned else "") + ("[archived]" if m.archived else "")
    status = "" if m.status == "confirmed" else "（未确认）"
    from .transcript.chain import clip

    return f"{m.id}  {m.type}{status} i{m.importance} {flags} {clip(m.content, 60)}"  # one row, whatever the text


@memories.command("list")
@click.option("--archived", is_flag=True, help="Show archived memories instead.")
@click.option("--pinned", is_flag=True, help="Only pinned memories.")
@click.option("--type", "kind", default=None)
@click.option("--limit", type=int, default=50, show_default=True)
@json_option
@click.pass_obj
@handles_errors
def memories_list(settings: Settings, archived: bool, pinned: bool, kind: str | None, limit: int,
                  as_json: bool) -> None:
    service = _service(settings)
    try:
        items = service.store.list(archived=archived, pinned=True if pinned else None, type=kind, limit=limit)
    finally:
        service.close()
    _emit(as_json, [m.to_dict() for m in items], lambda: "\n".join(_memory_line(m) for m in items) or "(none)")


def _show_memory(settings: Settings, memory_id: str, as_json: bool, **change: object) -> None:
    service = _service(settings)
    try:
        edited = service.edit(memory_id, **change) if change else None
        m = edited.memory if edited else service.get(memory_id)
    finally:
        service.close()
    if edited is not None:
        _emit(as_json, {**m.to_dict(), "changed": edited.changed, "notes": edited.notes},
              lambda: "\n".join([_memory_line(m), *(f"  {n}" for n in edited.changed + edited.notes)]))
        return
    detail = (f"\n  created {settings.local(m.created)}, last active {settings.local(m.last_active)}"
              "\n" + json.dumps(m.to_dict(), ensure_ascii=False, indent=2))
    _emit(as_json, m.to_dict(), lambda: _memory_line(m) + detail)


memory_id_argument = click.argument("memory_id")


@memories.command("show")
@memory_id_argument
@json_option
@click.pass_obj
@handles_errors
def memories_show(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Show one memory with its evidence."""
    _show_memory(settings, memory_id, as_json)


@memories.command("trace")
@memory_id_argument
@json_option
@click.pass_obj
@handles_errors
def memories_trace(settings: Settings, memory_id: str, as_json: bool) -> None:
    """A memory's history: what arbitration did to it, and what replaced it."""
    service = _service(settings)
    try:
        report = service.history(memory_id)
    finally:
        service.close()

    def human() -> str:
        m = report["memory"]
        lines = [f"{m['id']}  {m['type']}  {m['content']}" + (f"（情境：{m['situation']}）" if m["situation"] else ""),
                 f"  current   {'yes' if report['current'] else 'no'}"]
        lines += [f"  conflict  with {c}" for c in m["conflicts"]]
        lines += [f"  {settings.local(t['at'])}  {t['action']} {t['other']}  by {t['by']}"
                  + (f"  原话「{t['quote']}」" if t.get("quote") else "") + (f"  ({t['reason']})" if t.get("reason") else "")
                  for t in report["trace"]]
        lines += [f"  replaced by {r['id']}: {r['content']}" for r in report["replaced_by"]]
        return "\n".join(lines)

    _emit(as_json, report, human)


@memories.command("pin")
@memory_id_argument
@json_option
@click.pass_obj
@handles_errors
def memories_pin(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Pin a memory (the pinned core)."""
    _show_memory(settings, memory_id, as_json, pinned=True)


@memories.command("unpin")
@memory_id_argument
@json_option
@click.pass_obj
@handles_errors
def memories_unpin(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Unpin a memory."""
    _show_memory(settings, memory_id, as_json, pinned=False)


@memories.command("archive")
@memory_id_argument
@click.option("--force", is_flag=True, help="Archive even a commitment (承诺/约定).")
@json_option
@click.pass_obj
@handles_errors
def memories_archive(settings: Settings, memory_id: str, force: bool, as_json: bool) -> None:
    """Archive a memory; commitments need --force."""
    _show_memory(settings, memory_id, as_json, archived=True, force=force)


@memories.command("restore")
@memory_id_argument
@json_option
@click.pass_obj
@handles_errors
def memories_restore(settings: Settings, memory_id: str, as_json: bool) -> None:
    """Restore an archived memory; its last_active is refreshed so it does not sink again."""
    _show_memory(settings, memory_id, as_json, archived=False)


@memories.command("edit")
@memory_id_argument
@click.option("--content", default=None, help="New text (the quote, the evidence, stays as it was said).")
@click.option("--title", default=None)
@click.option("--type", "kind", default=None, help="New type (事件 | 偏好 | 承诺 | …).")
@click.option("--importance", type=int, default=None, help="1–10; the caps on 9 and 10 still hold.")
@json_option
@click.pass_obj
@handles_errors
def memories_edit(settings: Settings, memory_id: str, content: str | None, title: str | None, kind: str | None,
                  importance: int | None, as_json: bool) -> None:
    """Correct a memory: the same checks and caps as a hold, a trace entry, a gate-log line."""
    if content is title is kind is importance is None:
        raise UsageError("nothing to change", hint="give --content, --title, --type or --importance")
    _show_memory(settings, memory_id, as_json, content=content, title=title, kind=kind, importance=importance)


@memories.command("forget")
@memory_id_argument
@click.option("--yes", is_flag=True, help="Really delete it (there is no undo but a backup).")
@json_option
@click.pass_obj
@handles_errors
def memories_forget(settings: Settings, memory_id: str, yes: bool, as_json: bool) -> None:
    """Delete a memory for good (the gate log keeps one line that it was forgotten)."""
    if not yes:
        raise UsageError(f"forgetting {memory_id} deletes it for good", hint="add --yes to confirm "
                         "(`ombre memories archive` only hides it)")
    service = _service(settings)
    try:
        m = service.forget(memory_id)
    finally:
        service.close()
    _emit(as_json, {"forgotten": m.id, "content": m.content}, lambda: f"forgot {m.id}: {m.content[:60]}")


@memories.command("migrate")
@click.option("--to", "target", required=True, help="The PostgreSQL store: postgresql://user:password@host/dbname.")
@click.option("--namespace", default=None, help="Copy only this namespace [default: every one].")
@click.option("--as", "rename", default=None, metavar="NAME",
              help="Land the store's one namespace under this name (several people's stores into one database).")
@json_option
@click.pass_obj
@handles_errors
def memories_migrate(settings: Settings, target: str, namespace: str | None, rename: str | None,
                     as_json: bool) -> None:
    """Copy this SQLite store into PostgreSQL, where its namespaces must still be empty (one transaction,
    verified; the source untouched)."""
    from .memory.migrate import migrate
    from .settings import database_url, namespace_name

    url = database_url(target)
    if url is None:
        raise UsageError("--to is empty", hint="give postgresql://user:password@host/dbname")
    report = migrate(settings.memory_db, url, namespace, None if rename is None else namespace_name(rename))
    _emit(as_json, report, lambda: f"copied {report.memories} memories ({report.vectors} vectors), "
          f"{report.gate_log} gate-log lines and {report.meta} meta rows of {', '.join(report.namespaces) or 'no'} "
          f"namespace(s) to {report.target}; counts and checksums "
          f"match ({report.checksum[:12]}). Set OMBRE_DB to use it.")


@memories.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--follow-symlinks", is_flag=True, help="PATH may be a symbolic link: write the file it points to.")
@click.pass_obj
@handles_errors
def memories_export(settings: Settings, path: Path, follow_symlinks: bool) -> None:
    """Write every memory as JSON lines into the regular file PATH (never over a device, pipe or folder)."""
    service = _service(settings)
    try:
        n = service.export(path, follow_symlinks)
    finally:
        service.close()
    click.echo(f"exported {n} memories to {path.resolve() if follow_symlinks else path}")


@memories.command("import")
@click.argument("path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.pass_obj
@handles_errors
def memories_import(settings: Settings, path: Path) -> None:
    """Add memories from an export; every line is checked as hold checks it (a refused line is named by its
    number and the rest still import); ids already present are skipped."""
    service = _service(settings)
    try:
        result = service.import_(path)
    finally:
        service.close()
    click.echo(f"imported {result.added} memories, skipped {result.skipped} already present"
               + (f", refused {len(result.refused)} line(s)" if result.refused else ""))
    if result.refused:
        for n, why in result.refused[:50]:
            click.echo(f"  {path}:{n}: {why}", err=True)
        raise UsageError(f"{len(result.refused)} line(s) of {path} were refused (listed above); the others were "
                         "imported", hint="fix those lines and import again: what is already in is skipped")


@main.group()
def hook() -> None:
    """Claude Code hooks (installed by `ombre install claude-code`). They read the hook's JSON on stdin and
    print the turn's memory block; on any failure they print nothing and exit 0."""


@hook.command("user-prompt-submit")
def hook_user_prompt_submit() -> None:
    """Recalled cards for this prompt, as UserPromptSubmit additionalContext."""
    from .inject.hooks import main as run_hook

    sys.exit(run_hook("user-prompt-submit"))


@hook.command("session-start")
def hook_session_start() -> None:
    """The handoff context after a window swap, as SessionStart additionalContext."""
    from .inject.hooks import main as run_hook

    sys.exit(run_hook("session-start"))


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8766, show_default=True)
@click.option("--upstream", default=None, help="Anthropic API base URL to forward to [env OMBRE_UPSTREAM, "
              "default https://api.anthropic.com].")
@click.option("--memory-url", default=None, help="Recall through this running `ombre serve` instead of in "
              "this process.")
@click.option("--allow-host", "allow_host", multiple=True, metavar="NAME",
              help="Another name requests may use for the gateway (besides 127.0.0.1, localhost, ::1 and --host).")
@click.pass_obj
@handles_errors
def gateway(settings: Settings, host: str, port: int, upstream: str | None, memory_url: str | None,
            allow_host: tuple[str, ...]) -> None:
    """Anthropic-compatible proxy that adds the turn's memory block to the last user message only."""
    import dataclasses

    import uvicorn

    from .inject.gateway import LocalRecall, create_gateway, remote_recall
    from .serve.http import check_bind
    from .wire import allowed_hosts

    check_bind(host, None)
    local = None
    if memory_url:
        recall = remote_recall(dataclasses.replace(settings, memory_url=memory_url.rstrip("/")))
    else:
        from .app import open_service

        recall = local = LocalRecall(lambda: open_service(settings, arbitrate=False), settings)
        problem = local.warm()
        if problem:
            click.echo(f"warning: memory side unavailable, forwarding without cards: {problem}", err=True)
    app = create_gateway((upstream or settings.upstream).rstrip("/"), recall,
                         timeout_s=settings.inject_timeout_ms / 1000, hosts=allowed_hosts(host, allow_host))
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        if local is not None:
            local.close()


def _install(settings: Settings, install: bool, dry_run: bool, as_json: bool, cache_1h: bool = True) -> None:
    import os

    from .inject.install import apply, plan, precompile
    from .write.async_distill import mark_started, reads_from

    changes = [c for c in plan(settings, install=install, env=dict(os.environ), cache_1h=cache_1h) if c.changed]
    backups = [] if dry_run else apply(changes)
    if install and not dry_run:
        precompile()
        mark_started(settings)
    verb = "install" if install else "uninstall"
    summary = {"dry_run": dry_run, "changed": [{"path": str(c.path), "what": c.what} for c in changes],
               "backups": [str(b) for b in backups]}

    # distillation and arbitration use rules unless told otherwise; this Claude Code can be their model
    model_hint = ("" if not install or settings.llm == "claude-code" else
                  "\nbackground model: rules (the default). To let distillation and arbitration ask this Claude Code\n"
                  "with its own login (no API key; a small model, capped per day), set OMBRE_LLM=claude-code\n"
                  "(OMBRE_LLM_MODEL=haiku, OMBRE_LLM_DAILY_CALLS / OMBRE_LLM_DAILY_TOKENS) for `ombre serve` and the keeper.")
    summary["background_model"] = settings.llm
    distill_hint = f"\ndistillation: {reads_from(settings)}" if install else ""
    if install:
        summary["distillation"] = reads_from(settings)

    def human() -> str:
        if not changes:
            return f"nothing to {verb}: Claude Code is already set up that way" + model_hint + distill_hint
        head = f"{'would change' if dry_run else 'changed'}:"
        lines = [head] + [f"  {c.path}  ({c.what})" for c in changes]
        if dry_run:
            lines += ["", *(c.diff() for c in changes)]
        lines += [f"  backup {b}" for b in backups]
        return "\n".join(lines) + model_hint + distill_hint

    _emit(as_json, summary, human)


@main.group()
def install() -> None:
    """Wire Ombre into an agent runtime."""


@install.command("claude-code")
@click.option("--cache-1h/--no-cache-1h", default=True, show_default=True,
              help="Set ENABLE_PROMPT_CACHING_1H=1 for Claude Code sessions (1-hour prompt cache).")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def install_claude_code(settings: Settings, cache_1h: bool, dry_run: bool, as_json: bool) -> None:
    """Add the hooks to settings.json, register the MCP server, import the memory discipline in CLAUDE.md."""
    _install(settings, True, dry_run, as_json, cache_1h)


@install.command("service")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def install_service(settings: Settings, dry_run: bool, as_json: bool) -> None:
    """Write systemd user units for `ombre serve` and `ombre keeper run` (restart on failure, journal logs)."""
    _units(True, dry_run, as_json)


def _units(install: bool, dry_run: bool, as_json: bool) -> None:
    import os

    from .inject.install import ombre_executable
    from .tunnel.units import UNITS, apply, how_to_enable, plan

    changes = [c for c in plan(install=install, env=dict(os.environ), exe=ombre_executable() if install else None,
                               workdir=Path.cwd()) if c.changed]
    if not dry_run:
        apply(changes)
    summary = {"dry_run": dry_run, "changed": [str(c.path) for c in changes]}

    def human() -> str:
        if not changes:
            return "nothing to change: the units are already " + ("there" if install else "gone")
        lines = [f"{'would write' if dry_run else 'wrote'}:" if install else f"{'would remove' if dry_run else 'removed'}:"]
        lines += [f"  {c.path}" for c in changes]
        if dry_run:
            lines += ["", *(c.diff() for c in changes)]
        elif install:
            lines += ["", how_to_enable(list(UNITS))]
        else:
            lines += ["", "stop them first if they run: systemctl --user disable --now " + " ".join(UNITS)]
        return "\n".join(lines)

    _emit(as_json, summary, human)


@main.group()
def uninstall() -> None:
    """Take Ombre out of an agent runtime."""


@uninstall.command("service")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def uninstall_service(settings: Settings, dry_run: bool, as_json: bool) -> None:
    """Remove the systemd user units `ombre install service` wrote (and only those)."""
    _units(False, dry_run, as_json)


@uninstall.command("claude-code")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def uninstall_claude_code(settings: Settings, dry_run: bool, as_json: bool) -> None:
    """Remove what `ombre install claude-code` added (each changed file is backed up first)."""
    _install(settings, False, dry_run, as_json)


@main.group()
def handoff() -> None:
    """Handoff packs for a window swap (seed §4.4)."""


@handoff.command("prepare")
@session_argument
@click.option("--days", default=None, help="Build it from these Shanghai days only: 2026-08-03,2026-08-04.")
@click.option("--write", "write_file", is_flag=True,
              help="For /new: put it in the work dir as SESSION_HANDOFF.md and wait for the session id to change.")
@click.option("--to", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The folder for SESSION_HANDOFF.md [default: the work dir the session recorded].")
@json_option
@click.pass_obj
@handles_errors
def handoff_prepare(settings: Settings, session: str | None, days: str | None, write_file: bool,
                    folder: Path | None, as_json: bool) -> None:
    """Print the handoff pack (fixed fields, Chinese); edit it and pass it to `ombre tunnel --handoff-file`,
    or --write it for the person's own /new (the keeper then sends the continuation once)."""
    from .transcript.sessions import recorded_cwd
    from .tunnel import new_window
    from .tunnel.handoff import prepare
    from .window.select import parse_days

    path = _session(settings, session)
    pack = prepare(path, parse_days(days) if days else ())
    if not write_file:
        _emit(as_json, pack, pack.render)
        return
    folder = folder or recorded_cwd(path)
    if folder is None:
        raise UsageError(f"{path.name} records no work dir", hint="say where with --to DIR")
    flag = new_window.write(settings, path.stem, pack.render(), folder)
    _emit(as_json, {**pack.to_dict(), "written": flag.handoff, "waiting_for_new": flag.old_sid},
          lambda: f"wrote {flag.handoff}\nwaiting for /new: when the chat leaves {flag.old_sid}, the keeper sends "
                  "the continuation once (a forge or tunnel before that cancels it)")


def _bridge(settings: Settings):
    from .tunnel.bridges import from_settings

    return from_settings(settings)


@main.command()
@session_argument
@click.option("--diet", "as_diet", is_flag=True, help="Diet instead of forge (squash, keep the dialogue).")
@selection_options
@click.option("--squash", type=int, default=None, help="Cap tool payloads [default: AUTO_FORGE_DIET_SQUASH].")
@click.option("--handoff-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Use this (edited) handoff pack instead of preparing one.")
@click.option("--handoff-days", default=None, help="Prepare the handoff from these Shanghai days.")
@click.option("--no-hold", is_flag=True, help="Do not hold the handoff as a 会话交接 memory.")
@click.option("--no-nudge", is_flag=True, help="Do not send the continuation nudge.")
@dry_run_option
@json_option
@click.pass_obj
@handles_errors
def tunnel(settings: Settings, session: str | None, as_diet: bool, squash: int | None, handoff_file: Path | None,
           handoff_days: str | None, no_hold: bool, no_nudge: bool, dry_run: bool, as_json: bool,
           **selection) -> None:
    """Swap windows: backup → handoff → hold → forge (or diet) → stop bridge → re-bind → start → nudge."""
    from .app import holder
    from .tunnel.tunnel import TunnelOptions, run
    from .window.select import parse_days

    options = TunnelOptions(
        mode="diet" if as_diet else "forge",
        selector=None if as_diet else _selector(settings, **selection), squash=squash,
        handoff_days=parse_days(handoff_days) if handoff_days else (),
        handoff_text=_read_handoff_file(handoff_file) if handoff_file else None,
        hold=not no_hold, nudge=not no_nudge, dry_run=dry_run)
    bridge = _bridge(settings)
    result = run(settings, _session(settings, session), options, bridge=bridge,
                 holder=None if dry_run else holder(settings),
                 on_step=(lambda step: None) if as_json else (lambda step: click.echo(f"… {step}", err=True)))
    _emit(as_json, result, lambda: format_tunnel(result))
    if not result.ok:
        sys.exit(6)


def format_tunnel(r) -> str:
    lines = [f"tunnel ({r.mode}{', dry run: nothing written or re-bound' if r.dry_run else ''})",
             f"  session   {r.old_sid}", f"  bound     {r.bound_sid or '(no bridge, or unknown)'}"]
    if r.backup:
        lines.append(f"  backup    {r.backup}")
    if r.forge:
        f = r.forge
        lines.append(f"  kept      {f['events_kept']}/{f['events_total']} events, ~{f['tokens_kept']:,} tokens, "
                     f"{_pct(f['pct_before'])} → ~{_pct(f['pct_after'])}")
    lines.append(f"  new sid   {r.new_sid}" + (" (preview)" if r.dry_run else ""))
    lines.append(f"  hold      {r.hold}")
    if r.handoff_preview:
        lines.append("  handoff   " + r.handoff_preview.replace("\n", "\n            "))
    lines += [f"  re-bind   {r.rebind}", f"  started   {'yes' if r.started else 'no'}", f"  nudge     {r.nudge}"]
    lines += [f"  warning   {w}" for w in r.warnings]
    return "\n".join(lines)


@main.command()
@click.argument("new_sid")
@json_option
@click.pass_obj
@handles_errors
def rebind(settings: Settings, new_sid: str, as_json: bool) -> None:
    """Bind the bridge to a session a tunnel already wrote (after a failed re-bind), without cutting again."""
    from .tunnel.tunnel import rebind as do_rebind

    bridge = _bridge(settings)
    if bridge is None:
        raise UsageError("no bridge is configured", hint="set OMBRE_BRIDGE (cc-connect, command or file)")
    result = do_rebind(settings, bridge, new_sid, settings.projects_dir)
    _emit(as_json, result, lambda: format_tunnel(result))
    if not result.ok:
        sys.exit(6)


@main.group()
def bridge() -> None:
    """The chat bridge that resumes the session (cc-connect, command, file)."""


@bridge.command("status")
@json_option
@click.pass_obj
@handles_errors
def bridge_status(settings: Settings, as_json: bool) -> None:
    """Compare the bound session id with the newest one a diet/forge/tunnel wrote."""
    from .tunnel.keeper import newest_written

    b = _bridge(settings)
    bound = b.bound_sid() if b is not None else None
    newest = newest_written(settings)
    report = {"bridge": b.name if b else "none", "bound_sid": bound, "newest_sid": newest,
              "differ": bool(bound and newest and bound != newest)}

    def human() -> str:
        lines = [f"bridge   {report['bridge']}", f"bound    {bound or '?'}", f"newest   {newest or '(none written)'}"]
        if report["differ"]:
            lines.append(f"differ   yes: the bridge still resumes an older session (ombre rebind {newest})")
        return "\n".join(lines)

    _emit(as_json, report, human)


@main.group()
def keeper() -> None:
    """The sidecar that runs diet and forge by itself (seed §10)."""


def _keeper_session(settings: Settings, bridge, session: str | None) -> Path:
    """The session to watch this tick: the bridge's bound one, else the newest in the given project."""
    from .transcript.sessions import find_session

    if bridge is not None:
        bound = bridge.bound_sid()
        if bound:
            return find_session(bound, settings.projects_dir)
    start = find_session(session, settings.projects_dir)
    return find_session(str(start.parent), settings.projects_dir)  # a forged successor is newer


@keeper.command("run")
@session_argument
@click.option("--once", is_flag=True, help="One pass of the state machine, then exit.")
@click.option("--interval", type=int, default=30, show_default=True, help="Seconds between passes.")
@click.pass_obj
@handles_errors
def keeper_run(settings: Settings, session: str | None, once: bool, interval: int) -> None:
    """Watch the session; diet at AUTO_FORGE_DIET_PCT, forge at AUTO_FORGE_PCT, when idle, within cooldowns."""
    import time

    from .app import holder, keeper_distill
    from .tunnel.keeper import Keeper

    b = _bridge(settings)
    k = Keeper(settings, b, holder(settings), distill=keeper_distill(settings))
    while True:
        try:
            entry = k.tick(_keeper_session(settings, b, session))
        except OmbreError as exc:
            entry = {"decision": "skip", "reason": exc.message}
        click.echo(json.dumps(entry, ensure_ascii=False))
        if once:
            return
        time.sleep(interval)


@keeper.command("status")
@session_argument
@json_option
@click.pass_obj
@handles_errors
def keeper_status(settings: Settings, session: str | None, as_json: bool) -> None:
    """Used %, last diet and forge, cooldowns left, today's count, bound vs newest sid, last 20 outcomes."""
    from .tunnel.keeper import status

    b = _bridge(settings)
    try:
        path = _keeper_session(settings, b, session)
    except OmbreError:
        path = None
    report = status(settings, path, b)

    def human() -> str:
        r = report["reading"] or {}
        lines = [f"auto      {'on' if report['auto_forge'] else 'off (AUTO_FORGE=0)'}",
                 f"session   {r.get('session', '?')}  used {_pct(r.get('used_pct'))}",
                 f"diet      last {settings.local(report['last_diet'])}, cooldown {report['diet_cooldown_left_min']} min left",
                 f"forge     last {settings.local(report['last_forge'])}, cooldown {report['forge_cooldown_left_min']} min left",
                 *([f"seeded    {settings.local(report['seeded'])} (cooldowns started, nothing ran)"]
                   if report["seeded"] else []),
                 f"today     {report['today']}/{report['max_per_day']} runs",
                 f"breaker   {'OPEN (ombre keeper reset)' if report['breaker'] else 'closed'}, "
                 f"{report['failures_in_a_row']} failure(s) in a row",
                 f"bound     {report['bound_sid'] or '?'}  newest written {report['newest_sid'] or '?'}"
                 + ("" if report["bound_is_newest"] else "  ← DIFFER")]
        lines += [f"refused   {r['mode']} of {r['session']} ({r['at']}): {r['reason']}; skipped until the session "
                  "changes" for r in report["refused"]]
        lines += [f"  {o.get('at', '')}  {o.get('decision', '?'):<7} {o.get('mode', '')} "
                  f"{o.get('reason') or o.get('error') or o.get('new_sid') or ''}" for o in report["last_outcomes"]]
        return "\n".join(lines)

    _emit(as_json, report, human)


@keeper.command("seed")
@json_option
@click.pass_obj
@handles_errors
def keeper_seed(settings: Settings, as_json: bool) -> None:
    """Start both cooldowns now (seed §5: after a deploy or a parser change), so the keeper cannot fire back
    to back; today's count, failures and the breaker are kept as they are."""
    from .tunnel.keeper import seed

    stamp = seed(settings)
    report = {"state": str(settings.keeper_state), "seeded": stamp,
              "diet_cooldown_mins": settings.diet_cooldown_mins, "forge_cooldown_mins": settings.forge_cooldown_mins}
    _emit(as_json, report, lambda: f"cooldowns seeded at {settings.local(stamp)}: no diet for {settings.diet_cooldown_mins} min, "
                                   f"no forge for {settings.forge_cooldown_mins} min ({settings.keeper_state})")


@keeper.command("reset")
@click.pass_obj
@handles_errors
def keeper_reset(settings: Settings) -> None:
    """Close the breaker after fixing what made the automatic runs fail."""
    import datetime as dt

    from .tunnel.keeper import KeeperState

    state = KeeperState.load(settings.keeper_state, dt.datetime.now(dt.timezone.utc))
    state.failures, state.breaker = 0, False
    state.save(settings.keeper_state)
    click.echo("breaker closed; automatic runs resume on the next pass")


@main.group(invoke_without_command=True)
@click.option("--session", default=None, help="The session to read [default: the current project's newest].")
@click.option("--force", is_flag=True, help="Run even if not due (5 new turns or 10 idle minutes).")
@click.option("--explain", is_flag=True,
              help="Also print how the rules read each clause: the act, what decided it, what took it back.")
@dry_run_option
@json_option
@click.pass_context
@handles_errors
def distill(ctx: click.Context, session: str | None, force: bool, explain: bool, dry_run: bool, as_json: bool) -> None:
    """Settle what the person said into memory (0–3 candidates, quoted, through write_gate)."""
    if ctx.invoked_subcommand is not None:
        return
    from .write.async_distill import Distiller
    from .write.llm import from_settings

    settings = ctx.obj
    service = _service(settings)
    try:
        result = Distiller(settings, service, from_settings(settings)).run(_session(settings, session), force=force,
                                                                          dry_run=dry_run, explain=explain)
    finally:
        service.close()

    def human() -> str:
        lines = [f"distill {result.session}: {'ran' if result.ran else 'did not run'} ({result.reason})"
                 + (" — dry run, nothing written" if dry_run else "")]
        lines += [f"  candidate [{c['type']}] {c['content']}  原话「{c['quote']}」" for c in result.candidates]
        lines += [f"  held {h['decision']}: {h['content']}" + (f"  ({'；'.join(h['reasons'])})" if h["reasons"] else "")
                  for h in result.held]
        if result.explain:
            lines.append("  how the rules read each clause:")
            lines += [f"    [{r['act']}] 「{r['clause']}」 — {r['why']}"
                      + (f"; taken back by {r['taken_back']}" if r.get("taken_back") else "")
                      + (f"; left out: {r['left_out']}" if r.get("left_out") else "") for r in result.explain]
        elif explain and result.ran:
            lines.append("  how the rules read each clause: nothing of the person's to read")
        return "\n".join(lines)

    _emit(as_json, result, human)


def _model_spend(m: dict) -> str:
    line = (f"model     {m['backend']}: {m['calls']}/{m['daily_calls']} calls, {m['tokens']}/{m['daily_tokens']} "
            f"tokens today ({m['failed']} failed)")
    return line + ("  — over the cap: the rules answer until tomorrow" if m["over_cap"] else "")


@distill.command("status")
@click.option("--session", default=None)
@json_option
@click.pass_obj
@handles_errors
def distill_status(settings: Settings, session: str | None, as_json: bool) -> None:
    """The cursor, today's automatic holds against the cap, and the last outcomes."""
    from .write.async_distill import status

    service = _service(settings)
    try:
        try:
            path = _session(settings, session)
        except OmbreError:
            path = None
        report = status(settings, service, path)
    finally:
        service.close()

    def human() -> str:
        lines = [f"enabled   {'yes' if report['enabled'] else 'no (ASYNC_DISTILL=0)'}",
                 f"today     {report['auto_holds_today']}/{report['daily_cap']} automatic holds",
                 _model_spend(report["model"])]
        if "session" in report:
            lines.append(f"session   {report['session']}  cursor {(report['cursor'] or {}).get('uuid', 'none')}"
                         f"  new person turns {report['new_person_turns']}")
        lines += [f"  {settings.local(o.get('at'))}  {'ran' if o.get('ran') else 'skip'}  {o.get('reason', '')}"
                  for o in report["last_outcomes"]]
        return "\n".join(lines)

    _emit(as_json, report, human)


if __name__ == "__main__":
    main()
