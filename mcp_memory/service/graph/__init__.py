"""The knowledge graph: entities, their observations and the relations between them, with the rules and
results of the reference MCP memory server (@modelcontextprotocol/server-memory), so its users move here
unchanged. Callers use KnowledgeGraph and Page from here.

What lives where:
- operations.py: KnowledgeGraph, the calls: the reference's nine, the file import and export, an
  entity's detail, what learning extracted, what forget() removed; the reference's rules and ours.
- checks.py: what a call may hold (list sizes, names, observations, each item's fields).
- pages.py: Page, paging and fitting to max_tokens for the three readers, cursors, the result shapes.
- observations.py: each observation is also a long-term memory (type "observation"): the memories,
  their revisions, and the hybrid side of search_nodes.
- links.py: which turns and facts name which entities, and search's ranking moved by those links.
- files.py: the reference's memory.jsonl, read and written byte for byte; import and adoption.
"""

from mcp_memory.service.graph.files import GraphFile, parse_memory_jsonl, render_memory_jsonl
from mcp_memory.service.graph.operations import GraphListener, KnowledgeGraph
from mcp_memory.service.graph.pages import Page

__all__ = [
    "GraphFile",
    "GraphListener",
    "KnowledgeGraph",
    "Page",
    "parse_memory_jsonl",
    "render_memory_jsonl",
]
