"""The MCP tools: one module per family, each tool a module-level function you can find by name
(`grep -rn "def search_memory"`), import and call.

| module         | tools                                                                              |
|----------------|------------------------------------------------------------------------------------|
| threads.py     | add_turn, get_working_memory, set_thread_data, summarize_thread                    |
| search.py      | search_memory, list_memories                                                       |
| forget.py      | forget, forget_user                                                                |
| portability.py | export_memories, import_memories                                                   |
| learning.py    | remember, update_memory, memory_history, rollback_memory, extract_memories,       |
|                | reconcile_memories                                                                 |
| graph.py       | the reference memory server's nine knowledge-graph tools                           |

A tool takes its arguments, the request's `Context` and, resolved before it runs by the SDK's
`Resolve`, the owner whose memory it works on (dependencies.py). It raises product errors; the one
boundary in mcp/errors.py reports them. `PROFILES` says which tools a server lists
(`MCP_MEMORY_TOOLS`, README "Tool profiles"): each costs a client tokens in every conversation.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from mcp_memory.mcp.tools import forget, graph, learning, portability, search, threads
from mcp_memory.mcp.tools.registry import ToolSpec, register

Profile = Literal["core", "standard", "all"]

# Listed in this order (the order clients see).
ALL_TOOLS: tuple[ToolSpec, ...] = (
    *threads.family.tools,
    *search.family.tools,
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


def tools_of(profile: Profile, *, graph_tools: bool = True) -> list[ToolSpec]:
    """The tools a server with this profile lists, in order (graph_tools=False: never the graph's)."""
    chosen = PROFILES[profile]
    return [
        spec for spec in ALL_TOOLS if spec.name in chosen and (graph_tools or spec.name not in GRAPH_TOOLS)
    ]


def register_tools(server: MCPServer[Any], profile: Profile, *, graph_tools: bool = True) -> None:
    register(server, tools_of(profile, graph_tools=graph_tools))
