"""Search embeds the query while the store runs the full-text side; an embedding failure must still be
a clear error of its own (not an ExceptionGroup, not a crash), and text search must not need it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_memory.config import Settings
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.fakes.openai_stub import OpenAIStub

pytestmark = pytest.mark.anyio


@pytest.fixture
async def remote_embedding_service(
    settings: Settings, openai_stub: OpenAIStub
) -> AsyncIterator[MemoryService]:
    embedding = openai_stub.embedding_settings()
    async with open_service(settings.model_copy(update={"embedding": embedding})) as service:
        yield service


async def test_an_embedding_failure_during_search_is_a_clear_error(
    remote_embedding_service: MemoryService, openai_stub: OpenAIStub
) -> None:
    await remote_embedding_service.add_turn(
        "tester", "t", "user", "The deploy target is eu-west-1", None, None
    )
    openai_stub.set_mode("500")
    for mode in ("hybrid", "vector"):
        with pytest.raises(BackendUnavailableError, match="embedding provider"):
            await remote_embedding_service.search(
                SearchQuery.of(
                    "tester", "deploy target", mode=mode, settings=remote_embedding_service.settings
                )
            )
    found = await remote_embedding_service.search(
        SearchQuery.of("tester", "deploy target", mode="text", settings=remote_embedding_service.settings)
    )
    assert [h.content for h in found.results] == ["The deploy target is eu-west-1"]
    openai_stub.set_mode("ok")
    found = await remote_embedding_service.search(
        SearchQuery.of("tester", "deploy target", settings=remote_embedding_service.settings)
    )
    assert found.results[0].content == "The deploy target is eu-west-1"
