"""The guard in front of the MCP endpoints, and the protected-resource metadata that points clients to it.

Every request to /mcp, /sse or /messages/ (and to the other `routes` given, such as the hooks' routes of
a memory server: mcp/team_hooks.py, each with the scope it needs) must carry `Authorization: Bearer <token>`:
- none: 401 `WWW-Authenticate: Bearer resource_metadata="...", scope="read write"` (no error code:
  RFC 6750 section 3.1 gives none when no credentials were sent);
- a token that is not valid: 401 with `error="invalid_token"` and why, the same two parameters;
- a valid token without the scope the request needs: 403 `error="insufficient_scope"` naming every
  scope the operation needs, so the client can step up (per tool, read from the JSON-RPC body, which
  2025 clients send without an Mcp-Name header). The request never reaches the server, so nothing is
  written;
- the identity provider unreachable with no keys held: 503 with Retry-After.
A verified request goes on with the token where the SDK keeps it (`scope["user"]` and the auth context
variable), so sessions stay bound to their principal and `current_principal()` finds it. The
challenges themselves are security's (`security/oauth/bearer.py`).

The metadata document (RFC 9728) is served at `/.well-known/oauth-protected-resource` plus the
resource's path (and at the bare well-known path, for 2025-03-26 clients): `resource` without a
trailing slash, the authorization server, the minimal scopes a client needs (`read`, `write`; admin is
asked for by a 403 when an admin tool needs it) and `bearer_methods_supported: ["header"]`. It is ours,
not the SDK's: the SDK ties `scopes_supported` to the scopes it requires of every request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory.config import Settings
from mcp_memory.errors import PermissionDeniedError
from mcp_memory.mcp.middleware.request_body import messages_or_413, tool_called
from mcp_memory.mcp.middleware.scopes import ToolScopes
from mcp_memory.observability.metrics import Metrics
from mcp_memory.security.oauth.bearer import WELL_KNOWN, Challenges, bearer_token
from mcp_memory.security.oauth.claims import BASIC_SCOPES, ClaimRules
from mcp_memory.security.oauth.issuer import InvalidToken, IssuerUnavailable
from mcp_memory.security.oauth.tokens import TokenVerifier, resource_of
from mcp_memory.security.principals import LEVEL, READ, principal_of

log = logging.getLogger(__name__)


class ResourceGuard:
    """ASGI middleware: the MCP endpoints answer only requests whose token allows what they ask."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: Settings,
        verifier: TokenVerifier,
        tools: ToolScopes,
        protected: tuple[str, ...],
        routes: Mapping[str, str] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.app = app
        self.routes = dict(routes or {})  # other paths guarded too, each with the scope it needs
        self.metrics = metrics
        self.settings = settings
        self.verifier = verifier
        self.tools = tools
        self.protected = protected
        self.challenges = Challenges(settings)
        self.max_body = settings.request_body_limit

    def _protects(self, path: str) -> bool:
        if path in self.routes:
            return True
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.protected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._protects(scope["path"]):
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope["headers"])
        if token is None:
            await self.challenges.missing()(scope, receive, send)
            return
        try:
            access = await self.verifier.verify(token)
            principal = principal_of(access, self.settings)
        except (InvalidToken, PermissionDeniedError) as e:
            log.info("refused a bearer token on %s: %s", scope["path"], e)
            await self.challenges.invalid(str(e))(scope, receive, send)
            return
        except IssuerUnavailable as e:
            log.warning("cannot verify tokens: %s", e)
            unavailable = JSONResponse(
                {
                    "error": "temporarily_unavailable",
                    "error_description": "the identity provider cannot be reached",
                },
                status_code=503,
                headers={"Retry-After": "5"},
            )
            await unavailable(scope, receive, send)
            return
        read = await messages_or_413(scope, receive, send, self.max_body)
        if read is None:
            return
        sent, receive = read
        needed, what = await self._needed(scope["method"], sent)
        if scope["path"] in self.routes:
            needed, what = self.routes[scope["path"]], f"{scope['method']} {scope['path']}"
        if not principal.may(needed):
            log.info("refused %s to %s: no %s scope", what, principal.name, needed)
            if self.metrics is not None:
                self.metrics.refused("scope")
            await self.challenges.insufficient(needed, what)(scope, receive, send)
            return
        user = AuthenticatedUser(access)
        scope = {**scope, "user": user, "auth": AuthCredentials(access.scopes)}
        bound = auth_context_var.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            auth_context_var.reset(bound)

    async def _needed(self, method: str, sent: list[dict[str, Any]]) -> tuple[str, str]:
        """The scope a request needs and what it is, for the challenge: the most any message needs."""
        needed, what = READ, "this request"
        if method != "POST":
            return needed, what
        for message in sent:
            name = tool_called(message)
            if name is None:
                continue
            tool_needs = await self.tools.needed(name)
            if LEVEL[tool_needs] > LEVEL[needed]:
                needed, what = tool_needs, name
        return needed, what


def metadata_routes(settings: Settings, endpoint_paths: tuple[str, ...]) -> list[Route]:
    """GET routes serving the protected-resource metadata, when an authorization server is configured."""
    resource = resource_of(settings)
    server = settings.security.authorization_server
    if resource is None or server is None:
        return []
    rules = ClaimRules.of(settings.security)
    document: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": [server],
        "scopes_supported": rules.requested(BASIC_SCOPES).split(),
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-memory",
    }

    async def metadata(_: Request) -> JSONResponse:
        return JSONResponse(document, headers={"Cache-Control": "max-age=300"})

    paths = {WELL_KNOWN, WELL_KNOWN + urlsplit(resource).path.rstrip("/")}
    paths.update(WELL_KNOWN + p.rstrip("/") for p in endpoint_paths)
    return [Route(path, metadata, methods=["GET"]) for path in sorted(paths)]
