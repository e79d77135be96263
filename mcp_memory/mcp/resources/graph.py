"""The knowledge graph as resources: the whole graph (own, a space's) and one entity with provenance."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context

from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.resources.registry import ResourceFamily
from mcp_memory.mcp.tools.dependencies import access_of, graph_of, server_of
from mcp_memory.mcp.uris import GRAPH_URI
from mcp_memory.models import Owner

family = ResourceFamily("graph")


async def _whole(server: MemoryServer, owner: Owner) -> str:
    whole = await graph_of(server).read_graph(owner)
    counts = {"entities": len(whole.entities), "relations": len(whole.relations)}
    await server.service.audit.read(owner, [], counts=counts)  # a space's graph read, in its trail
    return json.dumps(
        whole.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False
    )


@family.resource(
    GRAPH_URI,
    name="knowledge-graph",
    title="Knowledge Graph",
    description="The full knowledge graph with all entities and relations",
    mime_type="application/json",
)
async def knowledge_graph(server: MemoryServer) -> str:
    return await _whole(server, access_of(server).owner(None))


@family.resource(
    "memory://spaces/{space}/knowledge-graph",
    name="space_knowledge_graph",
    title="A shared space's knowledge graph",
    mime_type="application/json",
)
async def space_knowledge_graph(space: str, ctx: Context[Any, Any]) -> str:
    """The knowledge graph of a shared space you are a member of."""
    server = server_of(ctx)
    return await _whole(server, access_of(server).owner(space))


@family.resource("memory://knowledge-graph/entities/{name}", name="entity", mime_type="application/json")
async def entity(name: str, ctx: Context[Any, Any]) -> str:
    """One entity of your graph with each observation's created_at (and author, in a space), its
    relations and the ids of the turns and facts that mention it."""
    server = server_of(ctx)
    return (await graph_of(server).entity(access_of(server).owner(None), name)).model_dump_json()
