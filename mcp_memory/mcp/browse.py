"""The MCP surface of browsing: the list_memories tool (memories without a query, page by page, as they
stand now or stood at a moment) and the memory://facts resource. The rules are in service/browse.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.observability.metrics import note_error
from mcp_memory.security.spaces import current_access
from mcp_memory.service import browse
from mcp_memory.views import MemoryPage


@contextmanager
def _errors(translated: type[Exception]) -> Iterator[None]:
    try:
        yield
    except MemoryServerError as e:
        note_error(e)
        raise translated(str(e)) from e


def register_browse(server: MCPServer[Any], host: ServiceHost, settings: Settings) -> None:
    @server.tool(
        annotations=ToolAnnotations(title="List memories", read_only_hint=True, idempotent_hint=True)
    )
    async def list_memories(
        types: Annotated[
            list[str] | None,
            Field(description="Only these memory types: turn, summary, fact, user_summary, observation."),
        ] = None,
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
            Field(
                description="Only this shared space; omit for your own memory plus every space you are in."
            ),
        ] = None,
    ) -> MemoryPage:
        """Browse long-term memories without a query, newest first by default, one page at a time; pass
        next_cursor back as cursor for the next page (null: no more)."""
        with _errors(ToolError):
            return await browse.list_memories(
                host.service.stores.long_term,
                current_access(settings).readable(space),
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

    @server.resource("memory://facts", name="facts", mime_type="text/plain")
    async def facts() -> str:
        """The facts known about you now, one line each, newest first: content (kind, since date, id)."""
        with _errors(ResourceError):
            return await browse.facts_text(host.service.stores.long_term, current_access(settings).readable())
