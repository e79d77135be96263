"""`mcp-memory backup FILE` and `mcp-memory restore FILE [--force]`: the embedded data file, copied
consistently while servers run, and put back after checking it (storage/sqlite/backup.py).

Only the SQLite file is theirs: long-term memory on Cosmos DB is kept by its continuous backup
(docs/cosmos.md), and working memory on Redis is rebuilt from long-term memory (docs/redis.md).
"""

from __future__ import annotations

from pathlib import Path

from mcp_memory.config import Settings
from mcp_memory.storage.sqlite.backup import BackupError, backup, restore
from mcp_memory.storage.sqlite.migrations import MIGRATIONS


def _local_file_note(settings: Settings) -> str:
    """What of the memory the data file holds under these settings ("" when all of it)."""
    working = settings.working.resolved_backend
    long_term = settings.long_term.resolved_backend
    if working == "redis" and long_term == "cosmos":
        raise BackupError(
            "nothing of the memory is in the local data file with these settings: working memory is on "
            "Redis (rebuilt from long-term memory, docs/redis.md) and long-term memory on Cosmos DB "
            "(use its continuous backup, docs/cosmos.md)"
        )
    if long_term == "cosmos":
        return " (working memory only: long-term memory is on Cosmos DB, kept by its continuous backup)"
    if working == "redis":
        return " (long-term memory; working memory is on Redis and is rebuilt from it)"
    return ""


def backup_command(settings: Settings, target: Path) -> None:
    note = _local_file_note(settings)
    facts = backup(settings.sqlite_path, target)
    print(f"mcp-memory: backed up {settings.sqlite_path}{note} to {target}: {facts.describe()}, verified")


def restore_command(settings: Settings, source: Path, force: bool) -> None:
    note = _local_file_note(settings)
    report = restore(source, settings.sqlite_path, force=force)
    print(f"mcp-memory: restored {source} to {report.data_file}{note}: {report.facts.describe()}, verified")
    if report.kept_aside is not None:
        print(f"mcp-memory: the store it replaced is kept in {report.kept_aside}")
    if report.facts.schema < len(MIGRATIONS):
        print("mcp-memory: the backup's schema is older; the next server start upgrades it")
