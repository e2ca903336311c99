"""Claude Code hooks: UserPromptSubmit and SessionStart, the dynamic zone's entry from Claude Code.

This module is the hook process's whole import graph: the standard library, settings, the token estimate,
the transcript's tail reader, the query's limits (memory/query.py, standard library only) and the history
log. It never imports the embedding model, numpy or the web stack — it asks the running
memory service (`ombre serve`) over loopback HTTP and prints what comes back.

Whatever goes wrong (bad stdin, service down, slow, erroring, an answer over budget) the hook prints
nothing and exits 0: exit code 2 would erase the person's prompt, and a "memory busy" line would reach them.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path

from .. import jsonl_log
from ..client import post_json
from ..memory.query import RECENT_TURNS, TURN_CHARS
from ..settings import Settings
from ..tokens import estimate_text
from ..transcript import tail
from ..transcript.lines import opens_with_handoff

# not typing.TYPE_CHECKING: the hook runs every turn, and typing costs ~5 ms to import; mypy reads this name as True
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

EVENTS = {"user-prompt-submit": "UserPromptSubmit", "session-start": "SessionStart"}
MAX_CONTEXT_CHARS = 9_500  # Claude Code truncates hook output past 10,000 characters
SEND_CHARS = 4_000  # the service searches a message by its end; no need to ship a pasted novel
LOG_MAX_BYTES = 1_000_000


def within_budget(block: dict, max_cards: int, max_tokens: int) -> str | None:
    """The block's text if it keeps the budget (checked here too: a misconfigured service must not
    flood the turn), else None."""
    text = block.get("text")
    cards = block.get("cards")
    if not isinstance(text, str) or not text.strip() or not isinstance(cards, list):
        return None
    if len(cards) > max_cards or estimate_text(text) > max_tokens or len(text) > MAX_CONTEXT_CHARS:
        return None
    return text


def request_block(
    settings: Settings,
    prompt: str,
    session_id: object,
    timeout: float,
    *,
    context: list[str] | None = None,
    target: float | None = None,
    has_handoff: bool = False,
) -> dict | None:
    """Ask the running memory service for this turn's block (the hook, and the gateway's remote recall).
    It is told how long we still wait (`timeout`, s: a block finished later is not recorded as shown) and
    how soon we would like it (`target`, s: recall leaves out the slower encoder when that would not fit)."""
    body = {
        "prompt": prompt[-SEND_CHARS:],
        "session_id": session_id,
        "context": context or None,
        "max_cards": settings.inject_max_cards,
        "max_tokens": settings.inject_max_tokens,
        "budget_ms": round(timeout * 1000, 1),
        "target_ms": None if target is None else round(max(0.0, target) * 1000, 1),
        "window_has_handoff": has_handoff,
    }
    return post_json(settings.memory_url + "/v1/inject", body, token=settings.token, timeout=timeout)


def user_prompt_submit(
    payload: dict, settings: Settings, timeout: float, target: float | None = None
) -> tuple[str | None, str, dict]:
    """(additionalContext or None, what happened, what to log of it)."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None, "no prompt", {}
    given = payload.get("transcript_path")
    path = given if isinstance(given, str) else ""
    # as many of the person's earlier utterances, as long, as a query reads
    readable = bool(path)
    context = tail.person_turns(path, RECENT_TURNS, TURN_CHARS) if readable else []
    block = request_block(
        settings,
        prompt,
        payload.get("session_id"),
        timeout,
        context=context,
        target=target,
        has_handoff=readable and opens_with_handoff(path),
    )
    if block is None:
        return None, "memory service unavailable", {"context": len(context)}
    text = within_budget(block, settings.inject_max_cards, settings.inject_max_tokens)
    log = {
        "context": len(context),
        "cards": block.get("cards"),
        "pinned": block.get("pinned"),
        "why": block.get("why"),
        "encoders": block.get("encoders"),
    }
    if block.get("late"):
        return None, "answered after the deadline", log
    return text, (f"{len(block.get('cards') or [])} cards" if text else "nothing to inject"), log


def session_start(
    payload: dict, settings: Settings, timeout: float, target: float | None = None
) -> tuple[str | None, str, dict]:
    source = payload.get("source")
    session_id = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    if not just_swapped(settings, source, session_id):
        return None, f"source {source!r}: no swap to hand over", {}
    path = payload.get("transcript_path")
    if source != "compact" and isinstance(path, str) and path and opens_with_handoff(path):
        return None, "the window already opens with the handoff", {}
    body = {"max_tokens": settings.session_start_max_tokens, "source": source, "session_id": session_id}
    block = post_json(settings.memory_url + "/v1/inject/session-start", body, token=settings.token, timeout=timeout)
    if block is None:
        return None, "memory service unavailable", {}
    text = within_budget(block, 1_000, settings.session_start_max_tokens)
    return text, ("handoff" if text else "nothing to hand over"), {"pinned": block.get("pinned")}


def just_swapped(settings: Settings, source: object, session_id: str | None, now: dt.datetime | None = None) -> bool:
    """Whether this start follows a window swap: a compaction always does; a resume does when the session
    is the output of a forge or diet; a fresh start does when a swap happened within the Just Now span."""
    if source == "compact":
        return True
    if source not in ("resume", "startup"):
        return False
    swaps = [e for e in jsonl_log.read(settings.history_log, limit=200) if e.get("ok") and e.get("new_sid")]
    if source == "resume":
        return any(e["new_sid"] == session_id for e in swaps)
    if not swaps:
        return False
    try:
        at = dt.datetime.fromisoformat(swaps[-1]["at"])
    except (KeyError, TypeError, ValueError):
        return False
    now = now or dt.datetime.now(dt.timezone.utc)
    return now - at <= dt.timedelta(minutes=settings.just_now_mins)


def run(event: str, stdin: TextIO, stdout: TextIO, env: dict | None = None, started: float | None = None) -> int:
    """Run one hook; always returns 0. `started` (time.monotonic()) is when the process began, from which
    the time budget and the latency target count."""
    started = time.monotonic() if started is None else started
    outcome = "bad input"
    settings: Settings | None = None
    details: dict = {}
    try:
        settings = Settings.from_env(env)
        raw = stdin.read()
        payload = json.loads(raw) if raw.strip() else None
        if isinstance(payload, dict):
            budget = settings.inject_timeout_ms / 1000
            # leave room to print before the budget is spent
            timeout = budget - (time.monotonic() - started) - 0.05
            target = settings.inject_target_ms / 1000 - (time.monotonic() - started) - 0.01
            handler = user_prompt_submit if event == "user-prompt-submit" else session_start
            text, outcome, details = handler(payload, settings, timeout, target)
            if text and time.monotonic() - started <= budget:
                stdout.write(
                    json.dumps(
                        {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}},
                        ensure_ascii=False,
                    )
                )
                stdout.flush()
            elif text:
                outcome = "over the time budget"
    except Exception as exc:  # noqa: BLE001 — nothing may reach the person or stop the turn
        outcome = f"error: {type(exc).__name__}"
    if settings is not None:
        _log(settings, event, outcome, (time.monotonic() - started) * 1000, details)
    return 0


def _log(settings: Settings, event: str, outcome: str, ms: float, details: dict) -> None:
    """One line per hook run in OMBRE_HOME/hooks.jsonl (kept under ~1 MB): what happened, and which cards
    were injected and why, for `tail` when a turn had no cards or the wrong ones."""
    path: Path = settings.ombre_home / "hooks.jsonl"
    entry = {"event": event, "outcome": outcome, "ms": round(ms, 1), **{k: v for k, v in details.items() if v}}
    try:
        jsonl_log.append(path, entry, max_bytes=LOG_MAX_BYTES)
    except OSError:
        pass


def main(event: str, started: float | None = None) -> int:
    return run(event, sys.stdin, sys.stdout, started=started)
