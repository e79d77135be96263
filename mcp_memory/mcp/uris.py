"""The resource URIs a change notification names (and the resources that serve them)."""

from __future__ import annotations

from mcp_memory.models import space_of

GRAPH_URI = "memory://knowledge-graph"


def thread_uri(thread_id: str, space: str | None = None) -> str:
    if space is not None:
        return f"memory://spaces/{space}/threads/{thread_id}"
    return f"memory://threads/{thread_id}"


def graph_uri(space: str | None) -> str:
    return GRAPH_URI if space is None else f"memory://spaces/{space}/knowledge-graph"


def graph_change_uri(owner: str) -> str:
    """The resource a change of this owner's graph updates."""
    return graph_uri(space_of(owner))
