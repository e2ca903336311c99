"""The HTTP API (FastAPI) with the MCP server mounted at /mcp (streamable HTTP).

Routes are thin: parse a body into the library's request, call MemoryService, return its result.
"""
from __future__ import annotations

import contextlib
import hmac
import secrets
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ..errors import OmbreError, StoreError
from ..inject.cards import InjectRequest, SessionStartRequest, session_block, turn_block
from ..memory.breath import BreathRequest
from ..memory.hold import HoldRequest
from ..memory.namespaces import Tenants
from ..memory.service import MemoryService
from ..wire import body_problem, size_problem
from .mcp import build_mcp
from .ui import pages as ui


def create_app(service: MemoryService, token: str | None = None) -> FastAPI:
    """`service` answers OMBRE_TOKEN (or, on loopback with no token, every request); the namespaces whose
    tokens `ombre namespace add` made are answered each from its own service (`Tenants`)."""
    from ..write.commitment_arbitrate import open_service

    tenants = Tenants(service, open_service)
    mcp = build_mcp(service, tenants)
    mcp_app = mcp.streamable_http_app()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            tenants.close()  # the other namespaces' stores; `service` is its caller's to close

    app = FastAPI(title="Ombre memory service", lifespan=lifespan)

    # the dashboard's forms carry this secret, so another site's page cannot make a browser post here
    form_token = secrets.token_urlsafe(24)
    default = service.settings.namespace

    @app.middleware("http")
    async def bearer(request: Request, call_next):
        page = request.url.path == "/ui" or request.url.path.startswith("/ui/")
        sent = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        from_query = False
        if page and not sent:
            # a browser cannot send a header: the token comes once in the address, then as a cookie
            sent = request.cookies.get(ui.COOKIE) or request.query_params.get("token", "")
            from_query = not request.cookies.get(ui.COOKIE) and bool(sent)
        if token and hmac.compare_digest(sent, token):
            namespace = default
        elif sent and (named := tenants.namespace_of(sent)):
            namespace = named
        elif not token:
            namespace = default  # loopback with no token (check_bind refuses any other bind without one)
        else:
            namespace = None
        if namespace is None and request.url.path != "/health":
            if page:
                return ui.unauthorized(request)
            return JSONResponse({"error": "unauthorized", "message": "missing or wrong bearer token",
                                 "hint": "send Authorization: Bearer <OMBRE_TOKEN or a namespace's token>"},
                                status_code=401)
        request.state.namespace = namespace or default
        response = await call_next(request)
        if from_query and namespace is not None:
            response.set_cookie(ui.COOKIE, sent, httponly=True, samesite="strict")
        return response

    def svc(request: Request) -> MemoryService:
        return tenants.get(request.state.namespace)

    @app.middleware("http")
    async def checked_body(request: Request, call_next):
        # before FastAPI parses it: its own 422 echoes the input, and an echo of a lone surrogate or NaN
        # cannot be encoded, which turned the sender's mistake into a 500
        if request.method == "POST":
            raw = await request.body()
            # every POST is size-capped; the API's bodies are also checked for text and numbers (the MCP
            # endpoint's arguments are checked by the library it calls)
            too_big = size_problem(raw)
            problem = too_big or (body_problem(raw) if request.url.path.startswith("/v1/") else None)
            if problem:
                return JSONResponse({"error": "MemoryInputError", "message": problem,
                                     "hint": "send a JSON object of UTF-8 text and finite numbers"},
                                    status_code=413 if too_big else 422)
        return await call_next(request)

    @app.exception_handler(PermissionError)
    async def refused(request: Request, exc: PermissionError) -> JSONResponse:
        return JSONResponse({"error": "forbidden", "message": str(exc),
                             "hint": "submit the dashboard's own form (it carries the form token)"}, status_code=403)

    @app.exception_handler(OmbreError)
    async def ombre_error(request: Request, exc: OmbreError) -> JSONResponse:
        return JSONResponse(exc.to_dict(), status_code=503 if isinstance(exc, StoreError) else 422)

    # The library's own request dataclasses are the bodies: FastAPI validates them, nothing is restated.
    @app.post("/v1/hold")
    def hold(body: HoldRequest, request: Request) -> dict:
        return svc(request).hold(body).to_dict()

    @app.post("/v1/breath")
    def breath(body: BreathRequest, request: Request) -> dict:
        return svc(request).breath(body).to_dict()

    # The dynamic zone's block for the hooks (and a gateway pointed at this service). The client's budget
    # counts from here: a block it stopped waiting for is not recorded as shown.
    @app.post("/v1/inject")
    def inject(body: InjectRequest, request: Request) -> dict:
        return turn_block(svc(request), body, received=time.monotonic()).to_dict()

    @app.post("/v1/inject/session-start")
    def inject_session_start(body: SessionStartRequest, request: Request) -> dict:
        return session_block(svc(request), body).to_dict()

    @app.get("/v1/memories/{memory_id}")
    def memory(memory_id: str, request: Request) -> JSONResponse:
        m = svc(request).store.get(memory_id)
        if m is None:
            return JSONResponse({"error": "not_found", "message": f"no memory with id {memory_id!r}"},
                                status_code=404)
        return JSONResponse(m.to_dict())

    @app.get("/health")
    def health() -> JSONResponse:
        state = service.health()
        return JSONResponse(state, status_code=200)

    app.include_router(ui.router(tenants, form_token))
    app.mount("/", mcp_app)
    return app


def check_bind(host: str, token: str | None) -> None:
    from ..errors import UsageError

    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise UsageError(f"refusing to listen on {host} without a bearer token",
                         hint="set OMBRE_TOKEN (or --token), or bind to 127.0.0.1")
