"""The MCP resources: one module per family, each resource a module-level function.

| module       | resources                                                                          |
|--------------|------------------------------------------------------------------------------------|
| threads.py   | memory://threads, memory://threads/{thread_id}[/summary|/timeline],                |
|              | memory://spaces/{space}/threads/{thread_id}[/summary|/timeline]                    |
| memories.py  | memory://memories/{memory_id}, memory://facts                                      |
| learning.py  | memory://profile, memory://learning/status                                         |
| graph.py     | memory://knowledge-graph, memory://spaces/{space}/knowledge-graph,                 |
|              | memory://knowledge-graph/entities/{name}                                           |
| audit.py     | memory://audit, memory://spaces/{space}/audit (filters as query parameters)        |
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from mcp_memory.mcp.resources import audit, graph, learning, memories, threads
from mcp_memory.mcp.resources.registry import register


def register_resources(server: MCPServer[Any], *, graph_resources: bool = True) -> None:
    register(
        server,
        [
            *threads.family.resources,
            *memories.family.resources,
            *learning.family.resources,
            *audit.family.resources,
        ],
    )
    if graph_resources:
        register(server, graph.family.resources)
