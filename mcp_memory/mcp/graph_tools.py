"""The knowledge-graph tools and resource of the reference MCP memory server, name for name.

Names, titles, descriptions, input and output schemas, annotations, result text and structured content
are those of @modelcontextprotocol/server-memory (dist/index.js), so a client configured for it works
after changing only the command (tests/e2e/test_reference_graph.py runs both and compares). Our
additions are optional arguments a reference client never sends: `space` on every tool, and `limit`,
`cursor` and `max_tokens` on the three readers. The rules live in service/graph.py.

`register_graph(server, host, settings)` adds them unless graph.tools is false.
"""

# No `from __future__ import annotations`: the SDK reads these annotations at registration.

import json
from collections.abc import Awaitable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.mcp.errors import resource_errors
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.models import Owner, space_of
from mcp_memory.observability.metrics import note_error
from mcp_memory.security.spaces import current_access
from mcp_memory.service.graph import KnowledgeGraph, Page
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

GRAPH_URI = "memory://knowledge-graph"

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


def graph_uri(space: str | None) -> str:
    return GRAPH_URI if space is None else f"memory://spaces/{space}/knowledge-graph"


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


def _deleted(what: str) -> CallToolResult:
    message = f"{what} deleted successfully"
    return _result(message, {"success": True, "message": message})


def _graph_result(graph: GraphResult) -> CallToolResult:
    shown = graph.model_dump(mode="json", by_alias=True, exclude_none=True)
    return _result(shown, shown)


async def _answer(work: Awaitable[CallToolResult]) -> CallToolResult:
    """The tool's result, or its error as the reference reports one: the message alone, is_error set."""
    try:
        return await work
    except MemoryServerError as e:
        note_error(e)
        return CallToolResult(content=[TextContent(type="text", text=str(e))], is_error=True)


def register_graph(server: MCPServer[Any], host: ServiceHost, settings: Settings) -> None:
    if not settings.graph.tools:
        return

    def graph() -> KnowledgeGraph:
        found = host.service.graph
        if found is None:
            raise ToolError("the knowledge graph is not available on this server (see its log)")
        return found

    def writer(space: str | None, doing: str) -> Owner:
        return current_access(settings).owner(space, "writer", doing=doing)

    def reader(space: str | None) -> Owner:
        return current_access(settings).owner(space)

    @server.tool(
        title="Create Entities",
        description="Create multiple new entities in the knowledge graph",
        annotations=WRITE,
    )
    async def create_entities(
        entities: list[EntityView], space: GraphSpace = None
    ) -> Annotated[CallToolResult, EntitiesResult]:
        async def work() -> CallToolResult:
            created = await graph().create_entities(writer(space, "create_entities"), entities)
            shown = [e.model_dump(mode="json") for e in created]
            return _result(shown, {"entities": shown})

        return await _answer(work())

    @server.tool(
        title="Create Relations",
        description="Create multiple new relations between entities in the knowledge graph. "
        "Relations should be in active voice",
        annotations=WRITE,
    )
    async def create_relations(
        relations: list[RelationView], space: GraphSpace = None
    ) -> Annotated[CallToolResult, RelationsResult]:
        async def work() -> CallToolResult:
            created = await graph().create_relations(writer(space, "create_relations"), relations)
            shown = [r.model_dump(mode="json", by_alias=True) for r in created]
            return _result(shown, {"relations": shown})

        return await _answer(work())

    @server.tool(
        title="Add Observations",
        description="Add new observations to existing entities in the knowledge graph",
        annotations=WRITE,
    )
    async def add_observations(
        observations: list[ObservationAddition], space: GraphSpace = None
    ) -> Annotated[CallToolResult, ObservationsResult]:
        async def work() -> CallToolResult:
            added = await graph().add_observations(writer(space, "add_observations"), observations)
            shown = [a.model_dump(mode="json") for a in added]
            return _result(shown, {"results": shown})

        return await _answer(work())

    @server.tool(
        title="Delete Entities",
        description="Delete multiple entities and their associated relations from the knowledge graph",
        annotations=DELETE,
    )
    async def delete_entities(
        entityNames: Annotated[list[str], Field(description="An array of entity names to delete")],
        space: GraphSpace = None,
    ) -> Annotated[CallToolResult, DeletionResult]:
        async def work() -> CallToolResult:
            await graph().delete_entities(writer(space, "delete_entities"), entityNames)
            return _deleted("Entities")

        return await _answer(work())

    @server.tool(
        title="Delete Observations",
        description="Delete specific observations from entities in the knowledge graph",
        annotations=DELETE,
    )
    async def delete_observations(
        deletions: list[ObservationDeletion], space: GraphSpace = None
    ) -> Annotated[CallToolResult, DeletionResult]:
        async def work() -> CallToolResult:
            await graph().delete_observations(writer(space, "delete_observations"), deletions)
            return _deleted("Observations")

        return await _answer(work())

    @server.tool(
        title="Delete Relations",
        description="Delete multiple relations from the knowledge graph",
        annotations=DELETE,
    )
    async def delete_relations(
        relations: Annotated[list[RelationView], Field(description="An array of relations to delete")],
        space: GraphSpace = None,
    ) -> Annotated[CallToolResult, DeletionResult]:
        async def work() -> CallToolResult:
            await graph().delete_relations(writer(space, "delete_relations"), relations)
            return _deleted("Relations")

        return await _answer(work())

    @server.tool(title="Read Graph", description="Read the entire knowledge graph", annotations=READ)
    async def read_graph(
        limit: Limit = None, cursor: Cursor = None, max_tokens: MaxTokens = None, space: GraphSpace = None
    ) -> Annotated[CallToolResult, GraphResult]:
        async def work() -> CallToolResult:
            return _graph_result(await graph().read_graph(reader(space), Page(limit, cursor, max_tokens)))

        return await _answer(work())

    @server.tool(
        title="Search Nodes",
        description="Search for nodes in the knowledge graph based on a query",
        annotations=READ,
    )
    async def search_nodes(
        query: Annotated[
            str,
            Field(
                description="The search query to match against entity names, types, and observation content"
            ),
        ],
        limit: Limit = None,
        cursor: Cursor = None,
        max_tokens: MaxTokens = None,
        space: GraphSpace = None,
    ) -> Annotated[CallToolResult, GraphResult]:
        async def work() -> CallToolResult:
            found = await graph().search_nodes(reader(space), query, Page(limit, cursor, max_tokens))
            return _graph_result(found)

        return await _answer(work())

    @server.tool(
        title="Open Nodes",
        description="Open specific nodes in the knowledge graph by their names",
        annotations=READ,
    )
    async def open_nodes(
        names: Annotated[list[str], Field(description="An array of entity names to retrieve")],
        limit: Limit = None,
        cursor: Cursor = None,
        max_tokens: MaxTokens = None,
        space: GraphSpace = None,
    ) -> Annotated[CallToolResult, GraphResult]:
        async def work() -> CallToolResult:
            found = await graph().open_nodes(reader(space), names, Page(limit, cursor, max_tokens))
            return _graph_result(found)

        return await _answer(work())

    # ---- resources ---------------------------------------------------------------------------------

    @server.resource(
        GRAPH_URI,
        name="knowledge-graph",
        title="Knowledge Graph",
        description="The full knowledge graph with all entities and relations",
        mime_type="application/json",
    )
    async def knowledge_graph() -> str:
        with resource_errors():
            whole = await graph().read_graph(reader(None))
            return json.dumps(
                whole.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False
            )

    @server.resource(
        "memory://spaces/{space}/knowledge-graph",
        name="space_knowledge_graph",
        title="A shared space's knowledge graph",
        mime_type="application/json",
    )
    async def space_knowledge_graph(space: str) -> str:
        """The knowledge graph of a shared space you are a member of."""
        with resource_errors():
            whole = await graph().read_graph(reader(space))
            return json.dumps(
                whole.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False
            )

    @server.resource("memory://knowledge-graph/entities/{name}", name="entity", mime_type="application/json")
    async def entity(name: str) -> str:
        """One entity of your graph with each observation's created_at (and author, in a space), its
        relations and the ids of the turns and facts that mention it."""
        with resource_errors():
            return (await graph().entity(reader(None), name)).model_dump_json()


def graph_change_uri(owner: str) -> str:
    """The resource a change of this owner's graph updates."""
    return graph_uri(space_of(owner))
