"""The commands that open the memory service themselves, outside a server: export, import, forget-user."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.to_thread

from mcp_memory import validation as check
from mcp_memory.audit import Actor, acting
from mcp_memory.config import Settings
from mcp_memory.errors import ConfigError
from mcp_memory.private_files import FILE_MODE, open_private
from mcp_memory.service.assembly import open_service
from mcp_memory.service.chat_exports import CHAT_FORMATS
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.memory_service import MemoryService


async def export_command(
    settings: Settings, user_id: str, output: Path | None, form: str = "mcp-memory"
) -> None:
    """`mcp-memory export`: write one user's export (or knowledge graph) to a file or stdout."""
    user = check.thread_id(user_id, "--user")
    async with open_service(settings) as service:
        if form == "memory-jsonl":
            text = await _graph(service).export_file(user)
            what = "the knowledge graph"
        else:
            export = await service.export_memories(user)
            text, what = export.jsonl, str(export.counts)
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        await anyio.to_thread.run_sync(_write_private, output, text)
    print(f"mcp-memory: exported {what} of user {user_id}", file=sys.stderr)


async def import_command(
    settings: Settings, user_id: str, source: Path | None, dry_run: bool, form: str = "mcp-memory"
) -> None:
    """`mcp-memory import`: read a file (or stdin) into one user's memory, in the format named."""
    text = sys.stdin.read() if source is None else await anyio.Path(source).read_text()
    user = check.thread_id(user_id, "--user")
    async with open_service(settings) as service, acting_as_operator():
        if form == "memory-jsonl":
            counts = await _graph(service).import_file(user, text, dry_run=dry_run)
            report = json.dumps(counts | {"dry_run": dry_run})
        elif form in CHAT_FORMATS:
            imported = await service.import_conversations(user, text, form, dry_run=dry_run)
            report = imported.model_dump_json()
        else:
            report = (await service.import_memories(user, text, dry_run=dry_run)).model_dump_json()
    print(f"mcp-memory: {report}", file=sys.stderr)


@contextlib.asynccontextmanager
async def acting_as_operator() -> AsyncIterator[None]:
    """What a command changes is recorded in the audit trail as done by the operating-system user."""
    with acting(Actor(f"cli:{getpass.getuser()}", client="mcp-memory")):
        yield


def _graph(service: MemoryService) -> KnowledgeGraph:
    if service.graph is None:
        raise ConfigError("the knowledge graph is not available with these settings")
    return service.graph


async def forget_user_command(settings: Settings, user_id: str, dry_run: bool) -> None:
    """Admin work without an admin token: whoever runs this already holds the backends' credentials."""
    async with open_service(settings) as service, acting_as_operator():
        receipt = await service.forget_user(check.thread_id(user_id, "user"), dry_run=dry_run)
    print(receipt.model_dump_json(indent=2))


def _write_private(path: Path, text: str) -> None:
    """An export holds the memories themselves: written 0600 (an existing file is made so too)."""
    with open(open_private(path), "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), FILE_MODE)
        out.write(text)
