"""The MCP tools: one module per family, each tool a module-level function you can find by name
(`grep -rn "def search_memory"`), import and call.

| module         | tools                                                                              |
|----------------|------------------------------------------------------------------------------------|
| threads.py     | add_turn, get_working_memory, set_thread_data, summarize_thread                    |
| search.py      | search_memory, list_memories                                                       |
| timeline.py    | timeline                                                                           |
| forget.py      | forget, forget_user                                                                |
| portability.py | export_memories, import_memories                                                   |
| learning.py    | remember, update_memory, memory_history, rollback_memory, extract_memories,       |
|                | reconcile_memories                                                                 |
| graph.py       | the reference memory server's nine knowledge-graph tools                           |

A tool takes its arguments, the request's `Context` and, resolved before it runs by the SDK's
`Resolve`, the owner whose memory it works on (dependencies.py). It raises product errors; the one
boundary in mcp/errors.py reports them. `PROFILES` says which tools a profile holds
(`MCP_MEMORY_TOOLS`, README "Tool profiles"): each costs a client tokens in every conversation.
`listed_tools(settings)` is the one place that decides which tools a server lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from mcp_memory.config import Settings, reference_memory_file
from mcp_memory.mcp.tools import forget, graph, learning, portability, search, threads, timeline
from mcp_memory.mcp.tools.registry import ToolSpec, register

Profile = Literal["core", "standard", "all"]

# Listed in this order (the order clients see).
ALL_TOOLS: tuple[ToolSpec, ...] = (
    *threads.family.tools,
    *search.family.tools,
    *timeline.family.tools,
    *forget.family.tools,
    *portability.family.tools,
    *learning.family.tools,
    *graph.family.tools,
)
GRAPH_TOOLS = frozenset(spec.name for spec in graph.family.tools)

CORE = frozenset(
    {
        # the five a conversation needs...
        "add_turn",
        "search_memory",
        "get_working_memory",
        "summarize_thread",
        "forget",
        # ...and what a person asks for daily: keep this, correct that, what do you know
        "remember",
        "update_memory",
        "list_memories",
    }
)
STANDARD = CORE | {
    "timeline",
    "set_thread_data",
    "memory_history",
    "rollback_memory",
    "export_memories",
    "import_memories",
    "extract_memories",
    "reconcile_memories",
}
PROFILES: dict[Profile, frozenset[str]] = {
    "core": CORE,
    "standard": STANDARD,
    "all": frozenset(spec.name for spec in ALL_TOOLS),  # + forget_user (admin) and the knowledge graph
}


def graph_for_reference(settings: Settings, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the knowledge graph's nine tools join the profile's because MEMORY_FILE_PATH is set.

    That variable is the reference memory server's setting: a client entry written for that server, with
    only the command changed to `mcp-memory serve` (README "Knowledge graph"), must keep its nine tools.
    A profile chosen explicitly (MCP_MEMORY_TOOLS in the environment or .env, or an argument), whatever
    its value, is listed exactly; graph.tools=false hides the graph's tools still. `environ`: this
    process's environment unless given.
    """
    return (
        settings.graph.tools
        and "tools" not in settings.model_fields_set
        and reference_memory_file(environ) is not None
    )


def listed_tools(settings: Settings, environ: Mapping[str, str] | None = None) -> list[ToolSpec]:
    """The tools a server with these settings lists, in order: the `tools` profile's, plus the knowledge
    graph's when graph_for_reference(), never the graph's with graph.tools=false."""
    chosen = PROFILES[settings.tools]
    if graph_for_reference(settings, environ):
        chosen |= GRAPH_TOOLS
    if not settings.graph.tools:
        chosen -= GRAPH_TOOLS
    return [spec for spec in ALL_TOOLS if spec.name in chosen]


def register_tools(server: MCPServer[Any], settings: Settings) -> None:
    register(server, listed_tools(settings))
