"""Finding a session file: by id, id prefix, path, or the newest session of a project folder."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from ..errors import SessionError
from ..wire import loads

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def project_dir_name(cwd: Path | str) -> str:
    """Claude Code's folder name for a working directory: every non-alphanumeric character becomes '-'."""
    return _NON_ALNUM.sub("-", str(cwd))


def is_session_id(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def session_files(folder: Path) -> list[Path]:
    """Main session files of a project folder (basename a UUID; subagent files excluded)."""
    if not folder.is_dir():
        return []
    return [p for p in folder.glob("*.jsonl") if is_session_id(p.stem)]


def newest_session(folder: Path) -> Path:
    files = session_files(folder)
    if not files:
        raise SessionError(
            f"no session files in {folder}",
            hint="give a session id or path, or run from the project folder you chat in",
        )
    return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name))


def find_session(ref: str | None, projects: Path, cwd: Path | None = None) -> Path:
    """Resolve a session reference to its `.jsonl` file.

    `ref` may be: None (newest session of the project folder for `cwd`), a path to a file, a folder (a
    project folder, or a working directory whose project folder is used), a full session id, or an id prefix.
    """
    if ref is None or ref == "":
        cwd = Path.cwd() if cwd is None else cwd
        return newest_session(projects / project_dir_name(cwd.resolve()))
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        if session_files(path):
            return newest_session(path)
        return newest_session(projects / project_dir_name(path.resolve()))
    if "/" in ref or ref.endswith(".jsonl"):
        raise SessionError(f"no such session file: {ref}", hint="check the path")
    prefix = ref.lower()
    if not re.fullmatch(r"[0-9a-f-]{1,36}", prefix):
        raise SessionError(
            f"{ref!r} is not a session id, id prefix or path", hint="list sessions with `ls ~/.claude/projects/*/`"
        )
    matches = sorted(p for p in projects.glob(f"*/{prefix}*.jsonl") if is_session_id(p.stem))
    if not matches:
        raise SessionError(
            f"no session whose id starts with {ref!r} under {projects}",
            hint="check the id, or set CLAUDE_CONFIG_DIR to the Claude home you use",
        )
    if len({p.stem for p in matches}) > 1 or len(matches) > 1:
        listing = "\n".join(f"  {p.stem}  ({p.parent.name})" for p in matches[:20])
        raise SessionError(
            f"session prefix {ref!r} is ambiguous; it matches {len(matches)} sessions:\n{listing}",
            hint="give more characters of the id",
        )
    return matches[0]


def recorded_cwd(transcript: Path) -> Path | None:
    """The working directory Claude Code recorded in a session (the first line that has one)."""
    try:
        with transcript.open("rb") as f:
            for _, raw in zip(range(200), f):
                try:
                    cwd = loads(raw).get("cwd")
                except (ValueError, AttributeError):
                    continue
                if isinstance(cwd, str) and cwd:
                    return Path(cwd)
    except OSError:
        return None
    return None
