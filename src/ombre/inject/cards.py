"""The per-turn dynamic block (seed §9.1): recalled cards, "Just Now", due reminders and at most one
anniversary card, all inside one budget, for the user side of the current turn only.

The same function answers the UserPromptSubmit hook (over HTTP), the gateway (in process or over HTTP)
and the session-start hook, so no adapter decides what a card is or how much fits.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field

from ..memory.breath import BreathRequest, Card, to_card
from ..memory.embed import INJECT_SIMILARITY, SIMILARITY_FLOOR
from ..memory.model import HANDOFF_TYPE, SHANGHAI, iso, now_utc
from ..memory.service import MemoryService
from ..tokens import estimate_text

HEADER = "【ombre · 本轮记忆（自动召回，仅供参考；不是对方刚说的话）】"
FOOTER = "（标「未确认」的没有对方原话：不要当成事实说出口，拿不准就问。要细节再用 breath 查。）"
SESSION_HEADER = "【ombre · 换窗接续（上一窗口的交接与置顶核心；不是对方刚说的话）】"
# A long message is searched by its end: the person's latest words carry what this turn is about.
QUERY_CHARS = 1_000
# The per-turn hook must answer within DESIGN §6's 150 ms: the vector side embeds only the prompt's last 32
# characters (~25 ms here instead of ~45 for 64; keywords still read all of it). Asked recall embeds up to
# embed.QUERY_CHARS.
EMBED_CHARS = 32
JUST_NOW_SHARE = 0.4  # "Just Now" may take at most this share of the token budget, cards get the rest
KEYWORD_MIN = 0.5  # a keyword match counts from half the best BM25 score of this query


@dataclass
class InjectRequest:
    prompt: str = ""
    session_id: str | None = None
    max_cards: int = 5
    max_tokens: int = 1_800


@dataclass
class SessionStartRequest:
    max_tokens: int = 1_500
    session_id: str | None = None
    source: str | None = None  # startup | resume | compact


@dataclass
class Block:
    """What goes into the turn: the text (empty means inject nothing) and what it holds, for logs."""

    text: str = ""
    cards: list[str] = field(default_factory=list)
    tokens: int = 0
    sections: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # ids that did not fit the budget
    degraded: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def is_command(prompt: str) -> bool:
    """A slash command the person typed (/compact, /model …) asks nothing of memory."""
    head = prompt.split(maxsplit=1)[0] if prompt.split() else ""
    return head.startswith("/") and "/" not in head[1:]


def unasked_ok(card: Card) -> bool:
    """Whether a recalled card is close enough to show without being asked for (see INJECT_SIMILARITY)."""
    similarity = card.why.get("similarity")
    keyword_match = card.why.get("keyword", 0.0) >= KEYWORD_MIN
    if similarity is None:
        return keyword_match
    # a shared word is evidence of its own: then the vector only has to clear the model's floor
    return similarity >= INJECT_SIMILARITY or (keyword_match and similarity >= SIMILARITY_FLOOR)


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


class _Budget:
    def __init__(self, max_cards: int, max_tokens: int, fixed: str) -> None:
        self.cards_left = max_cards
        self.tokens_left = max_tokens - estimate_text(fixed)
        self.ids: list[str] = []
        self.left_out: list[str] = []

    def take(self, card: Card, line: str) -> bool:
        if card.id in self.ids:
            return False
        cost = estimate_text(line)
        if self.cards_left <= 0 or cost > self.tokens_left:
            self.left_out.append(card.id)
            return False
        self.cards_left -= 1
        self.tokens_left -= cost
        self.ids.append(card.id)
        return True


def turn_block(service: MemoryService, req: InjectRequest, *, now: dt.datetime | None = None) -> Block:
    """The dynamic block for one person's turn, or an empty block when nothing is worth injecting."""
    now = now or now_utc()
    prompt = (req.prompt or "").strip()
    if not prompt or is_command(prompt) or req.max_cards < 1 or req.max_tokens < 50:
        return Block()
    # touched below for what is shown: a card the gate drops was not recalled for the person
    result = service.breath(BreathRequest(query=prompt[-QUERY_CHARS:], max_results=req.max_cards,
                                          max_tokens=req.max_tokens), now=now, touch=False,
                             query_chars=EMBED_CHARS)
    budget = _Budget(req.max_cards, req.max_tokens, HEADER + "\n" + FOOTER)
    sections: list[tuple[str, list[str]]] = []

    handoff = _recent_handoff(service, now, service.settings.just_now_mins)
    if handoff is not None:
        text = _clip(handoff, int(req.max_tokens * JUST_NOW_SHARE))
        title = "【刚刚 · 最近一次换窗的交接】"
        cost = estimate_text(title + "\n" + text)
        if cost <= budget.tokens_left:
            budget.tokens_left -= cost
            sections.append((title, [text]))

    today = now.astimezone(SHANGHAI).date()
    days = [today.isoformat(), (today + dt.timedelta(days=1)).isoformat()]
    due = [to_card(m, 1.0, {"due": m.event_date}) for m in service.store.on_dates(days)
           if m.type != HANDOFF_TYPE]
    groups = [
        ("【提醒 · 今明两天】", [(c, f"- {'今天' if c.why['due'] == days[0] else '明天'} {c.render()}") for c in due]),
        ("【今日纪念】", [(c, _line(c)) for c in ([result.anniversary] if result.anniversary else [])]),
        ("【相关记忆】", [(c, _line(c)) for c in result.pinned + result.cards if unasked_ok(c)]),
    ]
    shown = _shown_in(service, req.session_id)
    for title, items in groups:
        # a card this session's window already holds (an earlier turn's block) is not paid for again
        fresh = [(card, line) for card, line in items if card.id not in shown]
        if not fresh:
            continue
        # the title is paid for first: a card is taken only into a section that is in the block
        head = estimate_text(title)
        if head > budget.tokens_left:
            budget.left_out += [card.id for card, _ in fresh]
            continue
        budget.tokens_left -= head
        kept = [line for card, line in fresh if budget.take(card, line)]
        if kept:
            sections.append((title, kept))
        else:
            budget.tokens_left += head
    if not sections:
        return Block(left_out=budget.left_out, degraded=result.degraded)
    text = "\n\n".join([HEADER] + [title + "\n" + "\n".join(lines) for title, lines in sections] + [FOOTER])
    _remember_shown(service, req.session_id, shown, budget.ids)
    service.store.touch(budget.ids, iso(now))
    return Block(text, budget.ids, estimate_text(text), [t for t, _ in sections], budget.left_out,
                 result.degraded)


def session_block(service: MemoryService, req: SessionStartRequest, *, now: dt.datetime | None = None) -> Block:
    """breath(is_session_start=True) — the latest 会话交接 and the pinned core — cut to its own budget."""
    max_tokens = req.max_tokens
    # A window hears its handoff once (cc-connect resumes the same session on every restart); after a
    # compaction the summary has replaced what it heard, so it hears it again.
    key = f"session-start:{req.session_id}" if req.session_id and req.source != "compact" else None
    if key and service.store.meta(key):
        return Block()
    result = service.breath(BreathRequest(is_session_start=True), now=now)
    if not result.handoff or max_tokens < 50:
        return Block(degraded=result.degraded)
    if key:
        service.store.set_meta(key, iso(now or now_utc()))
    body = _clip(result.handoff, max_tokens - estimate_text(SESSION_HEADER) - 2)
    text = SESSION_HEADER + "\n\n" + body
    shown = [c.id for c in result.pinned if c.content[:20] in body]
    return Block(text, shown, estimate_text(text), ["session-start"], degraded=result.degraded)


SHOWN_PER_SESSION = 200


def _shown_in(service: MemoryService, session_id: str | None) -> list[str]:
    """Ids already injected into this session (a forged window has a new id, so its cards come back)."""
    if not session_id:
        return []
    raw = service.store.meta(f"shown:{session_id}")
    try:
        ids = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def _remember_shown(service: MemoryService, session_id: str | None, before: list[str], new: list[str]) -> None:
    if session_id and new:
        service.store.set_meta(f"shown:{session_id}", json.dumps((before + new)[-SHOWN_PER_SESSION:]))


def _recent_handoff(service: MemoryService, now: dt.datetime, minutes: int) -> str | None:
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
    return latest[0].content if now - created <= dt.timedelta(minutes=minutes) else None
