"""What happened, in what order: timeline, the outline of a thread, a project, a space or all one reads.
The rules are in service/timeline.py."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory.mcp.tools.arguments import ReadSpace
from mcp_memory.mcp.tools.dependencies import Readable, service_of
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.models import space_key
from mcp_memory.service import timeline as outline
from mcp_memory.views import TimelineView

family = Family("timeline")


@family.tool(ToolAnnotations(read_only_hint=True))
async def timeline(
    ctx: Context[Any, Any],
    owners: Readable,
    query: Annotated[
        str | None,
        Field(description="A topic: the exchanges about it and around them."),
    ] = None,
    thread_id: Annotated[str | None, Field(description="Only this thread.")] = None,
    project: Annotated[
        str | None, Field(description="Only this project's sessions (key like api-1a2b3c4d).")
    ] = None,
    since: Annotated[str | None, Field(description="ISO 8601.")] = None,
    until: Annotated[str | None, Field(description="ISO 8601.")] = None,
    max_tokens: Annotated[
        int, Field(description=f"Whole answer, {outline.MIN_TOKENS}-{outline.MAX_TOKENS}.")
    ] = outline.DEFAULT_TOKENS,
    cursor: Annotated[str | None, Field(description="The previous page's next_cursor.")] = None,
    space: ReadSpace = None,
) -> TimelineView:
    """What happened, oldest first: a line per exchange (user's words, reply's gist, ids). For "how did
    X go" or "in what order did we ...": the topic as query, then open milestones at
    memory://memories/{id}."""
    view, read = await outline.timeline(
        service_of(ctx),
        owners,
        query=query,
        thread_id=thread_id,
        project=project,
        since=since,
        until=until,
        max_tokens=max_tokens,
        cursor=cursor,
    )
    for space_name, ids in read.items():
        await service_of(ctx).audit.read(space_key(space_name), ids)
    return view
