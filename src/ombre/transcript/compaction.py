"""What a compaction summary says the person asked.

After a compaction the person's words before it live only inside the summary Claude Code wrote
("This session is being continued from a previous conversation…"). Its summariser is asked for numbered
sections, one of them "All user messages" (every message the person typed, quoted), another "Primary
Request and Intent"; a summary written in Chinese names them in Chinese. This module finds the person's
words there, so the handoff pack and the anchors can show them, each marked as taken from the summary.
"""

from __future__ import annotations

import re

# Section headings, in the order they are trusted: the person's own messages quoted, then what they asked.
_MESSAGES = re.compile(
    r"(all|every)\s+(of\s+the\s+)?user('s)?\s+messages|^user\s+messages|"
    r"用户(的)?(所有)?(消息|原话|发言)|"
    r"对方(说的话|的话|的消息|原话)|所有用户",
    re.I,
)
_REQUEST = re.compile(
    r"primary\s+request|request\s+and\s+intent|user('s)?\s+(request|intent)|主要(请求|诉求|需求)|"
    r"用户(的)?(请求|意图|需求)|对方(的)?(请求|需求)",
    re.I,
)
# A heading is a line of its own: "6. All user messages:", "## 用户消息", "**Pending Tasks**:", "一、主要请求：".
# A numbered line with text after its colon ("1. **User's request**: "…"") is a list item, not a heading.
_HEADINGS = (
    re.compile(r"^\s{0,3}#{1,6}\s*(?P<title>[^\n]{2,80}?)\s*[:：]?\s*$"),
    re.compile(r"^\s{0,3}(?:\d{1,2}|[一二三四五六七八九十]{1,3})\s*[.)、．]\s*(?P<title>[^\n:：]{2,80}?)\s*[:：]\s*$"),
    re.compile(r"^\s{0,3}[*_]{2}(?P<title>[^\n*_]{2,80}?)[:：]?[*_]{2}\s*[:：]?\s*$"),
    re.compile(r"^(?P<title>Summary|Analysis|摘要|总结)\s*[:：]\s*$", re.I),
)
_ITEM = re.compile(r"^\s*(?:[-*•·]|\d{1,3}[.)、])\s+(?P<text>.+?)\s*$")
_QUOTED = re.compile(r'^["“「『\'](?P<q>.+?)["”」』\'](?=\s|$|[（(,，;；:：—-])')
MAX_QUOTES = 12
# The summariser's own instruction, which it lists among the user's messages: not the person's words.
_THE_REQUEST_FOR_IT = re.compile(
    r"^(your task is to create a detailed summary|"
    r"请(详细)?总结(一下)?(目前|到目前为止)?的?对话)",
    re.I,
)


def is_continuation(text: str) -> bool:
    return text.lstrip().startswith("This session is being continued from a previous conversation")


def _sections(text: str) -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        m = next((m for m in (h.match(line) for h in _HEADINGS) if m), None)
        if m:
            sections.append((m.group("title").strip(), []))
        else:
            sections[-1][1].append(line)
    return sections


def _quote(item: str) -> str | None:
    """The person's words in one list item: its leading quotation, else the item itself; None for a note
    about them such as "(interrupted the run)"."""
    item = item.strip().strip("*").strip()
    m = _QUOTED.match(item)
    if m:
        return m.group("q").strip() or None
    if not item or item[0] in "(（[【":
        return None
    return item


def asked(text: str) -> list[str]:
    """The person's words a compaction summary records, oldest first (at most MAX_QUOTES, the newest)."""
    sections = _sections(text)
    for pattern in (_MESSAGES, _REQUEST):
        found: list[str] = []
        for title, body in sections:
            if not title or not pattern.search(title):
                continue
            for line in body:
                m = _ITEM.match(line)
                said = _quote(m.group("text")) if m else (line.strip() if pattern is _REQUEST else None)
                if said and said not in found and not _THE_REQUEST_FOR_IT.match(said):
                    found.append(said)
        if found:
            return found[-MAX_QUOTES:]
    return []
