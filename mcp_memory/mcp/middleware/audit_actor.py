"""Who the audit trail names for this request (audit/context.py): the verified principal's user id and
its credential's name (a static token's name, or the identity provider's client id), with the tool,
resource or prompt it called. On stdio, the configured user, as "local".

It also notices when the spaces' members or roles have changed in the settings (security.spaces or the
spaces file, read again when it changes) and has the change recorded in each space's trail, before the
request that first sees it runs (Auditor.memberships)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from mcp_memory.audit import Actor, acting
from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.security.principals import current_principal

_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class AuditActor:
    """Server middleware: everything the request changes or reads is recorded as done by its principal."""

    def __init__(self, settings: Settings, notice_memberships: Callable[[], Awaitable[None]]) -> None:
        self._settings = settings
        self._notice_memberships = notice_memberships  # MemoryService.notice_memberships

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        field = _NAMED.get(ctx.method)
        if field is None:
            return await call_next(ctx)
        await self._notice_memberships()
        try:
            principal = current_principal(self._settings)
        except MemoryServerError:  # a credential naming no user: the handler refuses it
            return await call_next(ctx)
        target = str((ctx.params or {}).get(field, ""))[:200]
        with acting(Actor(principal.user_id, client=principal.name, tool=target or None)):
            return await call_next(ctx)
