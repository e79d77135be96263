"""Who is calling: bearer tokens on SSE and streamable HTTP, mapped to principals.

Tokens are configured as SHA-256 hashes only (settings `security.tokens` or a JSON file named by
`security.tokens_file`), so a leaked configuration grants nothing. The SDK's bearer middleware asks
`HashedTokenVerifier` about each request and keeps the resulting `AccessToken` in a context variable;
`current_principal()` reads it back wherever a tool, resource or prompt runs. On stdio there is no
token, and the principal is the configured single user.

Scopes: `read` (see one's own memories), `write` (change them), `admin` (both, and forget any user).
A caller without a token (stdio, a loopback address, or behind an authenticating proxy) may read and
write the configured user's memories but is never an admin: whoever can reach an unauthenticated
endpoint is not thereby trusted with every user's data. Admin work needs an admin token, or the
`mcp-memory forget-user` command run by someone with access to the backends.
`ScopeGuard` is server middleware that checks a principal's scopes before a tool, resource or prompt
runs: tools annotated read-only need `read`, every other tool needs `write`, admin tools need `admin`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, CallToolResult, TextContent

from mcp_memory.config import SecuritySettings, Settings, TokenEntry, load_tokens
from mcp_memory.errors import ConfigError, PermissionDeniedError

log = logging.getLogger(__name__)

READ, WRITE, ADMIN = "read", "write", "admin"
ALL_SCOPES = frozenset({READ, WRITE, ADMIN})
TOKENLESS_SCOPES = frozenset({READ, WRITE})  # never admin: see the module docstring
ADMIN_TOOLS = frozenset({"forget_user"})
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

    def may(self, scope: str) -> bool:
        # An admin may also read and write; read and write do not imply each other.
        return scope in self.scopes or ADMIN in self.scopes


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
        )


def auth_options(settings: Settings) -> dict[str, Any]:
    """MCPServer keyword arguments that turn bearer auth on, or {} when no token is configured."""
    entries = load_tokens(settings.security)
    if not entries:
        return {}
    security = settings.security
    advertised = security.resource_url is not None and security.authorization_server is not None
    return {
        "token_verifier": HashedTokenVerifier(entries),
        "auth": AuthSettings(
            # Static tokens have no issuer of ours; the URL is only advertised when both are configured.
            issuer_url=security.authorization_server if advertised else "http://127.0.0.1/",
            resource_server_url=security.resource_url if advertised else None,
            validate_token_resource=False,  # a static token names its user, not an audience
        ),
    }


def current_principal(settings: Settings) -> Principal:
    """The authenticated principal of this request; on stdio (no token) the configured user."""
    return principal_of(get_access_token(), settings)


def token_verifier(settings: Settings) -> HashedTokenVerifier | None:
    """The verifier of the configured tokens, or None when none is configured (no authentication)."""
    entries = load_tokens(settings.security)
    return HashedTokenVerifier(entries) if entries else None


def principal_of(token: AccessToken | None, settings: Settings) -> Principal:
    """The principal a verified token stands for; without one, the configured user (never an admin)."""
    if token is None:
        return Principal(user_id=settings.user_id, scopes=TOKENLESS_SCOPES, name="local", authenticated=False)
    if not token.subject:
        raise PermissionDeniedError("this credential names no user; ask the operator for a user token")
    return Principal(user_id=token.subject, scopes=frozenset(token.scopes), name=token.client_id)


def check_exposure(settings: Settings, transport: str, host: str) -> None:
    """Refuse to serve memories on a non-loopback address without authentication."""
    if transport == "stdio" or is_loopback(host):
        return
    if load_tokens(settings.security) or settings.security.allow_unauthenticated_network:
        return
    raise ConfigError(
        f"refusing to serve {transport} on {host} without authentication: configure bearer tokens "
        "(MCP_MEMORY_SECURITY__TOKENS or MCP_MEMORY_SECURITY__TOKENS_FILE), bind 127.0.0.1, or set "
        "MCP_MEMORY_SECURITY__ALLOW_UNAUTHENTICATED_NETWORK=true behind your own authenticating proxy"
    )


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class ScopeGuard:
    """Server middleware: a principal's scopes decide which tools it may call, before they run."""

    def __init__(self, settings: Settings, server: MCPServer[Any]) -> None:
        self._settings = settings
        self._server = server
        self._read_only: dict[str, bool] = {}  # tool name -> annotated read-only (tools never change)

    async def _writes(self, tool: str) -> bool:
        """A tool writes unless its annotations promise it only reads (the safe default)."""
        if tool not in self._read_only:
            for listed in await self._server.list_tools():
                hint = listed.annotations.read_only_hint if listed.annotations else None
                self._read_only[listed.name] = hint is True
        return not self._read_only.get(tool, True)  # an unknown tool is the SDK's error to report

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            principal = current_principal(self._settings)
            refusal = self._refusal(principal, str(name), await self._writes(str(name)))
            if refusal is not None:
                log.info("refused tool %s: %s", name, refusal)
                return CallToolResult(content=[TextContent(type="text", text=refusal)], is_error=True)
        elif ctx.method in READING_METHODS and not current_principal(self._settings).may(READ):
            raise MCPError(code=INVALID_REQUEST, message="this token may not read memories (no read scope)")
        return await call_next(ctx)

    @staticmethod
    def _refusal(principal: Principal, tool: str, writes: bool) -> str | None:
        if tool in ADMIN_TOOLS and not principal.may(ADMIN):
            if not principal.authenticated:
                return (
                    f"{tool} needs an admin principal: call it with a bearer token that has the admin "
                    "scope (mcp-memory token --scope admin), or run `mcp-memory forget-user` on the server"
                )
            return f"{tool} needs the admin scope; this token does not have it"
        if writes and not principal.may(WRITE):
            return f"{tool} changes memories, and this token is read-only"
        if not writes and not principal.may(READ):
            return f"{tool} reads memories, and this token has no read scope"
        return None


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
