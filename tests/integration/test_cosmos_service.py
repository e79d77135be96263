"""The service with its long-term memory on the local Cosmos-protocol server (working memory: SQLite).

Everything but search runs here: that server has no VectorDistance/FullTextScore (search is covered by
the SQL-text tests and the live Azure suite). Turns, summaries written in place, rebuild after working
memory is lost, and forgetting all go through the real Cosmos client and server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_memory.config import Settings
from mcp_memory.errors import BackendUnavailableError, MemoryServerError, NotFoundError
from mcp_memory.models import Scope, summary_id
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.contract.conftest_long_term import on_local_cosmos
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio
USER = "tester"


@pytest.fixture
async def cosmos_service(
    fast_settings: Settings, cosmos_server: CosmosServer
) -> AsyncIterator[MemoryService]:
    async with open_service(on_local_cosmos(fast_settings, cosmos_server)) as service:
        yield service


async def test_turns_and_summaries_live_in_cosmos(cosmos_service: MemoryService) -> None:
    ids = []
    for i in range(45):
        out = await cosmos_service.add_turn(
            USER, "t", "user", f"Point {i}: the budget line {i} is {i * 11} euros.", None, 400
        )
        ids.append(out.turn.id)
    assert cosmos_service.stores.description.startswith("working memory: sqlite, long term: cosmos")
    for turn_id in ids:
        assert (await cosmos_service.get_memory(USER, turn_id)).type == "turn"
    summary = await cosmos_service.get_memory(USER, summary_id(USER, "t"))
    wm = await cosmos_service.get_working_memory(USER, "t")
    assert summary.content == wm.summary != ""
    assert summary.metadata["summary_version"] >= 2, "the summary was rewritten in place"


async def test_lost_working_memory_is_rebuilt_from_cosmos(cosmos_service: MemoryService) -> None:
    for i in range(20):
        await cosmos_service.add_turn(USER, "t", "user", f"Fact {i} about the garden: {i} roses.", None, 400)
    before = await cosmos_service.get_working_memory(USER, "t")
    await cosmos_service.stores.working.forget(Scope(user_id=USER, thread_id="t"))
    after = await cosmos_service.get_working_memory(USER, "t")
    assert after.summary == before.summary
    assert [m.id for m in after.messages] == [m.id for m in before.messages]


async def test_forget_reaches_cosmos(cosmos_service: MemoryService) -> None:
    keep = await cosmos_service.add_turn(USER, "a", "user", "keep me", None, None)
    drop = await cosmos_service.add_turn(USER, "b", "user", "drop me", None, None)
    out = await cosmos_service.forget(USER, thread_id="b")
    assert out.long_term.memories == 1 and out.working_memory.messages == 1
    with pytest.raises(NotFoundError):
        await cosmos_service.get_memory(USER, drop.turn.id)
    assert (await cosmos_service.get_memory(USER, keep.turn.id)).content == "keep me"
    everything = await cosmos_service.forget(USER, everything=True, dry_run=True)
    assert everything.long_term.by_type == {"turn": 1}


async def test_search_on_the_local_server_is_a_clear_error_not_a_crash(cosmos_service: MemoryService) -> None:
    await cosmos_service.add_turn(USER, "t", "user", "hello cosmos", None, None)
    with pytest.raises(MemoryServerError) as caught:
        await cosmos_service.search(SearchQuery.of(USER, "hello", settings=cosmos_service.settings))
    assert not isinstance(caught.value, NotFoundError)
    assert "Cosmos" in str(caught.value) or isinstance(caught.value, BackendUnavailableError)
