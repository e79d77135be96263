"""The knowledge-graph tools of the reference MCP memory server, name for name.

Names, titles, descriptions, input and output schemas, annotations, result text and structured content
are those of @modelcontextprotocol/server-memory (dist/index.js), so a client configured for it works
after changing only the command (tests/e2e/test_reference_graph.py runs both and compares); errors too
come back as the reference's do (the message alone, is_error set: `reference=True`), which is why
these tools resolve their owner in the body rather than through `Resolve` (a resolver's refusal is the
SDK's "Error executing tool ..." error). Our additions are
optional arguments a reference client never sends: `space` on every tool, and `limit`, `cursor` and
`max_tokens` on the three readers. The rules live in service/graph/. Registered unless graph.tools is
false.
"""

# No `from __future__ import annotations`: the SDK reads these annotations at registration.

import json
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_memory.mcp.tools.dependencies import audited, graph_of, owner_of, server_of, service_of
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.service.graph import Page
from mcp_memory.views import (
    DeletionResult,
    EntitiesResult,
    EntityView,
    GraphResult,
    ObservationAddition,
    ObservationDeletion,
    ObservationsResult,
    RelationsResult,
    RelationView,
)

family = Family("graph")

GraphSpace = Annotated[
    str | None,
    Field(description="A shared space's graph (writing needs the writer role there); omit for your own."),
]
Limit = Annotated[
    int | None,
    Field(description="At most this many entities (with their relations); omit for all, as before."),
]
Cursor = Annotated[str | None, Field(description="nextCursor of the previous page, to read on.")]
MaxTokens = Annotated[
    int | None,
    Field(description="Return only the entities (with their relations) that fit this many tokens of JSON."),
]


def _annotations(*, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


WRITE = _annotations(read_only=False, destructive=False, idempotent=False)
DELETE = _annotations(read_only=False, destructive=True, idempotent=True)
READ = _annotations(read_only=True, destructive=False, idempotent=True)


def _result(text_of: Any, structured: dict[str, Any]) -> CallToolResult:
    """The reference's result: its text is JSON.stringify(value, null, 2), beside the structured content."""
    text = text_of if isinstance(text_of, str) else json.dumps(text_of, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _listed(key: str, items: list[BaseModel], *, by_alias: bool = False) -> CallToolResult:
    shown = [item.model_dump(mode="json", by_alias=by_alias) for item in items]
    return _result(shown, {key: shown})


def _deleted(what: str) -> CallToolResult:
    message = f"{what} deleted successfully"
    return _result(message, {"success": True, "message": message})


async def _read(ctx: Context[Any, Any], owner: str, found: GraphResult) -> CallToolResult:
    """A graph read, recorded in a space's audit trail by what it returned (counts: entities have no ids)."""
    counts = {"entities": len(found.entities), "relations": len(found.relations)}
    await service_of(ctx).audit.read(owner, [], counts=counts)
    return _graph_result(found)


def _graph_result(found: GraphResult) -> CallToolResult:
    shown = found.model_dump(mode="json", by_alias=True, exclude_none=True)
    return _result(shown, shown)


@family.tool(
    WRITE,
    title="Create Entities",
    description="Create multiple new entities in the knowledge graph",
    reference=True,
)
async def create_entities(
    entities: list[EntityView],
    ctx: Context[Any, Any],
    space: GraphSpace = None,
) -> Annotated[CallToolResult, EntitiesResult]:
    owner = owner_of(ctx, space, "writer", "create_entities")  # in the body: a refusal is a reference error
    async with audited(ctx, owner, "graph", counts={"entities": len(entities)}):
        return _listed("entities", list(await graph_of(server_of(ctx)).create_entities(owner, entities)))


@family.tool(
    WRITE,
    title="Create Relations",
    description="Create multiple new relations between entities in the knowledge graph. "
    "Relations should be in active voice",
    reference=True,
)
async def create_relations(
    relations: list[RelationView],
    ctx: Context[Any, Any],
    space: GraphSpace = None,
) -> Annotated[CallToolResult, RelationsResult]:
    owner = owner_of(ctx, space, "writer", "create_relations")  # in the body: a refusal is a reference error
    async with audited(ctx, owner, "graph", counts={"relations": len(relations)}):
        created = await graph_of(server_of(ctx)).create_relations(owner, relations)
    return _listed("relations", list(created), by_alias=True)


@family.tool(
    WRITE,
    title="Add Observations",
    description="Add new observations to existing entities in the knowledge graph",
    reference=True,
)
async def add_observations(
    observations: list[ObservationAddition],
    ctx: Context[Any, Any],
    space: GraphSpace = None,
) -> Annotated[CallToolResult, ObservationsResult]:
    owner = owner_of(ctx, space, "writer", "add_observations")  # in the body: a refusal is a reference error
    async with audited(
        ctx, owner, "graph", counts={"observations": sum(len(o.contents) for o in observations)}
    ):
        return _listed("results", list(await graph_of(server_of(ctx)).add_observations(owner, observations)))


@family.tool(
    DELETE,
    title="Delete Entities",
    description="Delete multiple entities and their associated relations from the knowledge graph",
    reference=True,
)
async def delete_entities(
    entityNames: Annotated[list[str], Field(description="An array of entity names to delete")],
    ctx: Context[Any, Any],
    space: GraphSpace = None,
) -> Annotated[CallToolResult, DeletionResult]:
    owner = owner_of(ctx, space, "writer", "delete_entities")  # in the body: a refusal is a reference error
    async with audited(ctx, owner, "graph", counts={"entities deleted": len(entityNames)}):
        await graph_of(server_of(ctx)).delete_entities(owner, entityNames)
    return _deleted("Entities")


@family.tool(
    DELETE,
    title="Delete Observations",
    description="Delete specific observations from entities in the knowledge graph",
    reference=True,
)
async def delete_observations(
    deletions: list[ObservationDeletion],
    ctx: Context[Any, Any],
    space: GraphSpace = None,
) -> Annotated[CallToolResult, DeletionResult]:
    owner = owner_of(
        ctx, space, "writer", "delete_observations"
    )  # in the body: a refusal is a reference error
    async with audited(
        ctx, owner, "graph", counts={"observations deleted": sum(len(d.observations) for d in deletions)}
    ):
        await graph_of(server_of(ctx)).delete_observations(owner, deletions)
    return _deleted("Observations")


@family.tool(
    DELETE,
    title="Delete Relations",
    description="Delete multiple relations from the knowledge graph",
    reference=True,
)
async def delete_relations(
    relations: Annotated[list[RelationView], Field(description="An array of relations to delete")],
    ctx: Context[Any, Any],
    space: GraphSpace = None,
) -> Annotated[CallToolResult, DeletionResult]:
    owner = owner_of(ctx, space, "writer", "delete_relations")  # in the body: a refusal is a reference error
    async with audited(ctx, owner, "graph", counts={"relations deleted": len(relations)}):
        await graph_of(server_of(ctx)).delete_relations(owner, relations)
    return _deleted("Relations")


@family.tool(READ, title="Read Graph", description="Read the entire knowledge graph", reference=True)
async def read_graph(
    ctx: Context[Any, Any],
    limit: Limit = None,
    cursor: Cursor = None,
    max_tokens: MaxTokens = None,
    space: GraphSpace = None,
) -> Annotated[CallToolResult, GraphResult]:
    owner = owner_of(ctx, space)
    return await _read(
        ctx, owner, await graph_of(server_of(ctx)).read_graph(owner, Page(limit, cursor, max_tokens))
    )


@family.tool(
    READ,
    title="Search Nodes",
    description="Search for nodes in the knowledge graph based on a query",
    reference=True,
)
async def search_nodes(
    query: Annotated[
        str,
        Field(description="The search query to match against entity names, types, and observation content"),
    ],
    ctx: Context[Any, Any],
    limit: Limit = None,
    cursor: Cursor = None,
    max_tokens: MaxTokens = None,
    space: GraphSpace = None,
) -> Annotated[CallToolResult, GraphResult]:
    owner = owner_of(ctx, space)
    return await _read(
        ctx, owner, await graph_of(server_of(ctx)).search_nodes(owner, query, Page(limit, cursor, max_tokens))
    )


@family.tool(
    READ,
    title="Open Nodes",
    description="Open specific nodes in the knowledge graph by their names",
    reference=True,
)
async def open_nodes(
    names: Annotated[list[str], Field(description="An array of entity names to retrieve")],
    ctx: Context[Any, Any],
    limit: Limit = None,
    cursor: Cursor = None,
    max_tokens: MaxTokens = None,
    space: GraphSpace = None,
) -> Annotated[CallToolResult, GraphResult]:
    owner = owner_of(ctx, space)
    return await _read(
        ctx, owner, await graph_of(server_of(ctx)).open_nodes(owner, names, Page(limit, cursor, max_tokens))
    )
