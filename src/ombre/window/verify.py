"""The invariants a rewritten session must hold before anything may point at it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..clock import parse_timestamp
from ..errors import InvariantError
from ..transcript.chain import clip, scan
from ..transcript.lines import message_text
from ..transcript.reader import iter_lines

_UUID_THEN_TS = re.compile(rb'"uuid":"([0-9a-fA-F-]{36})","timestamp":"')


@dataclass
class Expectation:
    session_id: str
    source_pairs: set[str] = field(default_factory=set)  # tool_use ids whose pair was whole in the source
    thinking: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # uuid -> (text, signature)
    handoff_uuid: str | None = None
    # what the person said last (or the compaction summary standing for it): must be in the new window
    required: list[str] = field(default_factory=list)


def verify_session(path: Path, expect: Expectation) -> None:
    """Raise InvariantError naming the first broken rule; return quietly when the file is sound."""
    problems = check_session(path, expect)
    if problems:
        raise InvariantError(
            "the new session failed verification and was not put in place:\n  " + "\n  ".join(problems[:10]),
            hint="this is a bug in ombre; the original session is untouched and still usable",
        )


def check_session(path: Path, expect: Expectation | None = None) -> list[str]:
    problems: list[str] = []
    objs: list[dict] = []
    for line in iter_lines(path):
        if line.obj is None:
            problems.append(f"line {line.lineno} is not valid JSON: {line.error}")
            continue
        if not line.raw.startswith(b'{"parentUuid":'):
            problems.append(
                f'line {line.lineno} does not start with {{"parentUuid": (Claude Code\'s reader '
                f"of big files would skip it)"
            )
        m = _UUID_THEN_TS.search(line.raw)
        if not m or m.group(1).decode() != line.obj.get("uuid"):
            problems.append(f"line {line.lineno}: uuid is not directly followed by timestamp")
        objs.append(line.obj)
    if problems or not objs:
        return problems or ["the file holds no lines"]
    if expect and any(o.get("sessionId") != expect.session_id for o in objs):
        problems.append("a line carries a sessionId other than the new session's")
    # One linear chain: first has no parent, each line's parent is the line before.
    if objs[0].get("parentUuid") is not None:
        problems.append("the first line has a parentUuid")
    for a, b in zip(objs, objs[1:]):
        if b.get("parentUuid") != a.get("uuid"):
            problems.append(f"line with uuid {b.get('uuid')} does not follow the line before it")
            break
    uuids = [o.get("uuid") for o in objs]
    if len(set(uuids)) != len(uuids):
        problems.append("duplicate uuids")
    stamps = [parse_timestamp(o.get("timestamp")) for o in objs]
    readable = [s for s in stamps if s is not None]
    if len(readable) != len(stamps):
        problems.append("a line has no readable timestamp")
    elif any(b <= a for a, b in zip(readable, readable[1:])):
        problems.append("timestamps are not strictly increasing")
    messages = [o for o in objs if o.get("type") in ("user", "assistant")]
    if not messages or messages[0].get("type") != "user":
        problems.append("the first message is not a user message")
    if objs[-1].get("type") != "assistant":
        problems.append("the session does not end on an assistant message")
    problems += _check_tool_pairs(messages, expect.source_pairs if expect else None)
    if expect:
        problems += _check_thinking(objs, expect)
        problems += _check_required(messages, expect.required)
    # Claude Code's own chain rebuild must land on the same lines in the same order.
    with scan(path) as t:
        if [e.uuid for e in t.chain] != uuids:
            problems.append("the rebuilt chain differs from the file's lines (leaf or links are off)")
    return problems


def _api_messages(messages: list[dict]) -> list[tuple[str, list]]:
    """The lines as Claude Code 2.1.112 turns them into API messages (normalizeMessagesForAPI): a user line
    joins a user message before it (tool results first); an assistant line joins the assistant message of
    the same message.id found by walking back over assistant and tool-result messages (one response whose
    blocks continue after a tool result is one message), else starts a new one."""
    out: list[tuple[str, list]] = []
    ids: list[str | None] = []
    for o in messages:
        role = o["type"]
        message = o.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        msg_id = message.get("id") if isinstance(message, dict) else None
        if role == "user":
            if out and out[-1][0] == "user":
                merged = out[-1][1] + list(blocks)
                out[-1] = ("user", [b for b in merged if _is_result(b)] + [b for b in merged if not _is_result(b)])
            else:
                out.append(("user", list(blocks)))
                ids.append(None)
            continue
        target = None
        for n in range(len(out) - 1, -1, -1) if msg_id else ():
            role_n, blocks_n = out[n]
            if role_n == "assistant":
                if ids[n] == msg_id:
                    target = n
                    break
            elif not any(_is_result(b) for b in blocks_n):
                break  # a person's message ends the walk
        if target is None:
            out.append(("assistant", list(blocks)))
            ids.append(msg_id)
        else:
            out[target][1].extend(blocks)
    return out


def _is_result(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _check_tool_pairs(messages: list[dict], source_pairs: set[str] | None) -> list[str]:
    problems = []
    api = _api_messages(messages)
    seen_ids: set[str] = set()
    for n, (role, blocks) in enumerate(api):
        if role == "assistant":
            ids = [
                b["id"]
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
            ]
            for tid in ids:
                if tid in seen_ids:
                    problems.append(f"tool_use id {tid} appears twice")
                seen_ids.add(tid)
            nxt = api[n + 1][1] if n + 1 < len(api) else []
            answered = {
                b.get("tool_use_id")
                for b in nxt
                if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
            }
            for tid in ids:
                if tid not in answered and (source_pairs is None or tid in source_pairs):
                    problems.append(f"tool_use {tid} lost its tool_result")
        else:
            prev = api[n - 1][1] if n > 0 else []
            asked = {
                b.get("id")
                for b in prev
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
            }
            for b in blocks:
                if (
                    isinstance(b, dict)
                    and b.get("type") == "tool_result"
                    and isinstance(b.get("tool_use_id"), str)
                    and b.get("tool_use_id") not in asked
                ):
                    if source_pairs is None or b["tool_use_id"] in source_pairs:
                        problems.append(f"tool_result for {b.get('tool_use_id')} lost its tool_use")
    return problems


def _check_required(messages: list[dict], required: list[str]) -> list[str]:
    """The newest person's words (or the summary that stands for them) are in the window, verbatim."""
    if not required:
        return []
    said = "\n\n".join(message_text(o) for o in messages if o.get("type") == "user")
    return [
        f"the new window lost what the model knew: {clip(text, 60)!r} is not in it (the newest person's "
        "words, or the compaction summary standing for them)"
        for text in required
        if text not in said
    ]


def _check_thinking(objs: list[dict], expect: Expectation) -> list[str]:
    problems = []
    for o in objs:
        uuid = o.get("uuid")
        want = expect.thinking.get(uuid) if isinstance(uuid, str) else None  # its keys are uuids, all str
        if want is None:
            continue
        message = o.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        got = (
            [
                (b.get("thinking") or b.get("data") or "", b.get("signature") or "")
                for b in content
                if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
            ]
            if isinstance(content, list)
            else []
        )
        if got != want:
            problems.append(f"thinking blocks of {o.get('uuid')} changed")
    return problems
