"""Long-term memories as resources: one memory by id, and the facts known now (service/browse.py)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context

from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.resources.registry import ResourceFamily
from mcp_memory.mcp.tools.dependencies import access_of, server_of, service_of

family = ResourceFamily("memories")


@family.resource("memory://memories/{memory_id}", name="memory", mime_type="application/json")
async def memory(memory_id: str, ctx: Context[Any, Any]) -> str:
    """One long-term memory by id (turn ids come from add_turn and search_memory), of your own memory
    or of a space you are a member of."""
    found = await service_of(ctx).get_memory(access_of(server_of(ctx)).readable(None), memory_id)
    await service_of(ctx).audit.read(found.user_id, [found.id])
    return json.dumps(found.public())


@family.resource("memory://facts", name="facts", mime_type="text/plain")
async def facts(server: MemoryServer) -> str:
    """The facts known about you now, one line each, newest first: content (kind, since date, id)."""
    return await server.service.facts_text(access_of(server).readable())
