"""Storage backends behind two protocols; `open_stores` picks them from the settings.

Backends are imported only when chosen, so the Redis and Cosmos clients stay optional extras.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from mcp_memory.config import Settings
from mcp_memory.models import EmbeddingSpec
from mcp_memory.storage.base import LongTermStore, WorkingForgetCount, WorkingMemoryStore

__all__ = [
    "EmbeddingSpec",
    "LongTermStore",
    "Stores",
    "WorkingForgetCount",
    "WorkingMemoryStore",
    "open_stores",
]


@dataclass(frozen=True)
class Stores:
    working: WorkingMemoryStore
    long_term: LongTermStore
    description: str  # e.g. "working memory: redis, long term: sqlite (/path/memory.db)"


@asynccontextmanager
async def open_stores(settings: Settings, embedding: EmbeddingSpec) -> AsyncIterator[Stores]:
    working_backend = settings.working.resolved_backend
    long_term_backend = settings.long_term.resolved_backend
    async with AsyncExitStack() as stack:
        db = None
        if "sqlite" in (working_backend, long_term_backend):
            from mcp_memory.storage.sqlite.db import SqliteDatabase

            db = await stack.enter_async_context(SqliteDatabase.open(settings.sqlite_path))

        working: WorkingMemoryStore
        match working_backend:
            case "sqlite":
                from mcp_memory.storage.sqlite.working import SqliteWorkingMemoryStore

                assert db is not None
                working = SqliteWorkingMemoryStore(db)
            case "redis":
                from mcp_memory.storage.redis.working import (
                    RedisWorkingMemoryStore,  # optional extra: mcp-memory[redis]
                )

                working = await stack.enter_async_context(RedisWorkingMemoryStore.open(settings.working))

        long_term: LongTermStore
        match long_term_backend:
            case "sqlite":
                from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

                assert db is not None
                long_term = await stack.enter_async_context(
                    SqliteLongTermStore.open(
                        db,
                        embedding,
                        index_memory=settings.long_term.index_memory_mb * 2**20,
                        max_stored_bytes=settings.security.max_stored_bytes,
                    )
                )
            case "cosmos":
                from mcp_memory.storage.cosmos.long_term import (
                    CosmosLongTermStore,  # optional extra: mcp-memory[cosmos]
                )

                long_term = await stack.enter_async_context(
                    CosmosLongTermStore.open(
                        settings.long_term.cosmos,
                        embedding,
                        max_stored_bytes=settings.security.max_stored_bytes,
                    )
                )

        where = f" ({settings.sqlite_path})" if db is not None else ""
        yield Stores(
            working=working,
            long_term=long_term,
            description=f"working memory: {working_backend}, long term: {long_term_backend}{where}",
        )
