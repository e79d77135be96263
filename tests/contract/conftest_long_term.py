"""Fixtures for the long-term store contract: one store per backend, fresh for each test.

`long_term_store` runs on every backend: SQLite and the local Cosmos-protocol server.
`search_store` runs only on backends that implement ranked search: SQLite here. The local Cosmos server
has no VectorDistance / FullTextScore / RANK RRF, so Cosmos search is checked as SQL text
(test_cosmos_sql.py) and run for real by test_cosmos_live.py, which overrides both fixtures with a live
Azure account.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from mcp_memory.config import CosmosSettings, LongTermSettings, Settings
from mcp_memory.llm.hash_embedder import HashingEmbedder
from mcp_memory.models import EmbeddingSpec, Memory, MemoryType
from mcp_memory.storage.base import LongTermStore
from tests.services.cosmos_server import CosmosServer

DIMENSION = 64
EMBEDDER = HashingEmbedder(DIMENSION)
EMBEDDING: EmbeddingSpec = EMBEDDER.spec


def embed(text: str) -> list[float]:
    """A deterministic vector: texts sharing words are close (feature hashing, not semantics)."""
    return [float(x) for x in EMBEDDER.embed_now([text])[0]]


def local_cosmos_settings(server: CosmosServer, **overrides: object) -> CosmosSettings:
    """Settings for the local server: a database of its own (so tests never see each other's data),
    plain HTTP and no endpoint discovery (the server advertises https:// endpoints it does not serve)."""
    values: dict[str, object] = {
        "endpoint": server.endpoint,
        "key": SecretStr(server.key),
        "database": f"test_{uuid.uuid4().hex[:12]}",
        "endpoint_discovery": False,
        "timeout_seconds": 10.0,
    }
    values.update(overrides)
    return CosmosSettings.model_validate(values)


def on_local_cosmos(settings: Settings, server: CosmosServer, **overrides: object) -> Settings:
    """These settings with long-term memory on the local Cosmos-protocol server (local_cosmos_settings)."""
    long_term = LongTermSettings(backend="cosmos", cosmos=local_cosmos_settings(server, **overrides))
    return settings.model_copy(update={"long_term": long_term})


@asynccontextmanager
async def open_sqlite(path: Path) -> AsyncIterator[LongTermStore]:
    from mcp_memory.storage.sqlite.db import SqliteDatabase
    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, EMBEDDING) as store:
        yield store


@asynccontextmanager
async def open_cosmos(settings: CosmosSettings) -> AsyncIterator[LongTermStore]:
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

    async with CosmosLongTermStore.open(settings, EMBEDDING) as store:
        yield store


@pytest.fixture(params=["sqlite", "cosmos"])
async def long_term_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LongTermStore]:
    if request.param == "sqlite":
        async with open_sqlite(tmp_path / "memory.db") as store:
            yield store
    else:
        server: CosmosServer = request.getfixturevalue("cosmos_server")
        async with open_cosmos(local_cosmos_settings(server)) as store:
            yield store


@pytest.fixture(params=["sqlite"])
async def search_store(tmp_path: Path) -> AsyncIterator[LongTermStore]:
    async with open_sqlite(tmp_path / "memory.db") as store:
        yield store


@pytest.fixture
def new_user() -> Callable[[], str]:
    """Unique user ids, so a test never depends on what another left in a shared (live) database."""
    return lambda: f"u-{uuid.uuid4().hex[:12]}"


T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def memory(
    user_id: str,
    memory_id: str,
    content: str,
    *,
    thread_id: str | None = "t1",
    type: MemoryType = "turn",
    minutes: int = 0,
    **fields: object,
) -> Memory:
    return Memory(
        id=memory_id,
        user_id=user_id,
        thread_id=thread_id,
        role="user" if type == "turn" else None,
        type=type,
        content=content,
        embedding=embed(content),
        created_at=T0 + timedelta(minutes=minutes),
        token_count=len(content.split()),
        **fields,
    )
