"""Who the audit trail names for this request (audit/context.py): the verified principal's user id and
its credential's name (a static token's name, or the identity provider's client id), with the tool,
resource or prompt it called. On stdio, the configured user, as "local".

It also notices when the spaces' members or roles have changed in the settings (security.spaces or the
spaces file, read again when it changes) and has the change recorded in each space's trail, before the
request that first sees it runs (Auditor.memberships)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from mcp_memory.audit import Actor, acting
from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.security.principals import current_principal
from mcp_memory.security.spaces import SPACES_FILE

Memberships = Mapping[str, Mapping[str, str]]

_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class AuditActor:
    """Server middleware: everything the request changes or reads is recorded as done by its principal."""

    def __init__(
        self, settings: Settings, record_memberships: Callable[[Memberships], Awaitable[int]]
    ) -> None:
        self._settings = settings
        self._record_memberships = record_memberships
        self._members_seen: Memberships | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        field = _NAMED.get(ctx.method)
        if field is None:
            return await call_next(ctx)
        await self._note_memberships()
        try:
            principal = current_principal(self._settings)
        except MemoryServerError:  # a credential naming no user: the handler refuses it
            return await call_next(ctx)
        target = str((ctx.params or {}).get(field, ""))[:200]
        with acting(Actor(principal.user_id, client=principal.name, tool=target or None)):
            return await call_next(ctx)

    async def _note_memberships(self) -> None:
        members = {s.name: dict(s.members) for s in SPACES_FILE.spaces(self._settings.security)}
        if members != self._members_seen:
            await self._record_memberships(members)
            self._members_seen = members
