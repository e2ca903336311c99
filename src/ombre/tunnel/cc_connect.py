"""cc-connect as it really is (chenhg5/cc-connect at 3727b74).

Three facts decide whether a re-bind resumes the forged session or silently starts a fresh one:
- where its session file is: `<data_dir>/sessions/<project>_<first 8 hex of sha256(abs work_dir)>.json`, or an
  older name it still prefers when that file exists (`sessionStorePath` in cmd/cc-connect/main.go);
- where it looks for the Claude Code transcript before resuming: `$HOME/.claude/projects/<key>/<id>.jsonl`, with
  its own encoding of the work dir (`findProjectDir`, `encodeClaudeProjectKey` in agent/claudecode) and never
  CLAUDE_CONFIG_DIR. Claude Code's own folder name replaces every non-alphanumeric character, cc-connect's
  only some, so a work dir with, say, a `+` in it is a folder cc-connect cannot find: it clears the id;
- its config (`config.toml`): data_dir, each project's work_dir, and the two settings that undo a keeper's
  work behind its back (`[projects.auto_compress]` sends /compact, `reset_on_idle_mins` starts fresh).
These are read here exactly as cc-connect computes them, so a mismatch is refused before a re-bind.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import BridgeError, UsageError
from ..settings import Settings

DEFAULT_DATA_DIR = ".cc-connect"  # under $HOME


@dataclass(frozen=True)
class Project:
    name: str
    work_dir: Path | None
    agent: str  # "claudecode", "codex", …
    auto_compress: bool
    reset_on_idle_mins: int  # 0: off


@dataclass(frozen=True)
class Config:
    path: Path
    data_dir: Path
    projects: tuple[Project, ...]

    def project(self, name: str | None) -> Project:
        """The named project, or the only Claude Code one."""
        if name:
            for p in self.projects:
                if p.name == name:
                    return p
            raise UsageError(
                f"cc-connect's config {self.path} has no project {name!r}",
                hint=f"projects there: {', '.join(p.name for p in self.projects) or 'none'}",
            )
        claude = [p for p in self.projects if p.agent in ("claudecode", "")]
        if len(claude) != 1:
            raise UsageError(
                f"cc-connect's config {self.path} has {len(claude)} Claude Code projects",
                hint="name the one to re-bind with OMBRE_BRIDGE_PROJECT",
            )
        return claude[0]


def read_config(path: Path, home: Path) -> Config | None:
    """cc-connect's config.toml, or None when there is none."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(
            f"cannot read cc-connect's config {path}: {exc}",
            hint="fix it, or point OMBRE_CC_CONNECT_CONFIG at the one cc-connect uses",
        ) from None
    data_dir = Path(raw.get("data_dir") or home / DEFAULT_DATA_DIR).expanduser()
    projects = []
    for p in raw.get("projects") or []:
        agent = p.get("agent") or {}
        work_dir = (agent.get("options") or {}).get("work_dir")
        idle = p.get("reset_on_idle_mins")
        projects.append(
            Project(
                name=str(p.get("name", "")),
                work_dir=Path(work_dir).expanduser() if work_dir else None,
                agent=str(agent.get("type", "")),
                auto_compress=bool((p.get("auto_compress") or {}).get("enabled")),
                reset_on_idle_mins=idle if isinstance(idle, int) else 0,
            )
        )
    return Config(path, data_dir, tuple(projects))


def work_dir_hash(work_dir: Path) -> str:
    return hashlib.sha256(str(Path(os.path.abspath(work_dir))).encode("utf-8")).hexdigest()[:8]


def session_store_path(data_dir: Path, project: str, work_dir: Path | None) -> Path:
    """The session file cc-connect uses for a project: an older name wins when that file exists."""
    name = f"{project}_{work_dir_hash(work_dir)}.json" if work_dir else f"{project}.json"
    for legacy in (data_dir / name, data_dir / name.replace(".json", ".sessions.json")):
        if legacy.exists():
            return legacy
    return data_dir / "sessions" / name


def find_session_file(data_dir: Path, work_dir: Path) -> Path:
    """The session file of whichever project runs in `work_dir`, found by its name's hash alone."""
    tag = work_dir_hash(work_dir)
    found = sorted(
        {
            *data_dir.glob(f"sessions/*_{tag}.json"),
            *data_dir.glob(f"*_{tag}.json"),
            *data_dir.glob(f"*_{tag}.sessions.json"),
        }
    )
    if len(found) == 1:
        return found[0]
    if not found:
        raise BridgeError(
            f"no cc-connect session file for the work dir {work_dir} under {data_dir}",
            hint="send the bot one message first, or set OMBRE_BRIDGE_FILE to the file",
        )
    raise BridgeError(
        f"{len(found)} cc-connect session files for the work dir {work_dir}: " + ", ".join(p.name for p in found),
        hint="name the project with OMBRE_BRIDGE_PROJECT",
    )


def encode_project_key(abs_path: str) -> str:
    """cc-connect's idea of Claude Code's folder name for a work dir (not always Claude Code's own)."""
    return "".join("-" if c in "/:_ ~.@" or ord(c) >= 128 else c for c in abs_path.replace("\\", "/"))


def project_dir(home: Path, work_dir: Path) -> Path | None:
    """The folder cc-connect searches for a session's transcript (`findProjectDir`), or None."""
    base = home / ".claude" / "projects"
    absolute = os.path.abspath(work_dir)
    primary = encode_project_key(absolute)
    candidates = [
        primary,
        absolute.replace(os.sep, "-"),
        absolute.replace("/", "-").replace("\\", "-").replace(":", "-"),
        absolute.replace("/", "-").replace("\\", "-").replace(":", "-").replace("_", "-"),
        absolute.replace("\\", "/").replace("/", "-"),
    ]
    for key in candidates:
        if (base / key).is_dir():
            return base / key
    try:
        entries = [e for e in base.iterdir() if e.is_dir()]
    except OSError:
        return None
    for entry in entries:
        if entry.name == primary or entry.name.lower() == primary.lower():
            return entry
    return None


def resume_file(home: Path, work_dir: Path, sid: str) -> Path | None:
    """The transcript cc-connect checks before resuming `sid`; None when it would clear the id and start fresh."""
    folder = project_dir(home, work_dir)
    if folder is None or not (folder / f"{sid}.jsonl").exists():
        return None
    return folder / f"{sid}.jsonl"


def check_visible(home: Path, work_dir: Path, sid: str, target: Path) -> None:
    """Refuse a binding cc-connect would not resume: its check would miss `target` and start fresh."""
    seen = resume_file(home, work_dir, sid)
    if seen is None:
        folder = project_dir(home, work_dir)
        where = folder or home / ".claude" / "projects" / encode_project_key(os.path.abspath(work_dir))
        raise BridgeError(
            f"cc-connect would not find {sid}.jsonl: for the work dir {work_dir} it looks in {where} "
            f"($HOME, never CLAUDE_CONFIG_DIR), and the session is in {target.parent}; it would clear the id "
            "and start a fresh session",
            hint="run Claude Code (and ombre) with CLAUDE_CONFIG_DIR unset, or a "
            "work dir whose path has only letters, digits, '-', '/', '_', '.', '@', '~' and spaces; "
            "nothing was re-bound",
        )
    if not os.path.samefile(seen, target):
        raise BridgeError(
            f"cc-connect would resume {seen}, not the file ombre wrote ({target})",
            hint="two Claude homes hold this session id; nothing was re-bound",
        )


@dataclass(frozen=True)
class Location:
    session_file: Path
    work_dir: Path | None  # None: read from the session being bound
    config: Config | None


def locate(settings: Settings) -> Location:
    """cc-connect's session file and work dir, from OMBRE_BRIDGE_FILE or else from its config and the work dir."""
    home = settings.user_home or Path.home()
    config = read_config(settings.cc_connect_config, home) if settings.cc_connect_config else None
    project = config.project(settings.bridge_project) if config and config.projects else None
    work_dir = settings.bridge_work_dir or (project.work_dir if project else None)
    if settings.bridge_file:
        return Location(settings.bridge_file, work_dir, config)
    data_dir = config.data_dir if config else home / DEFAULT_DATA_DIR
    name = project.name if project else settings.bridge_project
    if name:
        return Location(session_store_path(data_dir, name, work_dir), work_dir, config)
    if work_dir:
        return Location(find_session_file(data_dir, work_dir), work_dir, config)
    raise UsageError(
        "OMBRE_BRIDGE=cc-connect cannot tell which cc-connect project to re-bind",
        hint="set OMBRE_BRIDGE_WORK_DIR to the project's work_dir (or OMBRE_BRIDGE_FILE to its "
        f"sessions/<project>_<hash>.json); no config at {settings.cc_connect_config}",
    )
