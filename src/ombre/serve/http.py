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
from mcp.server.transport_security import TransportSecuritySettings

from ..app import open_service
from ..errors import OmbreError, StoreError
from ..inject.cards import InjectRequest, SessionStartRequest, session_block, turn_block
from ..memory.breath import BreathRequest
from ..memory.hold import HoldRequest
from ..memory.namespaces import Tenants
from ..memory.service import MemoryService
from ..wire import MAX_DEPTH, SAFE_METHODS, allowed_hosts, body_problem, depth_over, misdirected, size_problem
from .mcp import build_mcp
from .ui import pages as ui


def create_app(service: MemoryService, token: str | None = None, hosts: frozenset[str] = allowed_hosts()) -> FastAPI:
    """`service` answers OMBRE_TOKEN (or, on loopback with no token, every request): the owner, who also
    sees the machine (sessions, keeper, bill, hook log). The namespaces whose tokens `ombre namespace add`
    made are answered each from its own service (`Tenants`) and see their own memories only. Every request
    must name one of `hosts`, and a browser's state-changing request must come from this service's origin."""
    tenants = Tenants(service, open_service)
    mcp = build_mcp(
        service,
        tenants,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{h}:*" if ":" not in h else f"[{h}]:*" for h in hosts]
            + [h if ":" not in h else f"[{h}]" for h in hosts],
            allowed_origins=[
                f"{scheme}://{h if ':' not in h else f'[{h}]'}:*" for h in hosts for scheme in ("http", "https")
            ],
        ),
    )
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
        owner = False
        if token and hmac.compare_digest(sent, token):
            namespace, owner = default, True
        elif sent and (named := tenants.namespace_of(sent)):
            namespace = named
        elif not token:
            # loopback with no token (check_bind refuses any other bind without one): the machine's own user
            namespace, owner = default, True
        else:
            namespace = None
        if namespace is None and request.url.path != "/health":
            if page:
                return ui.unauthorized(request)
            return JSONResponse(
                {
                    "error": "unauthorized",
                    "message": "missing or wrong bearer token",
                    "hint": "send Authorization: Bearer <OMBRE_TOKEN or a namespace's token>",
                },
                status_code=401,
            )
        request.state.namespace = namespace or default
        request.state.owner = owner
        request.state.known = namespace is not None
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
        if request.method not in SAFE_METHODS:
            raw = await request.body()
            # every body is size- and depth-capped (the MCP endpoint's and the dashboard's too: a parser that
            # recurses 2,000 levels is a crash); the API's bodies are also checked for text and numbers
            too_big = size_problem(raw)
            deep = depth_over(raw)
            problem = too_big or (
                f"the body nests {deep} levels deep, over the limit of {MAX_DEPTH}"
                if deep
                else body_problem(raw)
                if request.url.path.startswith("/v1/")
                else None
            )
            if problem:
                return JSONResponse(
                    {
                        "error": "MemoryInputError",
                        "message": problem,
                        "hint": "send a JSON object of UTF-8 text and finite numbers",
                    },
                    status_code=413 if too_big else 422,
                )
        return await call_next(request)

    # Added last, so it runs first: a request for another site's name, or a browser's state change from
    # another origin, is turned away before anything reads its token or body.
    @app.middleware("http")
    async def same_site(request: Request, call_next):
        refused = misdirected(
            request.method, request.headers.get("host", ""), request.headers.get("origin"), hosts, "ombre serve"
        )
        if refused:
            status, body = refused
            return JSONResponse(body, status_code=status)
        return await call_next(request)

    @app.exception_handler(PermissionError)
    async def refused(request: Request, exc: PermissionError) -> JSONResponse:
        return JSONResponse(
            {
                "error": "forbidden",
                "message": str(exc),
                "hint": "submit the dashboard's own form (it carries the form token)",
            },
            status_code=403,
        )

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
            return JSONResponse({"error": "not_found", "message": f"no memory with id {memory_id!r}"}, status_code=404)
        return JSONResponse(m.to_dict())

    @app.get("/health")
    def health(request: Request) -> JSONResponse:
        # the owner sees the machine (database path, home, backups); a namespace its own count; anyone else
        # only whether the service is up
        if request.state.owner:
            return JSONResponse(service.health() | {"home": str(service.settings.ombre_home.resolve())})
        if request.state.known:
            mine = svc(request).health()
            return JSONResponse(
                {k: mine[k] for k in ("status", "version", "namespace", "memories", "reason") if k in mine}
            )
        return JSONResponse({"status": service.health().get("status")})

    app.include_router(ui.router(tenants, form_token))
    app.mount("/", mcp_app)
    return app


def check_bind(host: str, token: str | None) -> None:
    from ..errors import UsageError

    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise UsageError(
            f"refusing to listen on {host} without a bearer token",
            hint="set OMBRE_TOKEN (or --token), or bind to 127.0.0.1",
        )
