"""Conversation threads: record a turn, read the working memory, keep session data, summarize now.
The rules (progressive summarization, budgets) are in service/threads.py."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory.mcp.tools.arguments import ThreadId, ThreadRef, ThreadSpace, WriteSpace
from mcp_memory.mcp.tools.dependencies import Member, audit_thread_read, progress_of, service_of, writer
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.models import Owner
from mcp_memory.views import SummarizeResult, ThreadDataView, TurnAdded, WorkingMemoryView

family = Family("threads")


@family.tool(ToolAnnotations(destructive_hint=False))
async def add_turn(
    thread_id: ThreadId,
    role: Annotated[str, Field(description="user, assistant, tool or system.")],
    content: Annotated[str, Field(description="The message, verbatim.")],
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("add_turn")],
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description="JSON, e.g. {tool_name} for a tool turn."),
    ] = None,
    context_window: Annotated[int | None, Field(description="Your model's context window in tokens.")] = None,
    created_at: Annotated[
        str | None,
        Field(description="ISO 8601 time said, for a past conversation; omit for now."),
    ] = None,
    space: WriteSpace = None,
) -> TurnAdded:
    """Record one message in working and long-term memory; older messages fold into the thread's
    summary past its token threshold. Returns the turn's id and the thread's counts."""
    added = await service_of(ctx).add_turn(
        owner,
        thread_id,
        role,
        content,
        metadata,
        context_window,
        created_at=created_at,
        progress=progress_of(ctx),
    )
    return TurnAdded.of(added)


@family.tool(ToolAnnotations(read_only_hint=True))
async def get_working_memory(
    thread_id: ThreadRef,
    ctx: Context[Any, Any],
    owner: Member,
    recent: Annotated[int | None, Field(description="Only the newest N messages.")] = None,
    space: ThreadSpace = None,
) -> WorkingMemoryView:
    """The thread's running summary and recent messages, with its token usage."""
    return await audit_thread_read(
        ctx, owner, await service_of(ctx).get_working_memory(owner, thread_id, recent)
    )


@family.tool(ToolAnnotations(destructive_hint=False, idempotent_hint=True))
async def set_thread_data(
    thread_id: ThreadId,
    data: Annotated[dict[str, Any], Field(description="JSON to keep (replaces the old).")],
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("set_thread_data")],
    space: ThreadSpace = None,
) -> ThreadDataView:
    """Keep small session state with the thread; get_working_memory returns it as `data`."""
    await service_of(ctx).set_thread_data(owner, thread_id, data)
    return ThreadDataView(keys=list(data))


@family.tool(ToolAnnotations(destructive_hint=False))
async def summarize_thread(
    thread_id: ThreadRef,
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("summarize_thread")],
    keep_recent: Annotated[
        int | None,
        Field(description="Newest messages kept verbatim (default: by token budget)."),
    ] = None,
    space: ThreadSpace = None,
) -> SummarizeResult:
    """Fold the thread's older messages into its summary now (every turn stays in long-term memory)."""
    return await service_of(ctx).summarize_thread(owner, thread_id, keep_recent, progress=progress_of(ctx))
