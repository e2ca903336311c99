"""`ombre gateway`: an Anthropic-compatible proxy for bridges and web UIs that run no hooks.

`POST /v1/messages` gets the turn's dynamic block added to the LAST user message only, and only when that
message holds the person's words; with no such message nothing is added (never a fall back to `system`).
`system`, `tools` and every earlier message go upstream value for value, so the cached prefix is the same
from turn to turn. Responses, streaming included, are passed back as raw bytes; any other route is
forwarded untouched. A body that is not JSON, or has no messages, goes upstream as it came, so the
caller gets the upstream's own error.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import hashlib
import json
import threading
from typing import Callable, cast

import httpx
from fastapi import FastAPI, Request
from starlette.background import BackgroundTask
from starlette.responses import JSONResponse, StreamingResponse

from ..memory.service import MemoryService
from ..settings import Settings
from ..transcript.lines import HANDOFF_HEADER
from ..wire import allowed_hosts, misdirected
from .cards import InjectRequest, turn_block
from .hooks import request_block, within_budget

Recall = Callable[[InjectRequest], "str | None"]  # the turn → block text (or None); runs in a worker thread

_HOP_BY_HOP = {
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
}
_REMINDER = "<system-reminder>"


def _is_person_block(block: object) -> bool:
    """A text block of the person's own words (Claude Code's system reminders are text blocks too)."""
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and not block["text"].lstrip().startswith(_REMINDER)
    )


def person_text(message: dict) -> str:
    """The person's words in a user message: its text blocks, without tool results or system reminders."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [b["text"] for b in content if _is_person_block(b)]
    return "\n".join(p for p in parts if p.strip()).strip()


def last_user_prompt(body: object) -> str:
    """The prompt to recall for: the person's words in the last message, if it is a user message."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return ""
    last = messages[-1]
    return person_text(last) if last.get("role") == "user" else ""


def opens_with_handoff(body: dict) -> bool:
    """Whether the conversation's first user message is a swap's handoff pack (the window a tunnel wrote)."""
    messages = body.get("messages")
    first = (
        next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
        if isinstance(messages, list)
        else None
    )
    if first is None:
        return False
    content = first.get("content")
    texts = (
        [content]
        if isinstance(content, str)
        else [b.get("text") for b in content if isinstance(b, dict)]
        if isinstance(content, list)
        else []
    )
    return any(isinstance(t, str) and t.startswith(HANDOFF_HEADER) and "（接上文：" not in t for t in texts)


def earlier_turns(body: dict, limit: int = 3) -> list[str]:
    """The person's words in the user messages before the last one, oldest first (what a fragment of a
    prompt is about); tool results and system reminders are not the person's words."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    said = [person_text(m) for m in messages[:-1] if isinstance(m, dict) and m.get("role") == "user"]
    return [t for t in said if t][-limit:]


def conversation_key(body: dict) -> str | None:
    """Which conversation a request belongs to, for what its window was already shown: Claude Code's
    session id (inside metadata.user_id: a JSON object in 2.1, `user_…_session_<id>` before), else a
    digest of the conversation's first user message."""
    meta = body.get("metadata")
    user_id = meta.get("user_id") if isinstance(meta, dict) else None
    if isinstance(user_id, str):
        try:
            inner = json.loads(user_id)
        except ValueError:
            inner = None
        if isinstance(inner, dict) and isinstance(inner.get("session_id"), str) and inner["session_id"]:
            return inner["session_id"]
        if "_session_" in user_id:
            return user_id.rsplit("_session_", 1)[1] or None
    messages = body.get("messages")
    first = (
        next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
        if isinstance(messages, list)
        else None
    )
    if first is None:
        return None
    seed = json.dumps(first.get("content"), ensure_ascii=False, sort_keys=True)
    return "conv-" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def with_block(body: dict, block: str) -> dict:
    """A copy of `body` whose last (user) message carries `block` as a text block before the person's
    words; everything else is the same objects' values, untouched."""
    out = dict(body)
    messages = list(body["messages"])
    last = copy.deepcopy(messages[-1])
    content = last.get("content")
    added = {"type": "text", "text": block}
    if isinstance(content, str):
        last["content"] = [added, {"type": "text", "text": content}]
    else:
        # tool_result blocks must stay first in a user message, so the block goes before the first text
        at = next(i for i, b in enumerate(content) if _is_person_block(b))
        last["content"] = content[:at] + [added] + content[at:]
    messages[-1] = last
    out["messages"] = messages
    return out


def _forward_headers(request: Request) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}


def create_gateway(
    upstream: str,
    recall: Recall,
    *,
    timeout_s: float = 5.0,
    client: httpx.AsyncClient | None = None,
    hosts: frozenset[str] = allowed_hosts(),
) -> FastAPI:
    """The proxy. Like `ombre serve`, it answers only requests sent to one of `hosts` and takes no browser's
    request from another origin: a page that rebinds its name to 127.0.0.1 must not spend the person's key."""
    http = client or httpx.AsyncClient(base_url=upstream, timeout=httpx.Timeout(600.0, connect=10.0))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await http.aclose()

    app = FastAPI(title="Ombre gateway", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.middleware("http")
    async def same_site(request: Request, call_next):
        refused = misdirected(
            request.method, request.headers.get("host", ""), request.headers.get("origin"), hosts, "ombre gateway"
        )
        if refused:
            status, body = refused
            return JSONResponse(body, status_code=status)
        return await call_next(request)

    async def block_for(turn: InjectRequest) -> str | None:
        try:
            return await asyncio.wait_for(asyncio.to_thread(recall, turn), timeout_s)
        except Exception:  # noqa: BLE001 — timeout or a failing memory side: this turn injects nothing
            return None

    async def forward(request: Request, path: str, content: bytes) -> StreamingResponse | JSONResponse:
        upstream_request = http.build_request(
            request.method, "/" + path, params=request.query_params, headers=_forward_headers(request), content=content
        )
        try:
            response = await http.send(upstream_request, stream=True)
        except httpx.HTTPError as exc:
            return JSONResponse(
                {
                    "type": "error",
                    "error": {"type": "api_error", "message": f"ombre gateway could not reach {upstream}: {exc}"},
                },
                status_code=502,
            )
        headers = {k: v for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP}
        return StreamingResponse(
            response.aiter_raw(),
            status_code=response.status_code,
            headers=headers,
            background=BackgroundTask(response.aclose),
        )

    async def with_memory(raw: bytes) -> bytes:
        """The body with this turn's block in it, or the body unchanged: one the gateway cannot read or
        write back (not JSON, not an object, text that is not UTF-8) is the upstream's to judge, not a 500."""
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                return raw
            prompt = last_user_prompt(body)
            # cast: plain strings are one of the context forms the request takes, and nothing adds to the list
            turn = (
                InjectRequest(
                    prompt,
                    session_id=conversation_key(body),
                    context=cast("list[dict | str]", earlier_turns(body)) or None,
                    budget_ms=timeout_s * 1000,
                    window_has_handoff=opens_with_handoff(body),
                )
                if prompt
                else None
            )
            block = await block_for(turn) if turn else None
            if not block:
                return raw
            return json.dumps(with_block(body, block), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except (ValueError, TypeError, AttributeError, UnicodeError, RecursionError):
            return raw

    @app.post("/v1/messages")
    async def messages(request: Request):
        return await forward(request, "v1/messages", await with_memory(await request.body()))

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
    async def other(request: Request, path: str):
        return await forward(request, path, await request.body())

    return app


class LocalRecall:
    """Recall in this process, from the memory store and model. The store is opened on first use and
    again after a failure, so a broken or missing database costs this turn its cards, not the chat."""

    def __init__(self, open_service: Callable[[], MemoryService], settings: Settings) -> None:
        self.settings = settings
        self._open_service = open_service
        self._service: MemoryService | None = None
        self._lock = threading.Lock()

    def warm(self) -> str | None:
        """Open the store and load the model now; the reason if that failed (the gateway runs anyway)."""
        try:
            self._open().warm()
        except Exception as exc:  # noqa: BLE001 — whatever failed, the gateway runs on without memory
            return str(exc)
        return None

    def _open(self) -> MemoryService:
        with self._lock:
            if self._service is None:
                self._service = self._open_service()
            return self._service

    def __call__(self, turn: InjectRequest) -> str | None:
        s = self.settings
        turn = dataclasses.replace(turn, max_cards=s.inject_max_cards, max_tokens=s.inject_max_tokens)
        block = turn_block(self._open(), turn)
        return None if block.late else block.text or None

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


def remote_recall(settings: Settings) -> Recall:
    """Recall through a running `ombre serve` (OMBRE_URL), exactly as the hook asks it."""

    def recall(turn: InjectRequest) -> str | None:
        block = request_block(
            settings,
            turn.prompt,
            turn.session_id,
            settings.inject_timeout_ms / 1000,
            context=[t for t in turn.context or [] if isinstance(t, str)],
            has_handoff=turn.window_has_handoff,
        )
        if block is None or block.get("late"):
            return None
        return within_budget(block, settings.inject_max_cards, settings.inject_max_tokens)

    return recall
