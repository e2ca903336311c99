"""The tunnel: backup → handoff → hold → forge (or diet) → stop the bridge → re-bind → start →
a quiet nudge. One function, called by `ombre tunnel`, `ombre rebind` and the keeper alike.

Failure policy: never a fresh start. Until the new file is written and verified, the
bridge is not touched, so a failed forge leaves the old session bound and usable. Once it is written, a
failed re-bind leaves the old binding (the bridge is started again on it) and says how to finish with
`ombre rebind NEW_SID`. A journal records which step a run reached, so a run killed between stopping and
starting the bridge is finished (the bridge started again) by the next tunnel, rebind or keeper tick.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import jsonl_log
from ..client import post_json
from ..errors import BridgeError, OmbreError
from ..files import replace_atomic
from ..settings import Settings
from ..window.diet import DietOptions
from ..window.diet import run as run_diet
from ..window.forge import ForgeOptions, ForgeResult
from ..window.forge import run as run_forge
from ..window.select import Selector
from ..window.verify import Expectation, verify_session
from ..wire import loads
from . import new_window
from .bridges import Bridge, send_nudge
from .handoff import prepare, preview

if TYPE_CHECKING:
    from ..memory.service import MemoryService

Holder = Callable[[str, str], str]  # (handoff text, old sid) → memory id; raises on failure
NUDGE = (
    "（ombre 接续：刚换了窗口。先 breath(is_session_start=True) 看交接，再顺着刚才的话题自然接着聊；不要提换窗口。）"
)


@dataclass
class TunnelOptions:
    mode: str = "forge"  # forge | diet
    selector: Selector | None = None  # forge's selection; None: retain AUTO_FORGE_RETAIN
    squash: int | None = None  # None: AUTO_FORGE_DIET_SQUASH
    handoff_days: tuple[dt.date, ...] = ()
    handoff_text: str | None = None  # a pack the person prepared (and maybe edited) beforehand
    hold: bool = True
    nudge: bool = True
    dry_run: bool = False


@dataclass
class TunnelResult:
    mode: str
    dry_run: bool
    old_sid: str
    bound_sid: str | None = None
    new_sid: str | None = None
    retain: int | None = None  # tokens kept from the end (None: a chosen range or days)
    backup: str | None = None
    handoff_preview: str = ""
    hold: str = "off"  # ok <id> | failed: … | off | not for diet
    rebind: str = "no bridge"  # ok | failed: … | no bridge | dry run
    started: bool = False
    nudge: str = "off"
    forge: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.new_sid is not None and self.rebind in ("ok", "no bridge", "dry run")

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def journal_path(settings: Settings) -> Path:
    return settings.ombre_home / "tunnel-journal.json"


def _journal(settings: Settings, **state: object) -> None:
    replace_atomic(journal_path(settings), json.dumps(state, ensure_ascii=False).encode("utf-8"))


def recover(settings: Settings, bridge: Bridge | None) -> str | None:
    """Finish what a killed run left: a bridge stopped and never started again. Returns what was done."""
    path = journal_path(settings)
    if not path.exists():
        return None
    try:
        state = loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {"step": "unknown"}
    done = None
    if bridge is not None and state.get("step") in ("stop", "bind", "start", "unknown"):
        bridge.start()
        done = f"started the bridge that a run interrupted at `{state.get('step')}` had stopped"
    path.unlink(missing_ok=True)
    return done


def _handoff_memory(text: str, old_sid: str) -> dict:
    return {
        "content": text,
        "type": "会话交接",
        "tags": ["会话交接", "forge"],
        "importance": 6,
        "from_session": old_sid,
    }


def service_holder(service) -> Holder:
    """Hold into a memory service this process already has open (the dashboard inside `ombre serve`)."""
    from ..memory.hold import HoldRequest

    def hold(text: str, old_sid: str) -> str:
        result = service.hold(HoldRequest(**_handoff_memory(text, old_sid)))
        if not result.stored:
            raise OmbreError(f"the memory service did not store the handoff: {result.decision}")
        return str(result.id)

    return hold


def memory_holder(settings: Settings, open_service: Callable[[], MemoryService]) -> Holder:
    """Hold through the running memory service; if it is down, into the store directly (a service that
    `open_service` opens)."""

    def hold(text: str, old_sid: str) -> str:
        body = _handoff_memory(text, old_sid)
        answer = post_json(settings.memory_url + "/v1/hold", body, token=settings.token, timeout=10)
        if answer is not None and answer.get("stored"):
            return str(answer["id"])
        service = open_service()
        try:
            return service_holder(service)(text, old_sid)
        finally:
            service.close()

    return hold


def run(
    settings: Settings,
    path: Path,
    options: TunnelOptions,
    *,
    bridge: Bridge | None,
    holder: Holder | None,
    on_step: Callable[[str], None] = lambda step: None,
) -> TunnelResult:
    path = Path(path)
    result = TunnelResult(options.mode, options.dry_run, path.stem)
    if bridge is not None:
        if not options.dry_run:
            done = recover(settings, bridge)
            if done:
                result.warnings.append(done)
        try:
            result.bound_sid = bridge.bound_sid()
        except BridgeError as exc:
            if not options.dry_run:  # a bridge we cannot read is a bridge we must not edit
                raise BridgeError(
                    f"cannot read the bridge before swapping: {exc.message}",
                    hint="fix the bridge state first; nothing was written or re-bound",
                ) from None
            result.warnings.append(f"cannot read the bound session: {exc.message}")
        if result.bound_sid and result.bound_sid != result.old_sid:
            result.warnings.append(f"the bridge is bound to {result.bound_sid}, not to {result.old_sid}")
        # The new file goes beside this one: if the bridge would not resume a session from this folder, it would
        # not resume the new one either, so say so before anything is written.
        try:
            bridge.target(result.old_sid, path.parent)
        except BridgeError as exc:
            if not options.dry_run:
                raise BridgeError(
                    f"the bridge could not resume a session written here: {exc.message}", hint=exc.hint
                ) from None
            result.warnings.append(f"a real run would stop here: {exc.message}")

    def step(name: str) -> None:
        on_step(name)
        result.steps.append(name)

    if not options.dry_run:
        step("backup")
        backup = settings.backups_dir / f"{path.stem}.{dt.datetime.now().strftime('%Y%m%dT%H%M%S%f')}.jsonl"
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, backup)
        result.backup = str(backup)
        _prune_backups(settings.backups_dir, settings.backups_keep)

    handoff = None
    if options.mode == "forge":
        step("handoff")
        try:
            handoff = options.handoff_text or prepare(path, options.handoff_days).render()
            result.handoff_preview = preview(handoff)
        except OmbreError as exc:
            result.warnings.append(f"no handoff pack ({exc.message}); forging without one")
        if options.hold and settings.ombre_hold and handoff:
            step("hold")
            if options.dry_run:
                result.hold = "would hold a 会话交接 memory (tags 会话交接, forge)"
            elif holder is None:
                result.hold = "off"
            else:
                try:
                    result.hold = f"ok {holder(handoff, result.old_sid)}"
                except Exception as exc:  # noqa: BLE001 — the memory side failing never stops the tunnel
                    result.hold = f"failed: {exc}"
                    result.warnings.append(f"the handoff was not held ({exc}); the tunnel goes on")
    else:
        result.hold = "not for diet"

    step(options.mode)
    forged = _rewrite(settings, path, options, handoff, result)
    result.forge = asdict(forged)
    result.new_sid = forged.new_session
    new_window.rewritten(settings, forged, f"tunnel-{options.mode}")
    if options.dry_run:
        result.rebind = "dry run" if bridge is not None else "no bridge"
        return result

    if bridge is None:
        result.warnings.append(f"no bridge configured (OMBRE_BRIDGE): resume {forged.new_session} yourself")
        _record(settings, result)
        return result
    result.rebind, result.started = _rebind(settings, bridge, forged.new_session, path.parent, step)
    if result.rebind == "ok" and options.nudge:
        result.nudge = send_nudge(settings, NUDGE)
    _record(settings, result)
    return result


def _prune_backups(folder: Path, keep: int) -> None:
    """Keep the newest `keep` backups: each is a whole session file, and a keeper swaps several times a day."""
    # named <sid>.<YYYYmmddTHHMMSS>.jsonl; copy2 keeps the session's own mtime, so sort by the name's stamp
    backups = sorted(folder.glob("*.*.jsonl"), key=lambda p: p.name.rsplit(".", 2)[-2])
    for old in backups[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)


def _rewrite(
    settings: Settings, path: Path, options: TunnelOptions, handoff: str | None, result: TunnelResult
) -> ForgeResult:
    squash = settings.diet_squash if options.squash is None else options.squash
    if options.mode == "diet":
        result.retain = settings.diet_retain
        return run_diet(path, DietOptions.from_settings(settings, squash=squash, dry_run=options.dry_run))
    selector = options.selector or Selector(retain=settings.forge_retain, max_kept=settings.forge_max_kept)
    result.retain = selector.retain
    return run_forge(
        path,
        ForgeOptions(
            selector=selector,
            squash=squash,
            inject_text=handoff,
            inject_source="ombre handoff" if handoff else None,
            dry_run=options.dry_run,
            window=settings.context_window,
            history=settings.history_log,
        ),
    )


def _rebind(
    settings: Settings, bridge: Bridge, new_sid: str, project_dir: Path, step: Callable[[str], None]
) -> tuple[str, bool]:
    """stop → bind → start; on a failed bind the bridge is started again on its old binding."""
    bridge.target(new_sid, project_dir)

    def reach(name: str) -> None:  # journal first: a run that dies inside the step is finished by recover()
        _journal(settings, step=name, new_sid=new_sid)
        step(name)

    def finished(outcome: str, started: bool) -> tuple[str, bool]:
        journal_path(settings).unlink(missing_ok=True)
        return outcome, started

    reach("stop")
    try:
        bridge.stop()
    except BridgeError as exc:
        return finished(f"failed: {exc.message}; nothing was re-bound (`ombre rebind {new_sid}` finishes it)", False)
    reach("bind")
    outcome = "ok"
    try:
        bridge.bind(new_sid, project_dir)
    except BridgeError as exc:
        outcome = f"failed: {exc.message}; the old session stays bound (`ombre rebind {new_sid}` finishes it)"
    reach("start")
    try:
        bridge.start()
    except BridgeError as exc:
        return finished(f"{outcome}; the bridge did not start: {exc.message}", False)
    return finished(outcome, True)


def rebind(settings: Settings, bridge: Bridge, new_sid: str, projects_dir: Path) -> TunnelResult:
    """Bind a session that a tunnel already wrote (after a failed re-bind), without cutting again."""
    matches = sorted(projects_dir.glob(f"*/{new_sid}.jsonl"))
    if not matches:
        raise BridgeError(
            f"no session file {new_sid}.jsonl under {projects_dir}",
            hint="give the new session id a tunnel printed; nothing was re-bound",
        )
    path = matches[0]
    verify_session(path, Expectation(session_id=new_sid))  # never point a bridge at a broken file
    result = TunnelResult("rebind", False, new_sid, new_sid=new_sid)
    recover(settings, bridge)
    result.bound_sid = bridge.bound_sid()
    result.rebind, result.started = _rebind(settings, bridge, new_sid, path.parent, result.steps.append)
    _record(settings, result)
    return result


def _record(settings: Settings, result: TunnelResult) -> None:
    jsonl_log.append(
        settings.history_log,
        {
            "mode": f"tunnel-{result.mode}",
            "old_sid": result.old_sid,
            "new_sid": result.new_sid,
            "ok": result.ok,
            "retain": result.retain,
            "hold": result.hold,
            "rebind": result.rebind,
            "started": result.started,
        },
    )
