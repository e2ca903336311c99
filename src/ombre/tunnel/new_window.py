"""The `/new` path: the person's own summary-and-swap, made to continue.

    ombre handoff prepare --write  → SESSION_HANDOFF.md in the work dir, and a "waiting for /new" flag
    the person sends /new          → the bridge starts a fresh session; its id changes
    the keeper's next pass         → sees the change, consumes the flag, sends the continuation nudge once

A forge, diet or tunnel clears the flag (seed: "forge 成功后应清掉「等待 /new 续聊」一类标志"), so the two
continuations never both fire; a session id that ombre itself wrote is a swap, not a /new, and clears it too.
The flag is consumed before the nudge is sent: at most once, even if sending fails or the keeper dies.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import jsonl_log
from ..errors import UsageError
from ..files import replace_atomic
from ..settings import Settings
from ..wire import loads
from .bridges import send_nudge

HANDOFF_FILE = "SESSION_HANDOFF.md"
NUDGE_NEW = (
    "（ombre 接续：对方刚用 /new 开了新窗口。先读工作目录里的 SESSION_HANDOFF.md，"
    "再 breath(is_session_start=True)，然后顺着刚才的话题自然接着聊；不要提换窗口。）"
)


@dataclass
class Waiting:
    old_sid: str
    handoff: str  # the SESSION_HANDOFF.md written
    set_at: str


def flag_path(settings: Settings) -> Path:
    return settings.ombre_home / "waiting-for-new.json"


def waiting(settings: Settings) -> Waiting | None:
    try:
        data = loads(flag_path(settings).read_text(encoding="utf-8"))
        return Waiting(str(data["old_sid"]), str(data.get("handoff", "")), str(data.get("set_at", "")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a flag that cannot be read cannot say which session it waits on: it is dropped below


def write(settings: Settings, old_sid: str, pack_text: str, folder: Path) -> Waiting:
    """Put the pack in `folder` as SESSION_HANDOFF.md and start waiting for /new."""
    if not folder.is_dir():
        raise UsageError(f"the work dir {folder} does not exist", hint="give the folder the chat runs in with --to")
    target = folder / HANDOFF_FILE
    replace_atomic(target, (pack_text.rstrip("\n") + "\n").encode("utf-8"))
    flag = Waiting(old_sid, str(target), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    replace_atomic(flag_path(settings), json.dumps(asdict(flag), ensure_ascii=False).encode("utf-8"))
    return flag


def clear(settings: Settings, why: str) -> bool:
    """Stop waiting (a forge, diet or tunnel carried the continuation instead). True if there was a flag."""
    path = flag_path(settings)
    if not path.exists():
        return False
    path.unlink(missing_ok=True)
    jsonl_log.append(settings.history_log, {"mode": "new-flag-cleared", "why": why})
    return True


def rewritten(settings: Settings, result, what: str) -> None:
    """A written forge or diet carries the continuation: a /new still awaited must not send a second one."""
    if not result.dry_run:
        clear(settings, f"{what} wrote {result.new_session}")


def on_session(settings: Settings, current_sid: str | None) -> str | None:
    """Called each keeper pass with the session the chat is on now; the nudge's outcome when it fires."""
    flag = waiting(settings)
    if flag is None:
        if flag_path(settings).exists():
            clear(settings, "unreadable flag")
        return None
    if not current_sid or current_sid == flag.old_sid:
        return None
    written = {e.get("new_sid") for e in jsonl_log.read(settings.history_log, limit=200)}
    if current_sid in written:
        clear(settings, f"ombre swapped to {current_sid}")
        return None
    clear(settings, f"/new: the chat moved from {flag.old_sid} to {current_sid}")
    return send_nudge(settings, NUDGE_NEW)
