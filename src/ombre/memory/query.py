"""What a recall searches for: the person's latest words and, in a chat, their own recent turns.

A per-turn prompt is often a fragment ("那周三呢？"); what it is about was said a few turns back. So a query
is built from the person's utterances only — never the assistant's (it may have brought up something else),
never tool output, never speaker tags — and embedded as several short texts rather than one long cut: the
latest utterance alone, and the recent ones together. Keywords read the latest utterance whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# The latest utterance's vector is taken from its last LATEST_TOKENS tokens (a long message says what it
# asks at its end: "…我真正想问的是：…"); each earlier turn gives at most TURN_TOKENS, and at most RECENT_TURNS
# of them are read. Tokens are each encoder's own (embed.tail): a Chinese character is about one, an English
# word one or two, so an English question keeps its start. Chosen on the dev splits (bench/recall_eval.py),
# where they were first characters of Chinese text.
LATEST_TOKENS = 128
TURN_TOKENS = 96
RECENT_TURNS = 3
# What a client sends of each earlier turn: enough characters for TURN_TOKENS of English (the service cuts)
TURN_CHARS = 480
KEYWORD_TURN_CHARS = 96  # the recent turns' keyword signal reads each turn's end (chosen on dev, in characters)
KEYWORD_CHARS = 1_000  # BM25 reads the whole message, up to a pasted-novel bound

PERSON_ROLES = frozenset({"user", "human", "person", "me", "我", "用户", "对方"})
_TAG = re.compile(
    r"^\s*[\[【(（]?\s*(user|human|person|me|我|用户|对方|assistant|ai|bot|model|system|tool|"
    r"claude|助手|系统)\s*[\]】)）]?\s*[:：]\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Query:
    latest: str
    recent: tuple[str, ...] = ()  # the person's earlier utterances, oldest first

    @classmethod
    def build(cls, text: str, context: object = None) -> "Query":
        """A query from what the person says now and, optionally, the chat before it.

        `context` is the recent chat, oldest first, in any of the shapes callers have: a list of
        {"role", "text"|"content"} turns (Anthropic/OpenAI style; content may be a list of blocks), a list of
        strings, or one string of lines; a line may carry a speaker tag ("用户：", "assistant:"), and a turn
        or line tagged as anyone but the person is left out. Untagged strings are the person's.
        """
        latest = (text or "").strip()
        turns = person_turns(context)
        if not latest and turns:
            latest = turns.pop()
        while turns and turns[-1] == latest:  # the transcript may already hold the prompt
            turns.pop()
        return cls(latest, tuple(turns[-RECENT_TURNS:]))

    @property
    def keyword_text(self) -> str:
        return self.latest[-KEYWORD_CHARS:]

    @property
    def context_text(self) -> str:
        """The recent turns as keywords see them (a second, lower-weighted keyword signal)."""
        return " ".join(t[-KEYWORD_TURN_CHARS:] for t in self.recent)

    def forms(self, cut: Callable[[str, int], str] | None = None) -> dict[str, str]:
        """The short texts to embed: "latest", and "recent" (earlier turns + latest) when there is a chat.
        `cut(text, tokens)` keeps a text's end within that many of an encoder's tokens (embed.tail); without
        it, characters stand in for tokens."""

        def end(text: str, tokens: int) -> str:
            return cut(text[-tokens * 5 :], tokens) if cut is not None else text[-tokens:]

        forms = {"latest": end(self.latest, LATEST_TOKENS)}
        if self.recent:
            forms["recent"] = "\n".join([end(t, TURN_TOKENS) for t in self.recent] + [end(self.latest, TURN_TOKENS)])
        return forms


def speaker_tag(line: str) -> tuple[str | None, str]:
    """A line's speaker tag ("用户：", "assistant:") lowercased, or None, and the words after it."""
    m = _TAG.match(line)
    if not m:
        return None, line.strip()
    return m.group(1).lower(), line[m.end() :].strip()


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # message blocks: only text is the person's words (not tool results)
        return "\n".join(
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def person_turns(context: object) -> list[str]:
    """The person's own utterances in `context` (see Query.build), oldest first, tags removed."""
    if context is None:
        return []
    items = context.splitlines() if isinstance(context, str) else context if isinstance(context, list) else []
    out: list[str] = []
    for item in items:
        if isinstance(item, dict):
            role = str(item.get("role") or "user").lower()
            text = _content_text(item.get("text", item.get("content")))
            if role not in PERSON_ROLES:
                continue
            tag, text = speaker_tag(text)
        elif isinstance(item, str):
            tag, text = speaker_tag(item)
        else:
            continue
        if tag is not None and tag not in PERSON_ROLES:
            continue
        if text:
            out.append(text)
    return out
