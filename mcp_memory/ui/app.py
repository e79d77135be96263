"""The memory explorer as an ASGI app, to mount at /ui: `mcp-memory ui` serves it alone on 127.0.0.1,
`mcp-memory serve --transport http|sse` beside the MCP endpoint.

Every response carries a Content-Security-Policy that allows no script at all and styles only from
/ui/static: the pages are plain HTML forms and server-drawn SVG, so even a memory that slipped past
escaping could run nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_memory.audit import Actor, acting
from mcp_memory.config import Settings
from mcp_memory.errors import ConfigError, MemoryServerError, NotFoundError, PermissionDeniedError
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.security.exposure import is_loopback
from mcp_memory.security.oauth.tokens import build_verifier
from mcp_memory.security.principals import READ
from mcp_memory.ui import audit, editing, reading, signin
from mcp_memory.ui.explorer import Explorer, base_path
from mcp_memory.ui.guard import Guard, Refused, Visitor

log = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    # Queries are memory text: a Referer never leaves the site. (no-referrer would also make Chromium
    # send "Origin: null" on same-origin form posts, which the CSRF check must refuse.)
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),  # pages hold memories: not for shared or disk caches
]

Handler = Callable[[Explorer, Request, Visitor], Awaitable[Response]]


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response of the explorer, pages, errors and static files alike."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def build_ui(host: ServiceHost, settings: Settings) -> Starlette:
    """The explorer over this host's memory service, with the tokens and scopes of the MCP endpoint."""
    explorer = Explorer(host, Guard(settings, build_verifier(settings)))

    def endpoint(handler: Handler, *, anonymous: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def respond(request: Request) -> Response:
            visitor = None
            try:
                visitor = await explorer.guard.visitor(request, anonymous=anonymous)
                if anonymous:
                    return await handler(explorer, request, visitor)
                explorer.guard.require(visitor, READ, "seeing memories")
                await host.service.notice_memberships()
                with acting(actor_of(visitor, handler)):  # whom the audit trail names for a change
                    return await handler(explorer, request, visitor)
            except Refused as refusal:
                return explorer.refused(request, visitor, refusal)
            except NotFoundError as e:
                return explorer.error(request, visitor, str(e), 404)
            except PermissionDeniedError as e:  # a role in a space too low for what was asked
                return explorer.error(request, visitor, str(e), 403)
            except MemoryServerError as e:  # bad input, a full store, a backend down: said as is
                return explorer.error(request, visitor, str(e), 400)

        return respond

    async def home(request: Request) -> Response:
        return RedirectResponse(base_path(request) + "/threads", status_code=303)

    routes = [
        Route("/", home),
        Route("/login", endpoint(reading.login_form, anonymous=True), methods=["GET"]),
        Route("/login", endpoint(editing.login, anonymous=True), methods=["POST"]),
        Route("/logout", endpoint(editing.logout, anonymous=True), methods=["POST"]),
        Route("/auth/login", endpoint(signin.sign_in, anonymous=True), methods=["GET"]),
        Route("/auth/callback", endpoint(signin.callback, anonymous=True), methods=["GET"]),
        Route("/threads", endpoint(reading.threads)),
        Route("/threads/{thread_id}", endpoint(reading.thread)),
        Route("/threads/{thread_id}/summarize", endpoint(editing.summarize_thread), methods=["POST"]),
        Route("/search", endpoint(reading.search)),
        Route("/memories", endpoint(reading.memories)),
        Route("/memories/{memory_id}", endpoint(reading.memory)),
        Route("/memories/{memory_id}/edit", endpoint(editing.edit_memory), methods=["POST"]),
        Route("/memories/{memory_id}/rollback", endpoint(editing.rollback_memory), methods=["POST"]),
        Route("/profile", endpoint(reading.profile)),
        Route("/activity", endpoint(reading.activity_page)),
        Route("/forget", endpoint(reading.forget_form), methods=["GET"]),
        Route("/forget", endpoint(editing.forget), methods=["POST"]),
        Route("/forget-user", endpoint(editing.forget_user), methods=["POST"]),
        Route("/audit", endpoint(audit.audit_page), methods=["GET"]),
        Route("/audit/verify", endpoint(audit.verify), methods=["POST"]),
        Mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
    ]
    return Starlette(routes=routes)


def actor_of(visitor: Visitor, handler: Handler) -> Actor:
    """Who acts in an explorer request, for the audit trail: the visitor's user id and credential (a
    token's name, the identity provider's client id, or "local"), and the page, e.g. explorer:forget."""
    principal = visitor.principal
    return Actor(principal.user_id, client=principal.name, tool=f"explorer:{handler.__name__}")


def standalone_app(host: ServiceHost, settings: Settings) -> ASGIApp:
    """`mcp-memory ui`: the explorer at /ui, and / sending the browser there."""

    async def root(_: Request) -> Response:
        return RedirectResponse("/ui/threads", status_code=303)

    return SecurityHeaders(Starlette(routes=[Route("/", root), Mount("/ui", build_ui(host, settings))]))


def explorer_mount(host: ServiceHost, settings: Settings, bind: str) -> list[BaseRoute]:
    """The explorer at /ui for `serve`, unless it would show memories to the network unauthenticated."""
    if _unprotected(settings, bind):
        # allow_unauthenticated_network lets MCP run behind the operator's proxy; the explorer still
        # refuses, since it has no way to know that proxy checked anything.
        log.warning(
            "the memory explorer is off: %s is not a loopback address and no token is configured", bind
        )
        return []
    return [Mount("/ui", SecurityHeaders(build_ui(host, settings)))]


def check_explorer_exposure(settings: Settings, bind: str) -> None:
    """`mcp-memory ui` on a non-loopback address needs tokens: memories are never shown unauthenticated."""
    if _unprotected(settings, bind):
        raise ConfigError(
            f"refusing to show memories on {bind} without tokens: configure bearer tokens "
            "(MCP_MEMORY_SECURITY__TOKENS or MCP_MEMORY_SECURITY__TOKENS_FILE; `mcp-memory token` makes one) "
            "or bind 127.0.0.1"
        )


def _unprotected(settings: Settings, bind: str) -> bool:
    """Memories would be shown to the network with no token to check."""
    return build_verifier(settings) is None and not is_loopback(bind)
