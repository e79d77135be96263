"""The audit trail as resources: your own memory's, and a space's for its owners (and admins).

Both take the same filters as query parameters, e.g.
memory://spaces/team/audit?action=forget&thread_id=t1 or memory://audit?since=2026-11-01&limit=20;
`before` is the previous page's next_cursor. The rules are service/audit_trail.py's.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from mcp_memory.mcp.resources.registry import ResourceFamily
from mcp_memory.mcp.tools.dependencies import server_of, service_of, viewer_of
from mcp_memory.service.audit_trail import read_page

family = ResourceFamily("audit")

JSON = "application/json"
FILTERS = "{?actor,action,thread_id,since,until,before,limit}"


@family.resource(f"memory://audit{FILTERS}", name="audit_trail", mime_type=JSON)
async def own_trail(
    ctx: Context[Any, Any],
    actor: str | None = None,
    action: str | None = None,
    thread_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
    before: str | None = None,
    limit: str = "50",
) -> str:
    """Who changed your personal memory, when and with which client, newest first: every add, update,
    rollback, import and forget (ids and counts, never text)."""
    filters = {"actor": actor, "action": action, "thread_id": thread_id, "since": since, "until": until}
    return await _page(ctx, None, filters, before, limit)


@family.resource(f"memory://spaces/{{space}}/audit{FILTERS}", name="space_audit_trail", mime_type=JSON)
async def space_trail(  # noqa: PLR0913 - the trail's filters, each an optional query parameter
    space: str,
    ctx: Context[Any, Any],
    actor: str | None = None,
    action: str | None = None,
    thread_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
    before: str | None = None,
    limit: str = "50",
) -> str:
    """A shared space's audit trail, for its owners: who added, changed, forgot or read what (ids and
    counts, never text), when, through which client, newest first. Filter by actor, action (add,
    update, rollback, import, forget, forget_user, graph, summarize, learn, read, membership), thread_id
    and time."""
    filters = {"actor": actor, "action": action, "thread_id": thread_id, "since": since, "until": until}
    return await _page(ctx, space, filters, before, limit)


async def _page(
    ctx: Context[Any, Any], space: str | None, filters: dict[str, str | None], before: str | None, limit: str
) -> str:
    page = await read_page(
        service_of(ctx).audit, viewer_of(server_of(ctx)), space, **filters, before=before, limit=limit
    )
    return page.model_dump_json()
