"""Who is calling: principals, their scopes, and the static bearer tokens an operator configures.

Two ways in on SSE and streamable HTTP, one principal model: tokens configured as SHA-256 hashes only
(settings `security.tokens` or a JSON file named by `security.tokens_file`, so a leaked configuration
grants nothing), and access tokens of the organisation's identity provider (`mcp/oauth/`). The guard
in front of the MCP endpoints (`oauth/resource.py`) verifies each request's token and keeps the
resulting `AccessToken` where the SDK keeps it (a context variable); `current_principal()` reads it
back wherever a tool, resource or prompt runs. On stdio there is no token, and the principal is the
configured single user.

Scopes: `read` (see one's own memories), `write` (change them), `admin` (forget any user), and beside
them `metrics` (scrape /metrics, nothing else). A broader scope covers a narrower one: write includes
read, admin includes both. A caller without a token
(stdio, a loopback address, or behind an authenticating proxy) may read and write the configured
user's memories but is never an admin: whoever can reach an unauthenticated endpoint is not thereby
trusted with every user's data. Admin work needs an admin token, or the `mcp-memory forget-user`
command run by someone with access to the backends.
`ScopeGuard` is server middleware that checks a principal's scopes before a tool, resource or prompt
runs (`ToolScopes`: tools annotated read-only need `read`, every other tool needs `write`, admin tools
need `admin`); over HTTP the guard in front has already refused such a request with a 403 challenge.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp.server.auth.middleware.auth_context import auth_context_var, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, CallToolResult, TextContent
from starlette.requests import Request

from mcp_memory.config import SecuritySettings, Settings, TokenEntry, load_tokens
from mcp_memory.errors import ConfigError, PermissionDeniedError
from mcp_memory.observability.metrics import REFUSED, note_outcome

log = logging.getLogger(__name__)

READ, WRITE, ADMIN = "read", "write", "admin"
METRICS = "metrics"  # reads /metrics and nothing else; admin may too (mcp/routes.py)
ALL_SCOPES = frozenset({READ, WRITE, ADMIN, METRICS})
TOKENLESS_SCOPES = frozenset({READ, WRITE})  # never admin: see the module docstring
ADMIN_TOOLS = frozenset({"forget_user"})
LEVEL = {READ: 1, WRITE: 2, ADMIN: 3}
GROUPS = "groups"  # where a verified AccessToken's claims keep the holder's groups (spaces' group: members)
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})
# Requests that return memories (or their ids) without a tool: the same read scope as read-only tools.
READING_METHODS = frozenset(
    {"resources/read", "prompts/get", "resources/subscribe", "subscriptions/listen", "completion/complete"}
)


@dataclass(frozen=True)
class Principal:
    """The identity every store call is scoped by."""

    user_id: str
    scopes: frozenset[str]
    name: str
    authenticated: bool = True  # False: no token (stdio, loopback, behind a proxy)
    groups: frozenset[str] = frozenset()  # from the token: what a space's "group:<id>" members match

    def may(self, scope: str) -> bool:
        # A broader scope covers a narrower one: admin > write > read.
        return any(LEVEL.get(held, 0) >= LEVEL[scope] for held in self.scopes)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh random bearer token (256 bits)."""
    return "mmt_" + secrets.token_urlsafe(32)


class HashedTokenVerifier:
    """The SDK's TokenVerifier over configured token hashes."""

    def __init__(self, entries: list[TokenEntry]) -> None:
        self._by_hash = {e.sha256: e for e in entries}

    async def verify_token(self, token: str) -> AccessToken | None:
        entry = self._by_hash.get(hash_token(token))
        if entry is None:
            log.info("refused a bearer token that matches no configured hash")
            return None
        expires_at = int(entry.expires_at.timestamp()) if entry.expires_at else None
        if entry.expires_at is not None and _aware(entry.expires_at) <= datetime.now(UTC):
            log.info("refused expired token %s", entry.name or entry.sha256[:8])
            return None
        name = entry.name or f"token-{entry.sha256[:8]}"
        return AccessToken(
            token=f"sha256:{entry.sha256[:12]}",  # never keep the secret itself around
            client_id=name,
            subject=entry.user_id,
            scopes=sorted(entry.scopes),
            expires_at=expires_at,
            claims={GROUPS: list(entry.groups)},
        )


def current_principal(settings: Settings) -> Principal:
    """The authenticated principal of this request; on stdio (no token) the configured user."""
    return principal_of(get_access_token(), settings)


def principal_of(token: AccessToken | None, settings: Settings) -> Principal:
    """The principal a verified token stands for; without one, the configured user (never an admin)."""
    if token is None:
        return Principal(user_id=settings.user_id, scopes=TOKENLESS_SCOPES, name="local", authenticated=False)
    if not token.subject:
        raise PermissionDeniedError("this credential names no user; ask the operator for a user token")
    groups = (token.claims or {}).get(GROUPS) or []
    return Principal(
        user_id=token.subject,
        scopes=frozenset(token.scopes),
        name=token.client_id,
        groups=frozenset(g for g in groups if isinstance(g, str)),
    )


def check_exposure(settings: Settings, transport: str, host: str) -> None:
    """Refuse to serve memories on a non-loopback address without authentication."""
    if transport == "stdio" or is_loopback(host):
        return
    if authenticates(settings) or settings.security.allow_unauthenticated_network:
        return
    raise ConfigError(
        f"refusing to serve {transport} on {host} without authentication: configure bearer tokens "
        "(MCP_MEMORY_SECURITY__TOKENS or MCP_MEMORY_SECURITY__TOKENS_FILE) or an identity provider "
        "(MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER), bind 127.0.0.1, or set "
        "MCP_MEMORY_SECURITY__ALLOW_UNAUTHENTICATED_NETWORK=true behind your own authenticating proxy"
    )


def authenticates(settings: Settings) -> bool:
    """Some way in is configured: static tokens, an identity provider, or token introspection."""
    security = settings.security
    return bool(load_tokens(security) or security.authorization_server or security.introspection_client_id)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class ToolScopes:
    """The scope each tool needs: admin for admin tools, read for tools annotated read-only, else write."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self._server = server
        self._read_only: dict[str, bool] = {}  # tool name -> annotated read-only (tools never change)

    async def needed(self, tool: str) -> str:
        if tool in ADMIN_TOOLS:
            return ADMIN
        if tool not in self._read_only:
            for listed in await self._server.list_tools():
                hint = listed.annotations.read_only_hint if listed.annotations else None
                self._read_only[listed.name] = hint is True
        # A tool writes unless its annotations promise it only reads (the safe default); an unknown
        # tool is the SDK's error to report, so reading is enough to hear it.
        return READ if self._read_only.get(tool, True) else WRITE


class ScopeGuard:
    """Server middleware: a principal's scopes decide which tools it may call, before they run."""

    def __init__(self, settings: Settings, tools: ToolScopes) -> None:
        self._settings = settings
        self._tools = tools

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # On SSE every message arrives in its own POST, whose verified token (perhaps stepped up since the
        # stream opened) is the one that counts; the context variable still holds the stream's.
        user = ctx.request.scope.get("user") if isinstance(ctx.request, Request) else None
        bound = auth_context_var.set(user) if isinstance(user, AuthenticatedUser) else None
        try:
            refused = await self._check(ctx)
            return refused if refused is not None else await call_next(ctx)
        finally:
            if bound is not None:
                auth_context_var.reset(bound)

    async def _check(self, ctx: ServerRequestContext[Any, Any]) -> CallToolResult | None:
        if ctx.method == "tools/call":
            name = str((ctx.params or {}).get("name"))
            principal = current_principal(self._settings)
            refusal = self._refusal(principal, name, await self._tools.needed(name))
            if refusal is not None:
                log.info("refused tool %s: %s", name, refusal)
                note_outcome(REFUSED)
                return CallToolResult(content=[TextContent(type="text", text=refusal)], is_error=True)
        elif ctx.method in READING_METHODS and not current_principal(self._settings).may(READ):
            note_outcome(REFUSED)
            raise MCPError(code=INVALID_REQUEST, message="this token may not read memories (no read scope)")
        return None

    @staticmethod
    def _refusal(principal: Principal, tool: str, needed: str) -> str | None:
        if principal.may(needed):
            return None
        if needed == ADMIN:
            if not principal.authenticated:
                return (
                    f"{tool} needs an admin principal: call it with a bearer token that has the admin "
                    "scope (mcp-memory token --scope admin), or run `mcp-memory forget-user` on the server"
                )
            return f"{tool} needs the admin scope; this token does not have it"
        if needed == WRITE:
            return f"{tool} changes memories, and this token is read-only"
        return f"{tool} reads memories, and this token has no read scope"


def token_command(user_id: str, name: str, scopes: list[str], expires_at: datetime | None) -> None:
    """`mcp-memory token`: print a new token once, and the entry (its hash only) to configure."""
    token = new_token()
    entry = TokenEntry(
        sha256=hash_token(token),
        user_id=user_id,
        name=name or user_id,
        scopes=scopes or [READ, WRITE],
        expires_at=expires_at,
    )
    load_tokens(SecuritySettings(tokens=[entry]))  # the same checks as at startup
    print(f"token (give it to the client, it is not stored anywhere): {token}")
    print("entry for security.tokens / tokens_file (only the hash):")
    print(entry.model_dump_json(exclude_none=True))
