"""The per-turn dynamic block: recalled cards, "Just Now", due reminders and at most one
anniversary card, all inside one budget, for the user side of the current turn only.

The same function answers the UserPromptSubmit hook (over HTTP), the gateway (in process or over HTTP)
and the session-start hook, so no adapter decides what a card is or how much fits.

What a session has already been shown is remembered per session: a card, the pinned core (which the
session-start block carries) and the "Just Now" handoff are each injected once, and again only in a new
window (a forge or diet writes a new session id) or after a compaction. Only a block the client received
counts: one finished after the client's deadline is answered but not remembered, and its cards earn no
activation.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field

from .. import wire
from ..clock import SHANGHAI, iso, now_utc
from ..memory import anniversary
from ..memory.breath import BreathRequest, Card, bookkeeping, to_card
from ..memory.model import HANDOFF_TYPE, Memory
from ..memory.service import MemoryService
from ..tokens import estimate_text

HEADER = "【ombre · 本轮记忆（自动召回，仅供参考；不是对方刚说的话）】"
FOOTER = "（标「未确认」的没有对方原话：不要当成事实说出口，拿不准就问。要细节再用 breath 查。）"
SESSION_HEADER = "【ombre · 换窗接续（上一窗口的交接与置顶核心；不是对方刚说的话）】"
JUST_NOW_TITLE = "【刚刚 · 最近一次换窗的交接】"
JUST_NOW_SHARE = 0.4  # "Just Now" may take at most this share of the token budget, cards get the rest
MAX_PINNED = 3  # pinned core cards a turn may carry, outside the card count (they still cost tokens)
SHOWN_PER_SESSION = 200


@dataclass
class InjectRequest:
    prompt: str = ""
    session_id: str | None = None
    max_cards: int = 5
    max_tokens: int = 1_800
    # the person's recent turns, oldest first (query.Query.build): what a fragment of a prompt is about
    context: list[dict | str] | str | None = None
    # How long the client still waits, in ms, when it sends the request: a block finished later is not
    # recorded as shown. `target_ms` is how soon it would like the answer: recall leaves out the slower
    # encoder when that would not fit.
    budget_ms: float | None = None
    target_ms: float | None = None
    # the window opens with a swap's handoff pack already: "Just Now" would say it a second time
    window_has_handoff: bool = False


@dataclass
class SessionStartRequest:
    max_tokens: int = 1_500
    session_id: str | None = None
    source: str | None = None  # startup | resume | compact


@dataclass
class Block:
    """What goes into the turn: the text (empty means inject nothing) and what it holds, for logs."""

    text: str = ""
    cards: list[str] = field(default_factory=list)  # recalled, reminder and anniversary cards (ids)
    tokens: int = 0
    sections: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # ids that did not fit the budget
    degraded: list[str] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)  # pinned core shown, outside the card count
    why: dict[str, str] = field(default_factory=dict)  # id → why it was shown, for the hook log
    encoders: list[str] = field(default_factory=list)
    late: bool = False  # finished after the client's deadline: nothing was recorded as shown

    def to_dict(self) -> dict:
        return asdict(self)


def is_command(prompt: str) -> bool:
    """A slash command the person typed (/compact, /model …) asks nothing of memory."""
    head = prompt.split(maxsplit=1)[0] if prompt.split() else ""
    return head.startswith("/") and "/" not in head[1:]


def _line(card: Card) -> str:
    return f"- {card.render()}"


def _clip(text: str, max_tokens: int) -> str:
    """Cut text to about max_tokens (estimated), marking the cut."""
    if estimate_text(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # longest prefix that fits
        mid = (lo + hi + 1) // 2
        if estimate_text(text[:mid]) + 2 <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…"


def _why(card: Card) -> str:
    why = card.why
    if "due" in why:
        return f"due {why['due']}"
    if "anniversary" in why:
        return "anniversary"
    # the lift beside the cosine: the gate weighs them together (fusion.Gate)
    lifts = why.get("lift") or {}
    sims = " ".join(
        f"{k} {v:.2f}" + (f" lift {lifts[k]:.1f}" if k in lifts else "") for k, v in (why.get("sim") or {}).items()
    )
    return f"relevance {why.get('relevance', 0):.2f}; {sims}; keyword {why.get('keyword', 0):.2f}".strip()


class _Budget:
    def __init__(self, max_cards: int, max_tokens: int, fixed: str) -> None:
        self.cards_left = max_cards
        self.tokens_left = max_tokens - estimate_text(fixed)
        self.ids: list[str] = []
        self.left_out: list[str] = []

    def take(self, card: Card, line: str, counts: bool = True) -> bool:
        """Take a card if it fits; `counts=False` (pinned core) costs tokens but not one of the cards."""
        if card.id in self.ids:
            return False
        cost = estimate_text(line)
        if (counts and self.cards_left <= 0) or cost > self.tokens_left:
            self.left_out.append(card.id)
            return False
        self.cards_left -= counts
        self.tokens_left -= cost
        self.ids.append(card.id)
        return True


def _deadline(ms: float | None, received: float) -> float | None:
    return None if ms is None else received + max(0.0, ms) / 1000


def turn_block(
    service: MemoryService, req: InjectRequest, *, now: dt.datetime | None = None, received: float | None = None
) -> Block:
    """The dynamic block for one person's turn, or an empty block when nothing is worth injecting.
    `received` (time.monotonic()) is when the request arrived; its budgets count from there."""
    received = time.monotonic() if received is None else received
    now = now or now_utc()
    wire.check([req.prompt, req.context, req.session_id], "the inject request")
    prompt = (req.prompt or "").strip()
    if not prompt or is_command(prompt) or req.max_cards < 1 or req.max_tokens < 50:
        return Block()
    # What the block needs whatever recall finds is read first, so that recall plans with the time left after
    # it (under load these reads wait for the database like any other).
    seen = _Seen(service, req.session_id)
    handoff = None if req.window_has_handoff else _recent_handoff(service, now, service.settings.just_now_mins)
    today = now.astimezone(SHANGHAI).date()
    tomorrow = today + dt.timedelta(days=1)
    due = [
        (to_card(m, 1.0, {"due": day.isoformat()}), day)
        for m, day in anniversary.due(service.store, [today, tomorrow])
        if m.type != HANDOFF_TYPE
    ]
    # touched below for what is shown: a card the gate drops was not recalled for the person
    result = service.breath(
        BreathRequest(query=prompt, context=req.context, max_results=req.max_cards, max_tokens=req.max_tokens),
        now=now,
        touch=False,
        deadline=_deadline(req.target_ms, received),
    )
    budget = _Budget(req.max_cards, req.max_tokens, HEADER + "\n" + FOOTER)
    sections: list[tuple[str, list[str]]] = []

    if handoff is not None and not seen.just_now(handoff.id):
        text = _clip(handoff.content, int(req.max_tokens * JUST_NOW_SHARE))
        cost = estimate_text(JUST_NOW_TITLE + "\n" + text)
        if cost <= budget.tokens_left:
            budget.tokens_left -= cost
            sections.append((JUST_NOW_TITLE, [text]))
            seen.handoff = handoff.id

    # a handoff reaches a window once, by the swap's own paths ("Just Now", the session start, the window's
    # first line): as a recalled card it would come back turn after turn, marked 未确认
    recalled = [c for c in result.cards if c.relevant and c.type != HANDOFF_TYPE]
    groups = [
        ("【提醒 · 今明两天】", [(c, f"- {'今天' if day == today else '明天'} {c.render()}", True) for c, day in due]),
        ("【今日纪念】", [(c, _line(c), True) for c in ([result.anniversary] if result.anniversary else [])]),
        ("【置顶核心】", [(c, _line(c), False) for c in result.pinned[:MAX_PINNED]]),
        ("【相关记忆】", [(c, _line(c), True) for c in recalled]),
    ]
    why: dict[str, str] = {}
    for title, items in groups:
        # a card this session's window already holds (an earlier turn's block) is not paid for again
        fresh = [(card, line, counts) for card, line, counts in items if card.id not in seen.ids]
        if not fresh:
            continue
        # the title is paid for first: a card is taken only into a section that is in the block
        head = estimate_text(title)
        if head > budget.tokens_left:
            budget.left_out += [card.id for card, _, _ in fresh]
            continue
        budget.tokens_left -= head
        kept = []
        for card, line, counts in fresh:
            if budget.take(card, line, counts):
                kept.append(line)
                why[card.id] = _why(card)
        if kept:
            sections.append((title, kept))
        else:
            budget.tokens_left += head
    pinned = [c.id for c in result.pinned if c.id in budget.ids]
    block = Block(left_out=budget.left_out, degraded=result.degraded, encoders=result.encoders)
    if not sections:
        return block
    block.text = "\n\n".join([HEADER] + [title + "\n" + "\n".join(lines) for title, lines in sections] + [FOOTER])
    block.cards = [i for i in budget.ids if i not in pinned]
    block.pinned, block.tokens, block.sections, block.why = (
        pinned,
        estimate_text(block.text),
        [t for t, _ in sections],
        why,
    )
    deadline = _deadline(req.budget_ms, received)
    if deadline is not None and time.monotonic() > deadline:
        block.late = True  # the client has stopped waiting: it never saw these cards
        return block

    def record() -> None:
        seen.remember(budget.ids)
        service.store.touch(budget.ids, iso(now))

    bookkeeping(record, block.degraded)
    return block


def session_block(service: MemoryService, req: SessionStartRequest, *, now: dt.datetime | None = None) -> Block:
    """breath(is_session_start=True) — the latest 会话交接 and the pinned core — cut to its own budget.

    A window hears it once (cc-connect resumes the same session on every restart); after a compaction the
    summary has replaced what it heard, so it hears it again, and its turns may show "Just Now" and the
    pinned core once more."""
    max_tokens = req.max_tokens
    key = f"session-start:{req.session_id}" if req.session_id and req.source != "compact" else None
    if key and service.store.meta(key):
        return Block()
    result = service.breath(BreathRequest(is_session_start=True), now=now)
    if not (result.handoff or result.pinned) or max_tokens < 50:
        return Block(degraded=result.degraded)
    body = _clip(result.render(), max_tokens - estimate_text(SESSION_HEADER) - 2)
    text = SESSION_HEADER + "\n\n" + body
    shown = [c.id for c in result.pinned if c.content[:20] in body]
    seen = _Seen(service, req.session_id, fresh=req.source == "compact")
    if result.handoff:
        latest = service.store.list(type=HANDOFF_TYPE, limit=1)
        seen.handoff = latest[0].id if latest else None
    seen.remember(shown)
    if key:
        service.store.set_meta(key, iso(now or now_utc()))
    return Block(text, [], estimate_text(text), ["session-start"], degraded=result.degraded, pinned=shown)


class _Seen:
    """What one session's window already holds: card ids, and the handoff its "Just Now" carried.
    Without a session id nothing is remembered (and "Just Now" is never shown: it could repeat forever)."""

    def __init__(self, service: MemoryService, session_id: str | None, fresh: bool = False) -> None:
        self.service, self.session_id = service, session_id
        self.ids: list[str] = [] if fresh else self._load()
        self._handoff_before = None if fresh or not session_id else service.store.meta(f"just-now:{session_id}")
        self.handoff: str | None = None
        self._fresh = fresh

    def _load(self) -> list[str]:
        if not self.session_id:
            return []
        raw = self.service.store.meta(f"shown:{self.session_id}")
        try:
            ids = json.loads(raw) if raw else []
        except ValueError:
            return []
        return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []

    def just_now(self, handoff_id: str) -> bool:
        """Whether this window already heard this handoff (or cannot say: no session id)."""
        return not self.session_id or self._handoff_before == handoff_id

    def remember(self, new: list[str]) -> None:
        if not self.session_id:
            return
        if new or self._fresh:
            self.service.store.set_meta(f"shown:{self.session_id}", json.dumps((self.ids + new)[-SHOWN_PER_SESSION:]))
        if self.handoff is not None:
            self.service.store.set_meta(f"just-now:{self.session_id}", self.handoff)
        elif self._fresh:
            self.service.store.set_meta(f"just-now:{self.session_id}", "")


def _recent_handoff(service: MemoryService, now: dt.datetime, minutes: int) -> Memory | None:
    """The latest 会话交接 if a window was swapped within `minutes`: the cross-window "Just Now"."""
    if minutes <= 0:
        return None
    latest = service.store.list(type=HANDOFF_TYPE, limit=1)
    if not latest:
        return None
    try:
        created = dt.datetime.fromisoformat(latest[0].created)
    except ValueError:
        return None
    return latest[0] if now - created <= dt.timedelta(minutes=minutes) else None
