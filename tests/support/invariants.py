"""Independent checks of the rewrite guarantees (docs/architecture.md) on a rewritten session, written apart
from ombre's own verifier so that a bug shared by both cannot hide."""
from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from pathlib import Path

UUID_TS = re.compile(r'"uuid":"([0-9a-f-]{36})","timestamp":"')


def _lines(path: Path) -> list[tuple[str, dict]]:
    out = []
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        if raw.strip():
            try:
                out.append((raw, json.loads(raw)))
            except ValueError:
                pass
    return out


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _merged(objs: list[dict]) -> list[tuple[str, list]]:
    """API messages as Claude Code 2.1.112's normalizeMessagesForAPI builds them: consecutive user lines join
    (tool results first); an assistant line joins the assistant message with its message.id found walking
    back over assistant and tool-result messages, else opens one."""
    out: list[dict] = []
    for o in objs:
        kind = o.get("type")
        if kind not in ("user", "assistant"):
            continue
        c = o["message"]["content"]
        blocks = list(c) if isinstance(c, list) else [{"type": "text", "text": c}]
        if kind == "user":
            if out and out[-1]["role"] == "user":
                both = out[-1]["blocks"] + blocks
                out[-1]["blocks"] = [b for b in both if b.get("type") == "tool_result"] + [
                    b for b in both if b.get("type") != "tool_result"]
            else:
                out.append({"role": "user", "blocks": blocks, "id": None})
            continue
        mid = o["message"].get("id")
        home = None
        for m in reversed(out):
            if m["role"] == "assistant" and mid and m["id"] == mid:
                home = m
                break
            if m["role"] == "user" and not any(b.get("type") == "tool_result" for b in m["blocks"]):
                break
        if home is None:
            out.append({"role": "assistant", "blocks": blocks, "id": mid})
        else:
            home["blocks"].extend(blocks)
    return [(m["role"], m["blocks"]) for m in out]


def assert_new_session_sound(source: Path, new: Path, *, squash: int | None = None) -> list[dict]:
    """Assert every rule; return the new file's objects."""
    new = Path(new)
    sid = new.stem
    assert uuid.UUID(sid) and new.parent == Path(source).parent and new != Path(source)
    lines = _lines(new)
    raw_count = len([r for r in new.read_text(encoding="utf-8").splitlines() if r.strip()])
    assert len(lines) == raw_count, "every line of the new file must be valid JSON"
    objs = [o for _, o in lines]
    assert objs, "the new file is empty"
    for raw, o in lines:
        assert raw.startswith('{"parentUuid":'), raw[:80]
        m = UUID_TS.search(raw)
        assert m and m.group(1) == o["uuid"], "uuid must sit directly before timestamp"
        assert o["sessionId"] == sid
    assert objs[0]["parentUuid"] is None
    for a, b in zip(objs, objs[1:]):
        assert b["parentUuid"] == a["uuid"], "one linear chain"
    assert len({o["uuid"] for o in objs}) == len(objs)
    stamps = [_ts(o["timestamp"]) for o in objs]
    assert all(b > a for a, b in zip(stamps, stamps[1:])), "timestamps strictly increasing"
    messages = [o for o in objs if o.get("type") in ("user", "assistant")]
    assert messages[0]["type"] == "user", "first message is a user message"
    assert objs[-1]["type"] == "assistant", "ends on an assistant message"

    src_objs = [o for _, o in _lines(source)]
    src_by_uuid = {o["uuid"]: o for o in src_objs if isinstance(o.get("uuid"), str)}
    src_uses = {b["id"] for o in src_objs if o.get("type") == "assistant"
                for b in (o["message"]["content"] if isinstance(o["message"]["content"], list) else [])
                if isinstance(b, dict) and b.get("type") == "tool_use"}
    src_pairs = {b["tool_use_id"] for o in src_objs if o.get("type") == "user"
                 for b in (o["message"]["content"] if isinstance(o["message"].get("content"), list) else [])
                 if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in src_uses}

    api = _merged(objs)
    all_ids: list[str] = []
    for n, (role, blocks) in enumerate(api):
        uses = [b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        all_ids += uses
        if role == "assistant" and uses:
            nxt = api[n + 1][1] if n + 1 < len(api) else []
            answered = {b.get("tool_use_id") for b in nxt if isinstance(b, dict) and b.get("type") == "tool_result"}
            assert {u for u in uses if u in src_pairs} <= answered, "tool_use lost its tool_result"
        results = [b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if role == "user" and results:
            prev = api[n - 1][1] if n > 0 else []
            asked = {b.get("id") for b in prev if isinstance(b, dict) and b.get("type") == "tool_use"}
            assert {r for r in results if r in src_pairs} <= asked, "tool_result lost its tool_use"
    assert len(all_ids) == len(set(all_ids)), "tool_use ids unique"

    kept_src_order = []
    for raw, o in lines:
        src = src_by_uuid.get(o["uuid"])
        if src is None:
            assert o.get("ombreHandoff") and o is objs[0], "only the handoff line may be new"
            continue
        kept_src_order.append(src_objs.index(src))
        assert o["type"] == src["type"]
        if o["type"] == "assistant":
            want = [(b.get("thinking"), b.get("signature")) for b in src["message"]["content"]
                    if isinstance(b, dict) and b.get("type") == "thinking"]
            got = [(b.get("thinking"), b.get("signature")) for b in o["message"]["content"]
                   if isinstance(b, dict) and b.get("type") == "thinking"]
            assert got == want or (got == [] and squash), "thinking byte-identical"
            for text, _signature in got:
                assert json.dumps(text, ensure_ascii=False) in raw
            usage = o["message"].get("usage")
            if isinstance(usage, dict):
                assert usage.get("cache_read_input_tokens", 0) == 0
                assert usage.get("cache_creation_input_tokens", 0) == 0
        if squash is None:
            assert o.get("message") == src.get("message") or o["type"] == "assistant"
    # Parallel recovery may move a sibling line a little, but never by more than one API response.
    assert kept_src_order, "nothing from the source was kept"
    if squash is not None:
        for o in objs:
            for b in (o.get("message") or {}).get("content") or []:
                if isinstance(b, dict) and b.get("type") in ("image", "document"):
                    assert len(json.dumps(b)) < 2 * squash + 500, "image base64 left in place"
    return objs
