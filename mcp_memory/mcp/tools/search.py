"""Finding memories: search_memory (by keywords and meaning, best first) and list_memories (without a
query, page by page). The rules are in service/searching.py and service/browse.py."""

from __future__ import annotations

import functools
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory.mcp.tools.arguments import MemoryTypes, ReadSpace
from mcp_memory.mcp.tools.dependencies import Readable, audit_read, service_of
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.search.query import SearchQuery
from mcp_memory.service import browse, exchanges, results
from mcp_memory.views import MemoryPage, SearchResultView

family = Family("search")


@family.tool(ToolAnnotations(read_only_hint=True))
async def search_memory(
    query: Annotated[str, Field(description='What to look for; "quoted phrases" must match exactly.')],
    ctx: Context[Any, Any],
    owners: Readable,
    thread_id: Annotated[str | None, Field(description="Only this thread.")] = None,
    types: MemoryTypes = None,
    limit: Annotated[int, Field(description="1-100.")] = 10,
    mode: Annotated[str, Field(description="hybrid (keywords + meaning), vector or text.")] = "hybrid",
    since: Annotated[str | None, Field(description="ISO 8601: from then on.")] = None,
    until: Annotated[str | None, Field(description="ISO 8601: until then.")] = None,
    min_score: Annotated[
        float | None,
        Field(description="0-1: only hits at least this likely relevant (score)."),
    ] = None,
    max_tokens: Annotated[
        int | None,
        Field(description="Only the best hits that fit this many tokens."),
    ] = None,
    as_of: Annotated[
        str | None,
        Field(description="ISO 8601: memory as it stood then."),
    ] = None,
    space: ReadSpace = None,
    full_content: Annotated[
        bool, Field(description="Long memories whole, not just the passage matched.")
    ] = False,
    unit: Annotated[
        str | None,
        Field(description="memory, or exchange (user's turn + reply); default: by the question."),
    ] = None,
) -> SearchResultView:
    """Search turns, summaries and facts (yours and your spaces') by keywords and meaning, best first.
    A long memory's hit is the passage matched: read it whole at memory://memories/{id}."""
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
    found = await exchanges.search(service, asked, exchanges.checked_unit(unit))
    await audit_read(ctx, [*found.results, *exchanges.replies_of(found.results)])
    # Narrowing long hits counts tokens (a few ms a hit): in a worker thread, the event loop stays free.
    shown = functools.partial(results.shown, found, asked, service.tokens.count, full_content=full_content)
    return await anyio.to_thread.run_sync(shown)


@family.tool(ToolAnnotations(read_only_hint=True))
async def list_memories(
    ctx: Context[Any, Any],
    owners: Readable,
    types: MemoryTypes = None,
    thread_id: Annotated[str | None, Field(description="Only this thread.")] = None,
    kind: Annotated[
        str | None,
        Field(description="Facts: semantic, preference, procedural or episodic."),
    ] = None,
    since: Annotated[str | None, Field(description="ISO 8601: made from then on.")] = None,
    until: Annotated[str | None, Field(description="ISO 8601: made until then.")] = None,
    include_superseded: Annotated[bool, Field(description="Also memories a newer one replaced.")] = False,
    order: Annotated[str, Field(description="newest or oldest first.")] = "newest",
    limit: Annotated[int, Field(description=f"Per page, 1-{browse.MAX_LIMIT}.")] = 20,
    cursor: Annotated[str | None, Field(description="The previous page's next_cursor.")] = None,
    as_of: Annotated[
        str | None,
        Field(description="ISO 8601: memory as it stood then."),
    ] = None,
    space: ReadSpace = None,
    full_content: Annotated[bool, Field(description="Long memories whole, not just their opening.")] = False,
) -> MemoryPage:
    """Browse memories without a query, a page at a time (a long one as its opening); pass next_cursor
    back as cursor."""
    page = await service_of(ctx).list_memories(
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
    shown = functools.partial(
        results.listed_shown, page, service_of(ctx).tokens.count, full_content=full_content
    )
    return await anyio.to_thread.run_sync(shown)
