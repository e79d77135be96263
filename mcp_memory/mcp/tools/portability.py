"""Taking memory elsewhere: export as JSON Lines, import an export. Rules in service/portability.py."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory.mcp.tools.arguments import WriteSpace
from mcp_memory.mcp.tools.dependencies import Member, service_of, writer
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.models import Owner
from mcp_memory.views import ExportResult, ImportResult

family = Family("portability")


@family.tool(ToolAnnotations(read_only_hint=True))
async def export_memories(
    ctx: Context[Any, Any],
    owner: Member,
    space: Annotated[str | None, Field(description="This shared space instead of yours.")] = None,
) -> ExportResult:
    """Export all stored for you (memories, history, provenance) as JSON Lines, for import_memories."""
    exported = await service_of(ctx).export_memories(owner)
    await service_of(ctx).audit.read(owner, [], counts=exported.counts)  # a space's whole export
    return exported


@family.tool(ToolAnnotations(destructive_hint=False))
async def import_memories(
    jsonl: Annotated[str, Field(description="The JSON Lines text export_memories produced.")],
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("import_memories")],
    dry_run: Annotated[bool, Field(description="Only check the file and count its contents.")] = False,
    space: WriteSpace = None,
) -> ImportResult:
    """Add an export's memories to yours (ids kept: importing twice stores once); all is checked before
    anything is written."""
    return await service_of(ctx).import_memories(owner, jsonl, dry_run)
