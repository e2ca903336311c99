"""The dashboard at /ui: pages over the same library functions the CLI calls.

Every page reads through MemoryService, the keeper, the doctor, the bill and the window operations; every
action is a POST carrying the form token (the bearer token, or a per-process secret on a loopback bind
without one), so another site cannot make a browser act here; nothing is decided only here.
"""

from __future__ import annotations

import datetime as dt
import hmac
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote
from zoneinfo import ZoneInfo

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from ... import doctor, jsonl_log
from ...app import bridge as bridge_of
from ...clock import parse_timestamp
from ...errors import OmbreError, UsageError
from ...memory.breath import BreathRequest
from ...memory.namespaces import Tenants
from ...memory.service import MemoryService
from ...settings import Settings
from ...transcript.bill import compute
from ...transcript.sessions import find_session, session_files
from ...transcript.usage import used_pct
from ...tunnel import keeper as k
from ...tunnel import new_window
from ...tunnel.handoff import prepare
from ...tunnel.keeper import KeeperState
from ...tunnel.tunnel import TunnelOptions, run, service_holder
from ...window.anchors import anchors
from ...window.diet import DietOptions
from ...window.diet import run as run_diet
from ...window.forge import ForgeOptions
from ...window.forge import run as run_forge
from ...window.select import build_selector, parse_days
from . import svg
from .text import words

COOKIE = "ombre_token"
LANG_COOKIE = "ombre_lang"
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("ombre.serve.ui", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _int(value: str | None, lo: int = -(10**12), hi: int = 10**12) -> int | None:
    """A whole number from a form or the address, within [lo, hi] (a bound any real value keeps: a number of
    twenty digits is a typo or a probe, and Python would carry it into date arithmetic that overflows)."""
    value = (value or "").strip()
    if not value:
        return None
    if len(value) > 15:
        raise UsageError(f"{value[:20]!r}… is not a number this page takes", hint=f"give a number from {lo} to {hi}")
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{value!r} is not a whole number") from None
    if not lo <= number <= hi:
        raise UsageError(f"{number} is out of range", hint=f"give a number from {lo} to {hi}")
    return number


def unauthorized(request: Request) -> HTMLResponse:
    """What a browser sees at /ui without the token on a bind that needs one."""
    t = words(request.cookies.get(LANG_COOKIE))
    return HTMLResponse(
        TEMPLATES.get_template("error.html").render(
            t=t, path=request.url.path, message=t["no_token"], hint=t["no_token_hint"]
        ),
        status_code=401,
    )


def owner_only(request: Request) -> HTMLResponse | None:
    """The refusal a namespace's token gets on the machine's pages (sessions, transcripts, swaps, the keeper,
    the bill, the hook log): they are the owner's, whoever else shares the service."""
    if getattr(request.state, "owner", False):
        return None
    t = words(request.cookies.get(LANG_COOKIE))
    return HTMLResponse(
        TEMPLATES.get_template("error.html").render(
            t=t, path=request.url.path, message=t["owner_only"], hint=t["owner_only_hint"]
        ),
        status_code=403,
    )


def router(tenants: Tenants, form_token: str) -> APIRouter:
    # sessions, the keeper, the bill and the hook log are this machine's; memories are the request's namespace
    s: Settings = tenants.default.settings

    def memories_of(request: Request) -> MemoryService:
        return tenants.get(getattr(request.state, "namespace", s.namespace))

    zone = ZoneInfo(s.tz)
    r = APIRouter(prefix="/ui")

    def page(request: Request, name: str, code: int = 200, **context: object) -> HTMLResponse:
        lang = request.query_params.get("lang") or request.cookies.get(LANG_COOKIE) or "zh"
        context.setdefault("owner", bool(getattr(request.state, "owner", False)))
        body = TEMPLATES.get_template(f"{name}.html").render(
            t=words(lang),
            lang=lang,
            csrf=form_token,
            local=s.local,
            path=request.url.path,
            done=request.query_params.get("done"),
            **context,
        )
        response = HTMLResponse(body, status_code=code)
        if request.query_params.get("lang"):
            response.set_cookie(LANG_COOKIE, lang, samesite="strict")
        return response

    def failed(request: Request, exc: OmbreError) -> HTMLResponse:
        return page(request, "error", code=422, message=exc.message, hint=exc.hint)

    async def form(request: Request) -> dict[str, str]:
        """The posted fields; refuses a post without the form token (another site's page cannot post here)."""
        fields = {
            k: v[-1]
            for k, v in parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True).items()
        }
        if not hmac.compare_digest(fields.get("csrf", ""), form_token):
            raise PermissionError("missing or wrong form token")
        return fields

    def back(url: str, done: str) -> RedirectResponse:
        return RedirectResponse(f"{url}?done={quote(done)}", status_code=303)

    # -- overview ---------------------------------------------------------------------------------------
    @r.get("", response_class=HTMLResponse)
    @r.get("/", response_class=HTMLResponse, include_in_schema=False)  # /ui/ as people type it
    def overview(request: Request) -> HTMLResponse:
        service = memories_of(request)
        if not request.state.owner:  # a namespace's overview: its own memories, nothing of the machine
            return page(request, "index", health=service.health(), keeper=None, week=None, waiting=None, owner=False)
        state = KeeperState.load(s.keeper_state, dt.datetime.now(dt.timezone.utc)) if s.keeper_state.exists() else None
        return page(
            request,
            "index",
            health=service.health(),
            keeper=asdict(state) if state else None,
            week=compute(s, 7).total,
            waiting=new_window.waiting(s),
            owner=True,
        )

    # -- memories ---------------------------------------------------------------------------------------
    @r.get("/memories", response_class=HTMLResponse)
    def memories(
        request: Request, q: str = "", type: str = "", status: str = "", pinned: str = "", archived: str = ""
    ) -> HTMLResponse:
        service = memories_of(request)
        found: list[dict[str, Any]] = []  # the template's rows: a memory with why and score when searched
        if q.strip():
            result = service.breath(BreathRequest(query=q, max_results=20, max_tokens=20_000), touch=False)
            found = [{"memory": service.store.get(c.id), "why": c.why, "score": c.score} for c in result.cards]
            found = [f for f in found if f["memory"] is not None]
        else:
            rows = service.store.list(
                archived=True if archived else False, pinned=True if pinned else None, type=type or None, limit=500
            )
            found = [{"memory": m, "why": None, "score": None} for m in rows]
        if type and q.strip():
            found = [f for f in found if f["memory"].type == type]
        if status:
            found = [f for f in found if f["memory"].status == status]
        kinds = sorted({m.type for m in service.store.list(archived=None, limit=5_000)})
        return page(
            request,
            "memories",
            found=found,
            q=q,
            kinds=kinds,
            filters={"type": type, "status": status, "pinned": pinned, "archived": archived},
        )

    @r.get("/memories/{memory_id}", response_class=HTMLResponse)
    def memory(request: Request, memory_id: str) -> HTMLResponse:
        service = memories_of(request)
        try:
            report = service.history(memory_id)
        except OmbreError as exc:
            return failed(request, exc)
        others = {c: service.store.get(c) for c in report["memory"]["conflicts"]}
        for t in report["trace"]:
            if t.get("other") and t["other"] not in others:
                others[t["other"]] = service.store.get(t["other"])
        return page(request, "memory", m=service.get(memory_id), report=report, others=others)

    @r.post("/memories/{memory_id}/{action}")
    async def memory_action(request: Request, memory_id: str, action: str):
        service = memories_of(request)
        fields = await form(request)
        url = f"/ui/memories/{memory_id}"
        try:
            if action == "edit":
                service.edit(
                    memory_id,
                    content=fields.get("content"),
                    title=fields.get("title"),
                    kind=fields.get("type") or None,
                    importance=_int(fields.get("importance")),
                )
            elif action in ("pin", "unpin"):
                service.edit(memory_id, pinned=action == "pin")
            elif action in ("archive", "restore"):
                service.edit(memory_id, archived=action == "archive", force=fields.get("force") == "yes")
            elif action == "forget":
                if fields.get("confirm") != "yes":
                    raise UsageError("forgetting needs the confirmation", hint="tick the box and confirm")
                service.forget(memory_id)
                return back("/ui/memories", f"forget {memory_id}")
            else:
                raise UsageError(f"no action {action!r}")
        except OmbreError as exc:
            return failed(request, exc)
        return back(url, action)

    @r.get("/memories/{memory_id}/forget", response_class=HTMLResponse)
    def forget_page(request: Request, memory_id: str) -> HTMLResponse:
        service = memories_of(request)
        try:
            return page(request, "forget", m=service.get(memory_id))
        except OmbreError as exc:
            return failed(request, exc)

    # -- sessions ---------------------------------------------------------------------------------------
    @r.get("/sessions", response_class=HTMLResponse)
    def sessions(request: Request) -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused

        rows = []
        folders = sorted(p for p in s.projects_dir.iterdir() if p.is_dir()) if s.projects_dir.is_dir() else []
        files = [f for folder in folders for f in session_files(folder)]
        for f in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)[:60]:
            try:
                pct = used_pct(f, s.context_window)[1]
            except (OmbreError, OSError):
                pct = None
            stat = f.stat()
            rows.append(
                {
                    "sid": f.stem,
                    "project": f.parent.name,
                    "size": stat.st_size,
                    "pct": pct,
                    "modified": dt.datetime.fromtimestamp(stat.st_mtime, dt.timezone.utc).isoformat(),
                }
            )
        return page(request, "sessions", rows=rows)

    def _session_path(sid: str) -> Path:
        return find_session(sid, s.projects_dir)

    @r.get("/sessions/{sid}", response_class=HTMLResponse)
    def session(request: Request, sid: str) -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused

        try:
            path = _session_path(sid)
            return page(
                request,
                "session",
                sid=path.stem,
                anchors=anchors(path, 30),
                defaults={"retain": s.forge_retain, "diet_retain": s.diet_retain},
                plan=None,
                form_values={},
            )
        except OmbreError as exc:
            return failed(request, exc)

    def _selector(values: dict[str, str]):
        """The range picker's fields as the CLI's --retain / --keep-days / --keep-from-idx / --keep-to-idx."""
        return build_selector(
            s.forge_retain,
            s.forge_max_kept,
            retain=_int(values.get("retain")),
            keep_days=values.get("keep_days") or None,
            keep_from_idx=_int(values.get("keep_from_idx")),
            keep_to_idx=_int(values.get("keep_to_idx")),
        )

    def _plan(path: Path, values: dict[str, str]):
        """The dry run the range picker shows: the same call as `ombre forge|diet --dry-run` with that range."""
        if values.get("mode") == "diet":
            return run_diet(path, DietOptions.from_settings(s, retain=_int(values.get("retain")) or None, dry_run=True))
        return run_forge(path, ForgeOptions(selector=_selector(values), dry_run=True, window=s.context_window))

    @r.get("/sessions/{sid}/plan", response_class=HTMLResponse)
    def plan(request: Request, sid: str) -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused

        values = dict(request.query_params)
        try:
            path = _session_path(sid)
            result = _plan(path, values)
            days = values.get("handoff_days") or ""
            pack = prepare(path, parse_days(days) if days else ()).render() if values.get("mode") != "diet" else ""
        except OmbreError as exc:
            return failed(request, exc)
        return page(
            request,
            "session",
            sid=path.stem,
            anchors=anchors(path, 30),
            defaults={},
            plan=result,
            handoff=pack,
            form_values=values,
        )

    @r.post("/sessions/{sid}/tunnel", response_class=HTMLResponse)
    async def run_tunnel(request: Request, sid: str) -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused

        service = memories_of(request)
        values = await form(request)
        try:
            if values.get("confirm") != "yes":
                raise UsageError("the swap needs your confirmation", hint="tick the box, then run it")
            path = _session_path(sid)
            diet = values.get("mode") == "diet"
            days = values.get("handoff_days") or ""
            result = run(
                s,
                path,
                TunnelOptions(
                    mode="diet" if diet else "forge",
                    selector=None if diet else _selector(values),
                    handoff_days=parse_days(days) if days else (),
                    handoff_text=(values.get("handoff") or "").strip() or None,
                ),
                bridge=bridge_of(s),
                holder=service_holder(service),
            )
        except OmbreError as exc:
            return failed(request, exc)
        return page(request, "tunnel", result=result)

    # -- keeper and health --------------------------------------------------------------------------------
    @r.get("/keeper", response_class=HTMLResponse)
    def keeper(request: Request) -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused

        service = memories_of(request)
        try:
            bridge = bridge_of(s)
        except OmbreError:
            bridge = None
        status = k.status(s, None, bridge)
        lines = jsonl_log.read(s.metrics_log, limit=2_000)
        points = []
        for e in lines:
            at = _when(e.get("at"), zone)
            if at is None:
                continue
            pct = e.get("used_pct")
            points.append(
                svg.Point(
                    at,
                    float(pct) if isinstance(pct, (int, float)) else None,
                    f"d-{e.get('decision', 'note')}",
                    f"{s.local(e.get('at'))} {e.get('session', '')[:8]} {e.get('decision')} "
                    f"{e.get('mode') or ''} {e.get('reason') or e.get('error') or ''}",
                    group=str(e.get("session") or ""),
                )
            )
        swaps = [
            svg.Rule(at.timestamp(), f"{e.get('mode')} → {e.get('new_sid')}", "swap")
            for e in lines
            if e.get("decision") == "ok" and (at := _when(e.get("at"), zone))
        ]
        plot = svg.timeline(
            points,
            y_max=100.0,
            hlines=[
                svg.Rule(s.diet_pct, f"diet {s.diet_pct}%", "diet"),
                svg.Rule(s.forge_pct, f"forge {s.forge_pct}%", "forge"),
            ],
            vlines=swaps,
            label="context %",
        )
        runs = [e for e in lines if e.get("decision") in ("ok", "fail", "trigger", "note")][-40:][::-1]
        checks = doctor.run(s, serve_health=service.health(), serve_url=str(request.base_url).rstrip("/"))
        skips = [e for e in lines if e.get("decision") == "skip"][-5:][::-1]
        return page(
            request, "keeper", status=status, checks=checks, plot=plot, points=len(points), runs=runs, skips=skips
        )

    # -- the bill ---------------------------------------------------------------------------------------
    @r.get("/bill", response_class=HTMLResponse)
    def bill(request: Request, days: str = "30") -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused

        try:
            n = _int(days, 1, 3_650)
            b = compute(s, n)
        except OmbreError as exc:
            return failed(request, exc)
        points = []
        for q in b.requests:
            at = _when(q.at, zone)
            if at is None:
                continue
            points.append(svg.Point(at, float(q.cache_read), "read", f"{s.local(q.at)} read {q.cache_read:,}"))
            points.append(
                svg.Point(at, float(q.cache_creation), "write", f"{s.local(q.at)} write {q.cache_creation:,}")
            )
        start = _when(b.requests[0].at, zone) if b.requests else None
        swaps = [
            svg.Rule(at.timestamp(), f"{e['mode']} {e['new_sid']}", "swap")
            for e in b.swaps
            if (at := _when(e["at"], zone)) and (start is None or at >= start)
        ]
        return page(request, "bill", b=b, days=n, plot=svg.timeline(points, vlines=swaps, label="cache tokens"))

    # -- the hook log -----------------------------------------------------------------------------------
    @r.get("/hooks", response_class=HTMLResponse)
    def hooks(request: Request) -> HTMLResponse:
        if (refused := owner_only(request)) is not None:
            return refused
        entries = jsonl_log.read(s.ombre_home / "hooks.jsonl", limit=300)[::-1]
        ids = sorted({c for e in entries for c in (e.get("cards") or []) + (e.get("pinned") or [])})
        # the log keeps ids only (no memory text in a log file); the page shows what each card said
        texts = {i: m.content for i, m in memories_of(request).store.get_many(ids).items()} if ids else {}
        return page(request, "hooks", entries=entries, texts=texts)

    return r


def _when(stamp: object, zone: ZoneInfo) -> dt.datetime | None:
    moment = parse_timestamp(stamp)
    return moment.astimezone(zone) if moment else None
