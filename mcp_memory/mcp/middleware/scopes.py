"""Server middleware that checks a principal's scopes before a tool, resource or prompt runs.

`ToolScopes` says which scope a tool needs: tools annotated read-only need `read`, every other tool
needs `write`, admin tools need `admin`. `ScopeGuard` refuses a call the principal's scopes do not
cover (security/principals.py); over HTTP the guard in front (`oauth_guard.py`) has already refused
such a request with a 403 challenge.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, CallToolResult
from starlette.requests import Request

from mcp_memory.config import Settings
from mcp_memory.mcp.middleware.results import error_result
from mcp_memory.observability.metrics import REFUSED, note_outcome
from mcp_memory.security.principals import ADMIN, READ, WRITE, Principal, current_principal

log = logging.getLogger(__name__)

ADMIN_TOOLS = frozenset({"forget_user"})
# Requests that return memories (or their ids) without a tool: the same read scope as read-only tools.
READING_METHODS = frozenset(
    {"resources/read", "prompts/get", "resources/subscribe", "subscriptions/listen", "completion/complete"}
)


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
                return error_result(refusal)
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
