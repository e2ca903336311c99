"""`ombre install claude-code` / `ombre uninstall claude-code`: wire Ombre into a user's Claude Code.

Three things change, each idempotently, each file backed up before it is replaced:
- `settings.json`: the UserPromptSubmit and SessionStart hooks, with explicit timeouts, and (unless
  `--no-cache-1h`, or the person set it themselves) `ENABLE_PROMPT_CACHING_1H=1` in its `env`;
- Claude Code's global config (`.claude.json`): a user-scope MCP server `ombre` (hold / breath over stdio, relayed
  to the running service, so Claude Code's processes share its store and loaded models);
- `CLAUDE.md`: one import line for the memory discipline document, which lands in the stable zone
  (read once at the start of a session, unchanged from turn to turn, so the prompt cache holds).

A plan is computed first (a list of FileChange); `--dry-run` prints it as diffs, otherwise it is applied.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import UsageError
from ..files import replace_atomic
from ..settings import Settings
from ..wire import loads
from .hooks import EVENTS

MCP_NAME = "ombre"
RECORD_NAME = "ombre-install.json"
# Claude Code 2.1.112 marks its cache breakpoints with a 1-hour lifetime when this is set (checked in its
# cli.js and on the wire): per-turn cards on the user side keep the prefix stable, so a companion's pauses of
# 5–60 minutes then read the cache instead of writing it again (bench/cost_replay.py).
CACHE_1H = {"ENABLE_PROMPT_CACHING_1H": "1"}
DOC_NAME = "ombre-memory-discipline.md"
HOOK_EVENTS = {event: name for name, event in EVENTS.items()}
SESSION_START_MATCHER = "startup|resume|compact"
_OURS = re.compile(rf"ombre['\"]? hook ({'|'.join(EVENTS)})\s*$")
# Variables the hook needs when Claude Code is started by a bridge with another environment.
PASSED_ENV = ("OMBRE_HOME", "OMBRE_URL")


@dataclass
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str | None  # None: the file is removed
    what: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=f"{self.path} (now)",
            tofile=f"{self.path} (after)",
        )
        return "".join(lines)


def ombre_executable() -> Path:
    """The `ombre` beside the running interpreter (a venv's bin/), so hooks run this very install."""
    exe = Path(sys.executable).parent / "ombre"
    if not exe.exists():
        raise UsageError(
            f"no `ombre` executable next to {sys.executable}",
            hint="install ombre into this environment (pip install -e .) and run it from there",
        )
    return exe


def hook_command(exe: Path, event: str, env: dict[str, str]) -> str:
    prefix = "".join(f"{k}={shlex.quote(env[k])} " for k in PASSED_ENV if env.get(k))
    return f"{prefix}{shlex.quote(str(exe))} hook {event}"


def global_config_path(settings: Settings) -> Path:
    legacy = settings.claude_home / ".config.json"  # Claude Code prefers this file when it exists
    return legacy if legacy.exists() else (settings.claude_json or settings.claude_home.parent / ".claude.json")


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"{path} is not UTF-8 text", hint="fix or move that file, then run the command again; nothing was changed"
        ) from None


def _load_json(path: Path, text: str | None) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        data = loads(text, str(path))
    except ValueError as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc})",
            hint="fix or move that file, then run the command again; nothing was changed",
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object", hint="fix or move it; nothing was changed")
    return data


def _dump_json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _section(data: dict, key: str) -> dict:
    """`data[key]` when it is an object, else a new empty one (what is there and is not an object is replaced)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _put(data: dict, key: str, value: object) -> None:
    """Set `key`, or leave it out when there is nothing in it (a config keeps no empty sections of ours)."""
    if value:
        data[key] = value
    else:
        data.pop(key, None)


def _without_ours(groups: list) -> list:
    """Hook groups with our commands taken out (and groups left empty by that dropped)."""
    out = []
    for group in groups:
        if not isinstance(group, dict):
            out.append(group)
            continue
        hooks = [
            h for h in group.get("hooks", []) if not (isinstance(h, dict) and _OURS.search(str(h.get("command", ""))))
        ]
        if hooks or not group.get("hooks"):
            out.append({**group, "hooks": hooks} if "hooks" in group else group)
    return out


def _settings_change(
    settings: Settings, exe: Path | None, env: dict[str, str], timeout_s: int, owned_env: dict[str, str]
) -> FileChange:
    """Hooks in settings.json, and the session environment variables install owns (added when absent,
    removed on uninstall only if still as install left them)."""
    path = settings.claude_home / "settings.json"
    before = _read(path)
    data = _load_json(path, before)
    hooks = _section(data, "hooks")
    for event, name in HOOK_EVENTS.items():
        groups = _without_ours(hooks.get(event) or [])
        if exe is not None:
            ours: dict[str, object] = {
                "hooks": [{"type": "command", "command": hook_command(exe, name, env), "timeout": timeout_s}]
            }
            if event == "SessionStart":
                ours = {"matcher": SESSION_START_MATCHER, **ours}
            groups.append(ours)
        _put(hooks, event, groups)
    _put(data, "hooks", hooks)
    session_env = _section(data, "env")
    for key, value in owned_env.items():
        if exe is not None:
            session_env[key] = value
        elif session_env.get(key) == value:
            session_env.pop(key)
    _put(data, "env", session_env)
    after = _dump_json(data) if (data or before is not None) else None
    return FileChange(
        path,
        before,
        after,
        "Claude Code hooks (UserPromptSubmit, SessionStart)"
        + (f" and env {', '.join(owned_env)}" if owned_env else ""),
    )


def _record_change(settings: Settings, owned_env: dict[str, str], install: bool) -> FileChange:
    """What install added that was not there before, so uninstall takes back exactly that."""
    path = settings.claude_home / RECORD_NAME
    before = _read(path)
    after = _dump_json({"added_env": owned_env}) if install and owned_env else None
    return FileChange(path, before, after, "what ombre added (for uninstall)")


def _owned_env(settings: Settings, install: bool, cache_1h: bool) -> dict[str, str]:
    record = _load_json(settings.claude_home / RECORD_NAME, _read(settings.claude_home / RECORD_NAME))
    owned = _section(record, "added_env")
    if not install:
        return {k: str(v) for k, v in owned.items()}
    current = _load_json(settings.claude_home / "settings.json", _read(settings.claude_home / "settings.json"))
    present = _section(current, "env")
    wanted = dict(CACHE_1H) if cache_1h else {}
    # never take over a setting the person made themselves (or their choice of the 5-minute cache)
    return {
        k: v
        for k, v in wanted.items()
        if (k not in present or owned.get(k) == present.get(k)) and "FORCE_PROMPT_CACHING_5M" not in present
    }


def _mcp_change(settings: Settings, exe: Path | None, env: dict[str, str]) -> FileChange:
    path = global_config_path(settings)
    before = _read(path)
    data = _load_json(path, before)
    servers = _section(data, "mcpServers")
    if exe is None:
        current = servers.get(MCP_NAME)
        if isinstance(current, dict) and Path(str(current.get("command", ""))).name == "ombre":
            servers.pop(MCP_NAME)
    else:
        entry = {
            "type": "stdio",
            "command": str(exe),
            "args": ["serve", "--stdio"],
            "env": {k: env[k] for k in PASSED_ENV if env.get(k)},
        }
        servers[MCP_NAME] = entry
    _put(data, "mcpServers", servers)
    after = _dump_json(data) if (data or before is not None) else None
    if after is not None and before is not None and json.loads(before) == data:
        after = before  # semantically unchanged: leave Claude Code's own formatting alone
    return FileChange(path, before, after, "MCP server `ombre` (hold, breath)")


def _doc_changes(settings: Settings, install: bool) -> list[FileChange]:
    doc = settings.claude_home / DOC_NAME
    doc_text = resources.files("ombre.inject").joinpath("memory_discipline.md").read_text(encoding="utf-8")
    claude_md = settings.claude_home / "CLAUDE.md"
    before = _read(claude_md)
    line = f"@{doc}"
    kept = [ln for ln in (before or "").splitlines() if ln.strip() != line]
    while kept and not kept[-1].strip():
        kept.pop()
    if install:
        text = "\n".join(kept + ([""] if kept else []) + [line]) + "\n"
        md = FileChange(claude_md, before, text, "import of the memory discipline in CLAUDE.md")
        return [FileChange(doc, _read(doc), doc_text, "memory discipline document (Chinese)"), md]
    after = ("\n".join(kept) + "\n") if kept else None
    return [
        FileChange(claude_md, before, after, "import of the memory discipline in CLAUDE.md"),
        FileChange(doc, _read(doc), None, "memory discipline document"),
    ]


def plan(
    settings: Settings,
    *,
    install: bool,
    env: dict[str, str],
    exe: Path | None = None,
    timeout_s: int | None = None,
    cache_1h: bool = True,
) -> list[FileChange]:
    """The changes `install` (or uninstall) would make; nothing is written."""
    if install and exe is None:
        exe = ombre_executable()
    if timeout_s is None:
        # Claude Code's own limit sits above ours, so our deadline (print nothing) always fires first.
        timeout_s = settings.inject_timeout_ms // 1000 + 5
    target = exe if install else None
    owned = _owned_env(settings, install, cache_1h)
    return [
        _settings_change(settings, target, env, timeout_s, owned),
        _mcp_change(settings, target, env),
        *_doc_changes(settings, install),
        _record_change(settings, owned, install),
    ]


def precompile() -> None:
    """Compile ombre's bytecode now: the hook starts a fresh Python on every turn, and a checkout run with
    PYTHONDONTWRITEBYTECODE (or from a read-only place) would otherwise compile its modules each time."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=1)


def apply(changes: list[FileChange], now: dt.datetime | None = None) -> list[Path]:
    """Write every changed file (old version backed up beside it); returns the backups made."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%dT%H%M%S")
    backups = []
    for change in changes:
        if not change.changed:
            continue
        if change.before is not None:
            backup = change.path.with_name(f"{change.path.name}.ombre-backup-{stamp}")
            replace_atomic(backup, change.before.encode("utf-8"), mode=change.path.stat().st_mode & 0o777)
            backups.append(backup)
        if change.after is None:
            change.path.unlink(missing_ok=True)
        else:
            replace_atomic(change.path, change.after.encode("utf-8"))
    return backups
