"""Where the service keeps revisions and trigger counters, and that forget reaches them there.

The service is opened the way the server opens it, on each production combination: long term on the
local Cosmos-protocol server (revisions there; counters there too, or on a real Redis when working
memory is on Redis) and the embedded default. Fact extraction itself needs similar() (VectorDistance),
which the local Cosmos server lacks; it runs on SQLite in test_learning_openai.py, and similar() runs
live in test_cosmos_live.py. Editing, history, rollback and forgetting need no vector query and run here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from mcp_memory.config import LearningSettings, LongTermSettings, Settings, WorkingSettings
from mcp_memory.learning import Learning
from mcp_memory.learning.triggers import turns_key
from mcp_memory.models import Memory, Scope
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.redis.keys import RedisKeys
from tests.contract.conftest_long_term import local_cosmos_settings
from tests.helpers import HANG_SECONDS
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio
USER = "tester"


def learning_of(service: MemoryService) -> Learning:
    assert isinstance(service.learning, Learning)
    return service.learning


@pytest.fixture(params=["cosmos", "cosmos+redis", "sqlite"])
async def service(
    request: pytest.FixtureRequest, fast_settings: Settings, tmp_path: Path
) -> AsyncIterator[MemoryService]:
    update: dict[str, Any] = {"learning": LearningSettings(extract_every_turns=2)}
    if request.param.startswith("cosmos"):
        server: CosmosServer = request.getfixturevalue("cosmos_server")
        update["long_term"] = LongTermSettings(backend="cosmos", cosmos=local_cosmos_settings(server))
    if request.param.endswith("redis"):
        update["working"] = request.getfixturevalue("redis_working_settings")
    async with open_service(fast_settings.model_copy(update=update)) as opened:
        yield opened


def backends(service: MemoryService) -> tuple[str, str]:
    learning = learning_of(service)
    return type(learning.revisions).__name__, type(learning.counters).__name__


async def test_revisions_and_counters_live_with_the_shared_stores(service: MemoryService) -> None:
    expected = {
        "working memory: sqlite, long term: cosmos": ("CosmosRevisionStore", "CosmosTriggerCounters"),
        "working memory: redis, long term: cosmos": ("CosmosRevisionStore", "RedisTriggerCounters"),
        "working memory: sqlite, long term: sqlite": ("SqliteRevisionStore", "SqliteTriggerCounters"),
    }
    description = next(d for d in expected if service.stores.description.startswith(d))

    assert backends(service) == expected[description]


async def test_edit_history_rollback_then_forget_leaves_no_revision_or_counter(
    service: MemoryService,
) -> None:
    learning = learning_of(service)
    fact = Memory(
        id="fact_budget", user_id=USER, type="fact", content="budget for the Hawaii trip is $10,000"
    )
    await service.stores.long_term.put([fact])
    await learning.editor.update(USER, fact.id, "budget for the Hawaii trip is $15,000")
    history = await learning.editor.history(USER, fact.id)
    assert [r.content for r in history.revisions] == [
        "budget for the Hawaii trip is $10,000",  # the baseline recorded before the first edit
        "budget for the Hawaii trip is $15,000",
    ]
    restored = await learning.editor.rollback(USER, fact.id, history.revisions[0].id)
    assert restored.content == "budget for the Hawaii trip is $10,000"
    assert len((await learning.editor.history(USER, fact.id)).revisions) == 3
    for i in range(3):  # counted in the store by the background lane (no model: nothing is extracted)
        await service.add_turn(USER, "trip", "user", f"turn {i} about the trip", None, None)
    with anyio.fail_after(HANG_SECONDS):
        await learning.worker.drain()
    assert await learning.counters.increment(USER, turns_key("trip"), by=0) == 3
    assert await learning.counters.compare_and_set(USER, "extracted:trip", None, "through turn 2")

    await service.forget(USER, everything=True)

    assert await learning.revisions.forget(Scope(user_id=USER, everything=True), dry_run=True) == 0
    assert await learning.counters.read(USER, "extracted:trip") is None
    assert await learning.counters.increment(USER, turns_key("trip"), by=0) == 0  # counts from zero again


async def test_forgetting_a_user_on_redis_leaves_no_counter_key(
    fast_settings: Settings,
    cosmos_server: CosmosServer,
    redis_working_settings: WorkingSettings,
    redis_url: str,
) -> None:
    long_term = LongTermSettings(backend="cosmos", cosmos=local_cosmos_settings(cosmos_server))
    settings = fast_settings.model_copy(update={"long_term": long_term, "working": redis_working_settings})
    keys = RedisKeys(redis_working_settings.key_prefix)
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        async with open_service(settings) as opened:
            counters = learning_of(opened).counters
            await counters.increment(USER, turns_key("t1"))
            await counters.compare_and_set(USER, "extracted:t1", None, "m1")
            assert len([k async for k in client.scan_iter(match=keys.learning_counter_pattern(USER))]) == 2

            await opened.forget(USER, everything=True)

            assert [k async for k in client.scan_iter(match=keys.learning_counter_pattern(USER))] == []
    finally:
        await client.aclose()
