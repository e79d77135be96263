"""Forgetting: one memory, a thread or everything of the caller (or of a space), and an admin's
forget_user. The rules and receipts are in service/memory_service.py and docs/security.md."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory import validation as check
from mcp_memory.mcp.tools.dependencies import service_of, writer
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.models import Owner
from mcp_memory.views import ForgetResult

family = Family("forget")


@family.tool(
    ToolAnnotations(title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=True)
)
async def forget(
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("forget")],
    memory_id: Annotated[str | None, Field(description="Delete this one memory (e.g. a turn id).")] = None,
    thread_id: Annotated[str | None, Field(description="Delete this whole thread.")] = None,
    everything: Annotated[
        bool, Field(description="Delete all of this user's memories (with space: the whole space).")
    ] = False,
    dry_run: Annotated[bool, Field(description="Only count what would be deleted.")] = False,
    space: Annotated[
        str | None,
        Field(
            description="Forget in this shared space: a writer forgets what they wrote (with thread_id or "
            "everything=true: their own part, the rest stays and is counted in left_by_others), an owner "
            "anything there or (everything=true) the whole space. Omit for your own memory."
        ),
    ] = None,
) -> ForgetResult:
    """Delete one memory, one thread or everything, from working and long-term memory. Give exactly one
    scope. Returns what was deleted, per store."""
    return await service_of(ctx).forget(owner, memory_id, thread_id, everything, dry_run)


@family.tool(
    ToolAnnotations(
        title="Forget a user (admin)", read_only_hint=False, destructive_hint=True, idempotent_hint=True
    )
)
async def forget_user(
    user_id: Annotated[str, Field(description="The user whose memories are all deleted.")],
    ctx: Context[Any, Any],
    dry_run: Annotated[bool, Field(description="Only count what would be deleted.")] = False,
) -> ForgetResult:
    """Admin only: delete everything stored for one user from every backend, with a receipt: their
    personal memory and, in every shared space, what they wrote (see docs/security.md)."""
    target = check.thread_id(user_id, "user_id")  # same alphabet as thread ids
    return await service_of(ctx).forget_user(target, dry_run=dry_run)
