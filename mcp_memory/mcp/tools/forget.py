"""Forgetting: one memory, a thread or everything of the caller (or of a space), and an admin's
forget_user. The rules and receipts are in service/forgetting.py and docs/security.md."""

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


@family.tool(ToolAnnotations(destructive_hint=True, idempotent_hint=True))
async def forget(
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("forget")],
    memory_id: Annotated[str | None, Field(description="This one memory.")] = None,
    thread_id: Annotated[str | None, Field(description="This whole thread.")] = None,
    everything: Annotated[bool, Field(description="All yours (with space: the whole space).")] = False,
    dry_run: Annotated[bool, Field(description="Only count what would be deleted.")] = False,
    space: Annotated[
        str | None,
        Field(
            description="In this shared space: a writer forgets their own part (the rest counted in "
            "left_by_others), an owner all; omit for your own."
        ),
    ] = None,
) -> ForgetResult:
    """Delete one memory, a thread or everything from working and long-term memory: give exactly one
    scope. Returns what was deleted."""
    return await service_of(ctx).forget(owner, memory_id, thread_id, everything, dry_run)


@family.tool(ToolAnnotations(destructive_hint=True, idempotent_hint=True))
async def forget_user(
    user_id: Annotated[str, Field(description="The user whose memories are all deleted.")],
    ctx: Context[Any, Any],
    dry_run: Annotated[bool, Field(description="Only count what would be deleted.")] = False,
) -> ForgetResult:
    """Admin only: delete everything stored for one user from every backend, with a receipt: their
    personal memory and, in every shared space, what they wrote (see docs/security.md)."""
    target = check.thread_id(user_id, "user_id")  # same alphabet as thread ids
    return await service_of(ctx).forget_user(target, dry_run=dry_run)
