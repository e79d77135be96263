"""Backends under contract. Each protocol's suite runs once per backend named here."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.base import WorkingMemoryStore

WorkingStoreOpener = Callable[[], AbstractAsyncContextManager[WorkingMemoryStore]]


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def working_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def working_store_opener(
    working_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> WorkingStoreOpener:
    """Opens the backend's store afresh on the same data each call (hypothesis examples need that)."""
    if working_backend == "sqlite":
        from mcp_memory.storage.sqlite.db import SqliteDatabase
        from mcp_memory.storage.sqlite.working import SqliteWorkingMemoryStore

        @asynccontextmanager
        async def open_sqlite() -> AsyncIterator[WorkingMemoryStore]:
            async with SqliteDatabase.open(tmp_path / "memory.db") as db:
                yield SqliteWorkingMemoryStore(db)

        return open_sqlite

    from mcp_memory.storage.redis.working import RedisWorkingMemoryStore

    # redis-cluster: three masters, which refuse a script whose keys span two hash slots (CROSSSLOT).
    fixture = (
        "redis_cluster_working_settings" if working_backend == "redis-cluster" else "redis_working_settings"
    )
    settings: WorkingSettings = request.getfixturevalue(fixture)

    @asynccontextmanager
    async def open_redis() -> AsyncIterator[WorkingMemoryStore]:
        async with RedisWorkingMemoryStore.open(settings) as store:
            yield store

    return open_redis


@pytest.fixture
async def working_store(working_store_opener: WorkingStoreOpener) -> AsyncIterator[WorkingMemoryStore]:
    async with working_store_opener() as store:
        yield store
