"""Bridges: what points a chat at a Claude Code session id, and how to re-point it.

Three adapters behind one small interface:
- cc-connect: its session file (`<data_dir>/sessions/<project>_<hash>.json`, found from its config or the work
  dir, cc_connect.py). cc-connect rewrites that file whole on its own saves and reads it only at start, so it
  is stopped, edited atomically (the old id appended to `past_agent_session_ids`), and started again. It
  silently starts FRESH if `<sid>.jsonl` is missing where it looks (under $HOME, by its own encoding of the
  work dir), so binding refuses an id it would not find there.
- command: the person's own stop / bind / start (and optional status) commands.
- file: a plain file holding the bound id, for other bridges and scripts.
Set `reset_on_idle_mins = 0` in cc-connect's config: its default (30) starts a fresh session after half an
hour of quiet, which no re-binding can undo.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..errors import BridgeError, UsageError
from ..files import replace_atomic
from ..settings import Settings
from ..transcript.sessions import recorded_cwd
from ..wire import loads
from . import cc_connect

COMMAND_TIMEOUT_S = 60


class Bridge(Protocol):
    name: str

    def bound_sid(self) -> str | None: ...

    def target(self, sid: str, project_dir: Path) -> Path:
        """The file the bridge would resume for `sid`; raises BridgeError when it would start fresh instead."""
        ...

    def stop(self) -> None: ...

    def bind(self, sid: str, project_dir: Path) -> None: ...

    def start(self) -> None: ...


def check_target(sid: str, project_dir: Path) -> Path:
    """The session file a binding would point at; refuse one that is not there (a bridge would start fresh)."""
    path = project_dir / f"{sid}.jsonl"
    if not project_dir.is_dir():
        raise BridgeError(
            f"the project folder {project_dir} does not exist",
            hint="check the session and CLAUDE_CONFIG_DIR; nothing was re-bound",
        )
    if not path.is_file() or path.stat().st_size == 0:
        raise BridgeError(
            f"no session file {path.name} in {project_dir}: binding to it would start a fresh session",
            hint="forge or diet first, or give the id of a session that exists",
        )
    return path


def run_command(command: str | None, what: str, **fmt: str) -> str:
    if not command:
        return ""
    line = command.format(**{k: shlex.quote(v) for k, v in fmt.items()}) if fmt else command
    try:
        proc = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BridgeError(f"the bridge {what} command did not finish in {COMMAND_TIMEOUT_S} s: {line}") from None
    if proc.returncode != 0:
        raise BridgeError(
            f"the bridge {what} command failed ({proc.returncode}): {line}",
            hint=(proc.stderr or proc.stdout).strip()[-300:],
        )
    return proc.stdout


def send_nudge(settings: Settings, text: str) -> str:
    """Send a short continuation line into the chat through OMBRE_BRIDGE_NUDGE ("{text}" is filled in)."""
    if not settings.bridge_nudge:
        return "not configured (OMBRE_BRIDGE_NUDGE); the handoff in the new window carries the continuation"
    try:
        run_command(settings.bridge_nudge, "nudge", text=text)
    except BridgeError as exc:
        return f"failed: {exc.message}"
    return "sent"


class _StopStart:
    """stop() and start() run the person's commands (either may be unset: nothing to do)."""

    stop_command: str | None
    start_command: str | None

    def target(self, sid: str, project_dir: Path) -> Path:
        return check_target(sid, project_dir)

    def stop(self) -> None:
        run_command(self.stop_command, "stop")

    def start(self) -> None:
        run_command(self.start_command, "start")


@dataclass
class CcConnectBridge(_StopStart):
    session_file: Path
    stop_command: str | None = None
    start_command: str | None = None
    key: str | None = None  # the conversation to re-point ("qq:42", "telegram:<chat>:<user>"); default: the latest
    work_dir: Path | None = None  # the project's work_dir; None: the one the session recorded
    home: Path = field(default_factory=Path.home)  # cc-connect's $HOME
    name: str = "cc-connect"

    def target(self, sid: str, project_dir: Path) -> Path:
        path = check_target(sid, project_dir)
        work_dir = self.work_dir or recorded_cwd(path)
        if work_dir is None:
            raise BridgeError(
                f"cannot tell cc-connect's work dir: {path.name} records none",
                hint="set OMBRE_BRIDGE_WORK_DIR to the project's work_dir; nothing was re-bound",
            )
        tag = self.session_file.name.removesuffix(".json").removesuffix(".sessions").rpartition("_")[2]
        if len(tag) == 8 and all(c in "0123456789abcdef" for c in tag) and cc_connect.work_dir_hash(work_dir) != tag:
            raise BridgeError(
                f"{self.session_file.name} belongs to another work dir than {work_dir}: cc-connect "
                "would not resume this session for that project",
                hint="check OMBRE_BRIDGE_WORK_DIR / OMBRE_BRIDGE_FILE; nothing was re-bound",
            )
        cc_connect.check_visible(self.home, work_dir, sid, path)
        return path

    def _load(self) -> dict:
        try:
            data = loads(self.session_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BridgeError(
                f"no cc-connect session file at {self.session_file}",
                hint="send the bot one message first (cc-connect writes it then), or check "
                "OMBRE_BRIDGE_WORK_DIR / OMBRE_BRIDGE_FILE",
            ) from None
        except (OSError, ValueError) as exc:
            raise BridgeError(
                f"the cc-connect session file {self.session_file} cannot be read: {exc}",
                hint="it is left as it is; fix or restore it (cc-connect keeps no backup)",
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), dict):
            raise BridgeError(
                f"{self.session_file} does not look like a cc-connect session file (no sessions)",
                hint="check OMBRE_BRIDGE_FILE; nothing was changed",
            )
        return data

    def _active(self, data: dict) -> dict:
        active = data.get("active_session") or {}
        if self.key:
            chosen = active.get(self.key)
            if chosen is None:
                raise BridgeError(
                    f"cc-connect has no active session for {self.key}", hint=f"known: {', '.join(active) or 'none'}"
                )
        else:
            ids = [i for i in active.values() if i in data["sessions"]]
            if not ids:
                raise BridgeError("cc-connect has no active session yet", hint="send the bot one message first")
            chosen = max(ids, key=lambda i: str(data["sessions"][i].get("updated_at", "")))
        session = data["sessions"].get(chosen)
        if not isinstance(session, dict):
            raise BridgeError(f"cc-connect's active session {chosen} is missing from its sessions")
        return session

    def bound_sid(self) -> str | None:
        return self._active(self._load()).get("agent_session_id") or None

    def bind(self, sid: str, project_dir: Path) -> None:
        self.target(sid, project_dir)
        data = self._load()
        session = self._active(data)
        old = session.get("agent_session_id")
        if old == sid:
            return
        past = list(session.get("past_agent_session_ids") or [])
        if old and old not in past:
            past.append(old)
        session["agent_session_id"] = sid
        session["past_agent_session_ids"] = past
        session["updated_at"] = dt.datetime.now(dt.timezone.utc).astimezone().isoformat()
        replace_atomic(self.session_file, json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8"))


@dataclass
class CommandBridge(_StopStart):
    bind_command: str  # "{sid}" and "{path}" are filled in, shell-quoted
    stop_command: str | None = None
    start_command: str | None = None
    status_command: str | None = None  # prints the bound id
    name: str = "command"

    def bound_sid(self) -> str | None:
        if not self.status_command:
            return None
        return run_command(self.status_command, "status").strip() or None

    def bind(self, sid: str, project_dir: Path) -> None:
        path = self.target(sid, project_dir)
        run_command(self.bind_command, "bind", sid=sid, path=str(path))


@dataclass
class FileBridge(_StopStart):
    path: Path
    stop_command: str | None = None
    start_command: str | None = None
    name: str = "file"

    def bound_sid(self) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def bind(self, sid: str, project_dir: Path) -> None:
        self.target(sid, project_dir)
        replace_atomic(self.path, (sid + "\n").encode("utf-8"))


def from_settings(settings: Settings) -> Bridge | None:
    """The bridge OMBRE_BRIDGE names (cc-connect | command | file), or None when there is none to re-point."""
    kind = settings.bridge
    if kind in ("", "none"):
        return None
    if kind == "cc-connect":
        where = cc_connect.locate(settings)
        if not (settings.bridge_stop and settings.bridge_start):
            raise UsageError(
                "OMBRE_BRIDGE=cc-connect needs OMBRE_BRIDGE_STOP and OMBRE_BRIDGE_START",
                hint="cc-connect overwrites its session file while it runs, so it must be stopped "
                "for the edit (e.g. systemctl --user stop cc-connect)",
            )
        return CcConnectBridge(
            where.session_file,
            settings.bridge_stop,
            settings.bridge_start,
            settings.bridge_key,
            where.work_dir,
            settings.user_home or Path.home(),
        )
    if kind == "command":
        if not settings.bridge_bind:
            raise UsageError("OMBRE_BRIDGE=command needs OMBRE_BRIDGE_BIND (a command with {sid} in it)")
        return CommandBridge(settings.bridge_bind, settings.bridge_stop, settings.bridge_start, settings.bridge_status)
    if kind == "file":
        if not settings.bridge_file:
            raise UsageError("OMBRE_BRIDGE=file needs OMBRE_BRIDGE_FILE (the file that holds the session id)")
        return FileBridge(settings.bridge_file, settings.bridge_stop, settings.bridge_start)
    raise UsageError(f"OMBRE_BRIDGE={kind!r} is not a bridge ombre knows", hint="use cc-connect, command, file or none")
