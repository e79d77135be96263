"""Threads as resources: the list, one thread's working memory, its summary (own and a space's)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context

from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.resources.registry import ResourceFamily
from mcp_memory.mcp.tools.dependencies import access_of, audit_thread_read, server_of, service_of, user_of
from mcp_memory.models import Owner
from mcp_memory.service import timeline

family = ResourceFamily("threads")
JSON, TEXT = "application/json", "text/plain"


@family.resource("memory://threads", name="threads", mime_type=JSON)
async def thread_list(server: MemoryServer) -> str:
    """This user's threads and those of the shared spaces they are a member of, newest first (each
    says its space: null for the user's own)."""
    found = await server.service.list_threads(access_of(server).readable(None))
    return json.dumps([t.model_dump(mode="json") for t in found])


@family.resource("memory://threads/{thread_id}", name="working_memory", mime_type=JSON)
async def thread(thread_id: str, ctx: Context[Any, Any]) -> str:
    """A thread's working memory: summary, recent messages, token usage."""
    view = await service_of(ctx).get_working_memory(user_of(server_of(ctx)), thread_id)
    return view.model_dump_json()


@family.resource("memory://threads/{thread_id}/summary", name="thread_summary", mime_type=TEXT)
async def thread_summary(thread_id: str, ctx: Context[Any, Any]) -> str:
    """A thread's running summary as plain text (empty until the thread is first summarized)."""
    return (await service_of(ctx).get_working_memory(user_of(server_of(ctx)), thread_id, recent=0)).summary


@family.resource("memory://threads/{thread_id}/timeline", name="thread_timeline", mime_type=JSON)
async def thread_timeline(thread_id: str, ctx: Context[Any, Any]) -> str:
    """A thread's timeline: one line per exchange, oldest first, within the timeline tool's default
    budget (the tool pages on and filters by topic or time)."""
    view, _ = await timeline.timeline(service_of(ctx), [Owner(user_of(server_of(ctx)))], thread_id=thread_id)
    return view.model_dump_json(exclude_defaults=True)


@family.resource(
    "memory://spaces/{space}/threads/{thread_id}/timeline", name="space_thread_timeline", mime_type=JSON
)
async def space_thread_timeline(space: str, thread_id: str, ctx: Context[Any, Any]) -> str:
    """A shared space's thread's timeline (as memory://threads/{thread_id}/timeline)."""
    owner = access_of(server_of(ctx)).owner(space)
    view, read = await timeline.timeline(service_of(ctx), [owner], thread_id=thread_id)
    for ids in read.values():
        await service_of(ctx).audit.read(owner, ids)
    return view.model_dump_json(exclude_defaults=True)


@family.resource("memory://spaces/{space}/threads/{thread_id}", name="space_working_memory", mime_type=JSON)
async def space_thread(space: str, thread_id: str, ctx: Context[Any, Any]) -> str:
    """A shared space's thread: summary, recent messages (each with its author), token usage."""
    owner = access_of(server_of(ctx)).owner(space)
    view = await service_of(ctx).get_working_memory(owner, thread_id)
    return (await audit_thread_read(ctx, owner, view)).model_dump_json()


@family.resource(
    "memory://spaces/{space}/threads/{thread_id}/summary", name="space_thread_summary", mime_type=TEXT
)
async def space_thread_summary(space: str, thread_id: str, ctx: Context[Any, Any]) -> str:
    """A shared space's thread's running summary as plain text: one summary for all its members."""
    owner = access_of(server_of(ctx)).owner(space)
    view = await service_of(ctx).get_working_memory(owner, thread_id, recent=0)
    return (await audit_thread_read(ctx, owner, view)).summary
