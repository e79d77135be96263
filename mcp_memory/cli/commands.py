"""The commands that open the memory service themselves, outside a server: export, import, forget-user."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.service.assembly import open_service


async def export_command(settings: Settings, user_id: str, output: Path | None) -> None:
    """`mcp-memory export`: write one user's export to a file (or stdout), through the service."""
    async with open_service(settings) as service:
        export = await service.export_memories(check.thread_id(user_id, "--user"))
    if output is None:
        sys.stdout.write(export.jsonl)
    else:
        await anyio.Path(output).write_text(export.jsonl)
    print(f"mcp-memory: exported {export.counts} for user {user_id}", file=sys.stderr)


async def import_command(settings: Settings, user_id: str, source: Path | None, dry_run: bool) -> None:
    """`mcp-memory import`: read an export from a file (or stdin) into one user's memory."""
    text = sys.stdin.read() if source is None else await anyio.Path(source).read_text()
    async with open_service(settings) as service:
        result = await service.import_memories(check.thread_id(user_id, "--user"), text, dry_run=dry_run)
    print(f"mcp-memory: {result.model_dump_json()}", file=sys.stderr)


async def forget_user_command(settings: Settings, user_id: str, dry_run: bool) -> None:
    """Admin work without an admin token: whoever runs this already holds the backends' credentials."""
    async with open_service(settings) as service:
        receipt = await service.forget_user(check.thread_id(user_id, "user"), dry_run=dry_run)
    print(receipt.model_dump_json(indent=2))
