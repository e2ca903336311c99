"""What the real Claude Code CLI sends on `--resume`, set against the chain ombre rebuilds.

Both sides are reduced to the blocks that identify a conversation — the person's and the assistant's text,
thinking (by signature), tool calls and results (by id), images — each with the role of the API message it
travels in. Ombre's side is its rebuilt chain (`scan(path).chain`), turned into API messages by the same
rules Claude Code 2.1.112 applies on resume (tests/support/invariants.py `_merged`, and the resume-time drops:
an assistant line whose every tool call went unanswered, a thinking-only line of a response with nothing
else). System reminders Claude Code adds and the prompt of the resuming turn are left out of the request.
"""
from __future__ import annotations

from pathlib import Path

from ombre.transcript.chain import scan
from tests.support.invariants import _merged

REMINDER = "<system-reminder>"


def _tokens(role: str, blocks: list) -> list[tuple[str, str]]:
    out = []
    for b in blocks:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text":
            text = (b.get("text") or "").strip()
            if text and not text.startswith(REMINDER):
                out.append((role, "text:" + text[:80]))
        elif kind in ("thinking", "redacted_thinking"):
            out.append((role, "thinking:" + (b.get("signature") or b.get("data") or "")[:40]))
        elif kind == "tool_use":
            out.append((role, "tool_use:" + str(b.get("id"))))
        elif kind == "tool_result":
            out.append((role, "tool_result:" + str(b.get("tool_use_id"))))
        elif kind in ("image", "document"):
            out.append((role, kind))
    return out


def request_tokens(body: dict, prompt: str) -> list[tuple[str, str]]:
    out = []
    for m in body["messages"]:
        content = m.get("content")
        out += _tokens(m["role"], [{"type": "text", "text": content}] if isinstance(content, str) else content)
    while out and out[-1] == ("user", "text:" + prompt):
        out.pop()
    return out


def _resume_drops(objs: list[dict]) -> list[dict]:
    """Lines Claude Code leaves out on resume before normalizing (its filterUnresolvedToolUses and
    dropOrphanThinkingOnly)."""
    answered = {b.get("tool_use_id") for o in objs for b in _blocks(o) if b.get("type") == "tool_result"}
    kept = []
    for o in objs:
        uses = [b.get("id") for b in _blocks(o) if b.get("type") == "tool_use"]
        if o.get("type") == "assistant" and uses and not any(u in answered for u in uses):
            continue
        kept.append(o)
    said = {o["message"].get("id") for o in kept if o.get("type") == "assistant"
            and any(b.get("type") not in ("thinking", "redacted_thinking") for b in _blocks(o))}
    return [o for o in kept if not (o.get("type") == "assistant" and _blocks(o) and o["message"].get("id") not in said
                                    and all(b.get("type") in ("thinking", "redacted_thinking") for b in _blocks(o)))]


def _blocks(o: dict) -> list[dict]:
    content = (o.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def chain_tokens(path: Path) -> list[tuple[str, str]]:
    """Ombre's rebuilt chain of `path`, as the blocks of the API messages Claude Code would send."""
    with scan(path) as t:
        objs = [t.load(e) for e in t.events]
    out = []
    for role, blocks in _merged(_resume_drops(objs)):
        out += _tokens(role, blocks)
    return out
