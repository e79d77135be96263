"""The prompts: `recall`, relevant memories for a query rendered as recalled data, not instructions."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from mcp_memory.llm.prompts import load_prompt
from mcp_memory.mcp.errors import prompt_errors
from mcp_memory.mcp.tools.dependencies import access_of, audit_read, server_of
from mcp_memory.service.recall import recall as recall_memories
from mcp_memory.service.recall import render_memories


async def recall(
    query: str,
    ctx: Context[Any, Any],
    thread_id: str | None = None,
    max_tokens: int | None = None,
    space: str | None = None,
) -> str:
    server = server_of(ctx)
    owners = access_of(server).readable(space)
    hits = await recall_memories(server.service, owners, query, thread_id, max_tokens)
    await audit_read(ctx, hits)
    template = load_prompt("recall", server.config.prompts_dir)
    return template.render(query=query, memories=render_memories(hits)).text


def register_prompts(server: MCPServer[Any]) -> None:
    server.prompt(
        name="recall", description="Relevant memories for a query, as recalled data, not instructions."
    )(prompt_errors(recall))
