"""The MCP server: tools `hold` and `breath`, named and shaped like the public Ombre's (DESIGN §4).

Each tool is a few lines over MemoryService; its docstring is the description the agent reads.
"""
from __future__ import annotations

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


def build_mcp(service: MemoryService, tenants=None, **settings: object) -> FastMCP:
    """`tenants` (over HTTP): each call answered from the namespace its request's token belongs to."""
    server = FastMCP("ombre", instructions="Ombre 记忆：hold 记下对方亲口说的事（没有原话就是未确认），"
                                           "breath 在需要时回想。不要脑补。", **settings)

    def pick(ctx: Context | None) -> MemoryService:
        request = ctx.request_context.request if ctx is not None and tenants is not None else None
        namespace = getattr(getattr(request, "state", None), "namespace", None)
        return tenants.get(namespace) if namespace else service

    @server.tool()
    def hold(content: str, tags: list[str] | str | None = None, importance: int = 5, pinned: bool = False,
             valence: float = 0.5, arousal: float = 0.3, type: str = "事件", title: str = "", domain: str = "",
             quote: str | None = None, from_session: str | None = None, event_date: str | None = None,
             ctx: Context = None) -> HoldOut:
        """记下一件值得长期记住的事。quote 填对方的原话（≤2 句）；没有原话就留空，这条会记为「未确认」。
        承诺/约定用 type="承诺"；pinned 只给红线和核心承诺。"""
        try:
            r = pick(ctx).hold(HoldRequest(content=content, tags=_tags(tags), importance=importance, pinned=pinned,
                                         valence=valence, arousal=arousal, type=type, title=title, domain=domain,
                                         quote=quote, from_session=from_session, event_date=event_date))
        except OmbreError as exc:
            return HoldOut(stored=False, decision="error", error=f"{exc.message} {exc.hint}".strip())
        return HoldOut(stored=r.stored, id=r.id, status=r.status, decision=r.decision, reasons=r.reasons,
                       warnings=r.warnings + r.scarcity)

    @server.tool()
    def breath(query: str = "", max_tokens: int = 1800, domain: str | None = None, valence: float | None = None,
               arousal: float | None = None, max_results: int = 5, is_session_start: bool = False,
               context: list[str] | str | None = None, ctx: Context = None) -> BreathOut:
        """回想相关记忆。换窗后第一件事：breath(is_session_start=True) 取回会话交接和置顶核心。
        query 太短（"那周三呢？"）时，把对方最近几句话放进 context（从早到晚），用来判断在说什么。
        标「未确认」的卡片不能当事实说出口。"""
        try:
            r = pick(ctx).breath(BreathRequest(query=query, max_results=max_results, max_tokens=max_tokens,
                                             domain=domain, valence=valence, arousal=arousal,
                                             is_session_start=is_session_start, context=context))
        except OmbreError as exc:
            return BreathOut(text="", error=f"{exc.message} {exc.hint}".strip())
        return BreathOut(text=r.render(), cards=[_card(c) for c in r.cards], pinned=[_card(c) for c in r.pinned],
                         degraded=r.degraded)

    return server
