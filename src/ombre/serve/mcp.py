"""The MCP server: tools `hold` and `breath`, named and shaped like the public Ombre's.

Each tool is a few lines over MemoryService; its docstring is the description the agent reads. Over stdio
(what Claude Code starts for each of its processes) the tools relay to the running service's /mcp when it
answers, so a companion's processes share one service and its loaded models; only when it does not answer
does the stdio process open the store itself. Either way the tools, and so Claude Code's cached prefix, are
the same.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

from ..errors import OmbreError
from ..memory.breath import BreathRequest, Card
from ..memory.hold import HoldRequest
from ..memory.service import MemoryService


class HoldOut(BaseModel):
    stored: bool
    id: str | None = None
    status: str | None = None
    decision: str
    reasons: list[str] = []
    warnings: list[str] = []
    error: str | None = None


class CardOut(BaseModel):
    id: str
    text: str
    score: float
    status: str
    relevant: bool = True


class BreathOut(BaseModel):
    text: str  # ready to read (BreathResult.render, as the CLI prints it): handoff, pinned core, cards, anniversary
    cards: list[CardOut] = []
    pinned: list[CardOut] = []
    degraded: list[str] = []
    error: str | None = None


def _card(c: Card) -> CardOut:
    return CardOut(id=c.id, text=c.render(), score=c.score, status=c.status, relevant=c.relevant)


def _tags(tags: list[str] | str | None) -> list[str]:
    if isinstance(tags, str):
        return [t.strip() for t in tags.replace("，", ",").split(",") if t.strip()]
    return list(tags or [])


class Relay:
    """Tool calls answered by the running service's MCP endpoint (`url`, with its bearer token); when that does
    not answer, by a service this process opens on first need (`open_local`) and keeps."""

    def __init__(
        self, url: str, token: str | None, open_local: Callable[[], MemoryService], timeout: float = 30.0
    ) -> None:
        self.url, self.token, self.timeout = url, token, timeout
        self._open_local = open_local
        self._local: MemoryService | None = None
        self._lock = threading.Lock()

    async def call(self, tool: str, args: dict[str, Any]) -> dict | None:
        """The running service's structured answer, or None when it cannot be reached (nothing was done)."""
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            async with httpx.AsyncClient(headers=headers, timeout=self.timeout) as client:
                async with streamable_http_client(self.url, http_client=client) as (read, write, _):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        result = await session.call_tool(tool, args)
        except (httpx.TransportError, httpx.HTTPStatusError, ExceptionGroup) as exc:
            if not _unreachable(exc):
                raise
            return None
        return result.structuredContent if not result.isError else None

    def local(self) -> MemoryService:
        with self._lock:
            if self._local is None:
                print(f"ombre: {self.url} does not answer; answering from this process", file=sys.stderr)
                self._local = self._open_local()
            return self._local

    def close(self) -> None:
        if self._local is not None:
            self._local.close()


def _unreachable(exc: BaseException) -> bool:
    """A connection that failed before any tool ran (refused, timed out, a wrong token): safe to answer locally."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_unreachable(e) for e in exc.exceptions)
    return isinstance(exc, (httpx.TransportError, httpx.HTTPStatusError))


def _hold(service: MemoryService, args: dict[str, Any]) -> HoldOut:
    try:
        r = service.hold(HoldRequest(**{**args, "tags": _tags(args.get("tags"))}))
    except OmbreError as exc:
        return HoldOut(stored=False, decision="error", error=f"{exc.message} {exc.hint}".strip())
    return HoldOut(
        stored=r.stored,
        id=r.id,
        status=r.status,
        decision=r.decision,
        reasons=r.reasons,
        warnings=r.warnings + r.scarcity,
    )


def _breath(service: MemoryService, args: dict[str, Any]) -> BreathOut:
    try:
        r = service.breath(BreathRequest(**args))
    except OmbreError as exc:
        return BreathOut(text="", error=f"{exc.message} {exc.hint}".strip())
    return BreathOut(
        text=r.render(), cards=[_card(c) for c in r.cards], pinned=[_card(c) for c in r.pinned], degraded=r.degraded
    )


def build_mcp(
    service: MemoryService | None = None, tenants=None, relay: Relay | None = None, **settings: Any
) -> FastMCP:
    """Answered from `service`, or (over stdio) through `relay`. `tenants` (over HTTP): each call answered
    from the namespace its request's token belongs to."""
    server = FastMCP(
        "ombre",
        instructions="Ombre 记忆：hold 记下对方亲口说的事（没有原话就是未确认），breath 在需要时回想。不要脑补。",
        **settings,
    )

    def pick(ctx: Context | None) -> MemoryService:
        if relay is not None:
            return relay.local()
        request = ctx.request_context.request if ctx is not None and tenants is not None else None
        namespace = getattr(getattr(request, "state", None), "namespace", None)
        assert service is not None
        return tenants.get(namespace) if namespace else service

    async def answer(tool: str, args: dict[str, Any], ctx: Context | None, local: Callable, out: type[BaseModel]):
        if relay is not None:
            relayed = await relay.call(tool, args)
            if relayed is not None:
                return out(**relayed)
        # the service's work is blocking (embedding, SQL): off the event loop, so other requests go on
        return await anyio.to_thread.run_sync(local, pick(ctx), args)

    @server.tool()
    async def hold(
        content: str,
        tags: list[str] | str | None = None,
        importance: int = 5,
        pinned: bool = False,
        valence: float = 0.5,
        arousal: float = 0.3,
        type: str = "事件",
        title: str = "",
        domain: str = "",
        quote: str | None = None,
        from_session: str | None = None,
        event_date: str | None = None,
        ctx: Context | None = None,
    ) -> HoldOut:
        """记下一件值得长期记住的事。quote 填对方的原话（≤2 句）；没有原话就留空，这条会记为「未确认」。
        承诺/约定用 type="承诺"；pinned 只给红线和核心承诺。"""
        args = dict(
            content=content,
            tags=tags,
            importance=importance,
            pinned=pinned,
            valence=valence,
            arousal=arousal,
            type=type,
            title=title,
            domain=domain,
            quote=quote,
            from_session=from_session,
            event_date=event_date,
        )
        return await answer("hold", args, ctx, _hold, HoldOut)

    @server.tool()
    async def breath(
        query: str = "",
        max_tokens: int = 1800,
        domain: str | None = None,
        valence: float | None = None,
        arousal: float | None = None,
        max_results: int = 5,
        is_session_start: bool = False,
        context: list[str] | str | None = None,
        ctx: Context | None = None,
    ) -> BreathOut:
        """回想相关记忆。换窗后第一件事：breath(is_session_start=True) 取回会话交接和置顶核心。
        query 太短（"那周三呢？"）时，把对方最近几句话放进 context（从早到晚），用来判断在说什么。
        标「未确认」的卡片不能当事实说出口。"""
        args = dict(
            query=query,
            max_results=max_results,
            max_tokens=max_tokens,
            domain=domain,
            valence=valence,
            arousal=arousal,
            is_session_start=is_session_start,
            context=context,
        )
        return await answer("breath", args, ctx, _breath, BreathOut)

    return server
