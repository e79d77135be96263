"""Finding memories: search_memory (by keywords and meaning, best first) and list_memories (without a
query, page by page). The rules are in service/searching.py and service/browse.py."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory.mcp.tools.arguments import MemoryTypes, ReadSpace
from mcp_memory.mcp.tools.dependencies import Readable, audit_read, service_of
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.search.query import SearchQuery
from mcp_memory.service import browse
from mcp_memory.views import MemoryPage, SearchResult

family = Family("search")


@family.tool(ToolAnnotations(title="Search memory", read_only_hint=True, idempotent_hint=True))
async def search_memory(
    query: Annotated[str, Field(description='What to look for; "quoted phrases" must match exactly.')],
    ctx: Context[Any, Any],
    owners: Readable,
    thread_id: Annotated[
        str | None, Field(description="Only this thread; omit to search all threads.")
    ] = None,
    types: MemoryTypes = None,
    limit: Annotated[int, Field(description="How many results, 1-100.")] = 10,
    mode: Annotated[
        str, Field(description="hybrid (default: keywords + meaning), vector or text.")
    ] = "hybrid",
    since: Annotated[str | None, Field(description="Only memories at or after this ISO 8601 time.")] = None,
    until: Annotated[str | None, Field(description="Only memories at or before this ISO 8601 time.")] = None,
    min_score: Annotated[
        float | None,
        Field(
            description="Only hits at least this likely to be relevant (0-1; each hit's score is that "
            "calibrated probability, on the same scale for every query)."
        ),
    ] = None,
    max_tokens: Annotated[
        int | None,
        Field(
            description="Return only the best hits whose contents fit this many tokens; a long memory "
            "comes back as a snippet (snippet: true) to read whole at memory://memories/{id}."
        ),
    ] = None,
    as_of: Annotated[
        str | None,
        Field(
            description="Search memory as it stood at this ISO 8601 time: nothing made later, and facts "
            "superseded since as they were then."
        ),
    ] = None,
    space: ReadSpace = None,
) -> SearchResult:
    """Search long-term memory (past turns, summaries, facts) by keywords and meaning, best first: your
    own and that of the shared spaces you are a member of (each hit says its space and author)."""
    service = service_of(ctx)
    asked = SearchQuery.of(
        owners,
        query,
        thread_id,
        types,
        limit,
        mode,
        since,
        until,
        min_score=min_score,
        max_tokens=max_tokens,
        as_of=as_of,
        settings=service.settings,
    )
    found = await service.search(asked)
    await audit_read(ctx, found.results)
    return found


@family.tool(ToolAnnotations(title="List memories", read_only_hint=True, idempotent_hint=True))
async def list_memories(
    ctx: Context[Any, Any],
    owners: Readable,
    types: MemoryTypes = None,
    thread_id: Annotated[str | None, Field(description="Only this thread's memories.")] = None,
    kind: Annotated[
        str | None,
        Field(description="Only facts of this kind: semantic, preference, procedural, episodic."),
    ] = None,
    since: Annotated[
        str | None, Field(description="Only memories created at or after this ISO 8601 time.")
    ] = None,
    until: Annotated[
        str | None, Field(description="Only memories created at or before this ISO 8601 time.")
    ] = None,
    include_superseded: Annotated[
        bool, Field(description="Also memories a newer one replaced (shown with superseded_by).")
    ] = False,
    order: Annotated[str, Field(description="newest (default) or oldest first.")] = "newest",
    limit: Annotated[int, Field(description=f"Memories per page, 1-{browse.MAX_LIMIT}.")] = 20,
    cursor: Annotated[
        str | None, Field(description="The next_cursor of the previous page, with the same order.")
    ] = None,
    as_of: Annotated[
        str | None,
        Field(
            description="ISO 8601 time: memory as it stood then (later memories left out, facts "
            "superseded since shown as they were)."
        ),
    ] = None,
    space: Annotated[
        str | None,
        Field(description="Only this shared space; omit for your own memory plus every space you are in."),
    ] = None,
) -> MemoryPage:
    """Browse long-term memories without a query, newest first by default, one page at a time; pass
    next_cursor back as cursor for the next page (null: no more)."""
    page = await browse.list_memories(
        service_of(ctx).stores.long_term,
        owners,
        types=types,
        thread_id=thread_id,
        kind=kind,
        since=since,
        until=until,
        include_superseded=include_superseded,
        order=order,
        limit=limit,
        cursor=cursor,
        as_of=as_of,
    )
    await audit_read(ctx, page.memories)
    return page
