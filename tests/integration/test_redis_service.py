"""MemoryService on Redis working memory when Redis fails or forgets: clear errors while it is down,
long-term search unaffected, and every thread rebuilt from long term after a restart or a TTL expiry."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

import anyio
import anyio.to_thread
import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from mcp_memory.config import Settings
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.redis.keys import RedisKeys
from tests.integration.redis_service_support import USER, recorded_service, service_settings
from tests.services.redis_cluster import RedisDeployment
from tests.services.redis_server import RedisServer

pytestmark = pytest.mark.anyio

BIG_WINDOW = 100_000  # no summarization: every acknowledged turn stays verbatim
# Far above what the short timeouts and retries below allow; a hang fails here instead of the suite.
_BOUND_SECONDS = 30


@pytest.fixture
async def raw(redis_deployment: RedisDeployment) -> AsyncIterator[aioredis.Redis | RedisCluster]:
    """A plain client of the deployment under test (one server, or the three-master cluster)."""
    client = redis_deployment.client()
    yield client
    await client.aclose()


async def ids_in_working_memory(service: MemoryService, thread_id: str) -> list[str]:
    return [m.id for m in (await service.get_working_memory(USER, thread_id)).messages]


async def wait_until_gone(raw: aioredis.Redis | RedisCluster, keys: Sequence[str]) -> None:
    with anyio.fail_after(_BOUND_SECONDS):
        while await raw.exists(*keys):  # noqa: ASYNC110 (the keys expire inside Redis)
            await anyio.sleep(0.05)  # until Redis expires the keys


async def test_while_redis_is_down_turns_fail_clearly_and_search_works_then_all_comes_back(
    fast_settings: Settings, private_redis: RedisServer
) -> None:
    # Redis stopped refuses at once; Redis up answers within this even on a loaded machine.
    settings = service_settings(fast_settings, private_redis.url, timeout_seconds=5.0, retries=1)
    async with recorded_service(settings) as (service, _):
        acknowledged = [
            (
                await service.add_turn(USER, "t", "user", f"Before the outage, fact {n}.", None, BIG_WINDOW)
            ).turn.id
            for n in range(5)
        ]
        await anyio.to_thread.run_sync(private_redis.stop)

        with anyio.fail_after(_BOUND_SECONDS), pytest.raises(BackendUnavailableError) as caught:
            await service.add_turn(USER, "t", "user", "The code word is heliotrope.", None, BIG_WINDOW)
        message = str(caught.value)
        assert "working memory (Redis) is unreachable" in message
        assert "saved to long-term memory" in message
        found_id = re.search(r"as (turn_[0-9a-f]+)", message)
        assert found_id is not None
        saved_while_down = found_id.group(1)
        with anyio.fail_after(_BOUND_SECONDS), pytest.raises(BackendUnavailableError, match=r"\(Redis\)"):
            await service.get_working_memory(USER, "t")
        # Long term is SQLite: search keeps working, and finds the turn Redis could not take.
        found = await service.search(
            SearchQuery.of(USER, "heliotrope", mode="text", settings=service.settings)
        )
        # It first; then, by their context, the two turns before it (search/context.py).
        assert [hit.id for hit in found.results] == [saved_while_down, *acknowledged[-1:-3:-1]]

        # The server kept nothing on disk: the same service instance, not reopened, rebuilds the
        # thread from long term, including the turn written while Redis was down.
        await anyio.to_thread.run_sync(private_redis.start)
        assert await service.stores.working.get(USER, "t") is None
        assert await ids_in_working_memory(service, "t") == [*acknowledged, saved_while_down]
        after = await service.add_turn(USER, "t", "assistant", "Back online.", None, BIG_WINDOW)
        assert after.working_memory.message_count == 7
        assert await ids_in_working_memory(service, "t") == [*acknowledged, saved_while_down, after.turn.id]


async def test_a_turn_after_a_restart_brings_the_history_back(
    fast_settings: Settings, private_redis: RedisServer
) -> None:
    # Redis stopped refuses at once; Redis up answers within this even on a loaded machine.
    settings = service_settings(fast_settings, private_redis.url, timeout_seconds=5.0, retries=1)
    async with recorded_service(settings) as (service, _):
        acknowledged = [
            (await service.add_turn(USER, "t", "user", f"Fact {n}.", None, BIG_WINDOW)).turn.id
            for n in range(3)
        ]
        await anyio.to_thread.run_sync(private_redis.stop)
        await anyio.to_thread.run_sync(private_redis.start)
        after = await service.add_turn(USER, "t", "user", "First turn after the restart.", None, BIG_WINDOW)
        assert after.working_memory.message_count == 4
        assert await ids_in_working_memory(service, "t") == [*acknowledged, after.turn.id]
        assert [t.thread_id for t in await service.list_threads(USER)] == ["t"]


async def test_an_expired_thread_is_rebuilt_from_long_term_on_read_and_on_the_next_turn(
    fast_settings: Settings, redis_deployment: RedisDeployment, raw: aioredis.Redis | RedisCluster
) -> None:
    settings = service_settings(
        fast_settings, redis_deployment.url, ttl_seconds=1, cluster=redis_deployment.cluster
    )
    keys = RedisKeys(settings.working.key_prefix).thread(USER, "t")
    async with recorded_service(settings) as (service, recorder):
        for n in range(24):
            content = f"Turn {n}: the Lisbon team ships release {n} on Friday with 3 fixes."
            await service.add_turn(USER, "t", "user" if n % 2 == 0 else "assistant", content, None, 512)
        assert recorder.compacted, "the thread was summarized, so the rebuild needs the summary too"
        before = await service.get_working_memory(USER, "t")
        assert before.summary and before.messages

        await wait_until_gone(raw, keys.data_keys)
        assert await service.stores.working.get(USER, "t") is None
        rebuilt = await service.get_working_memory(USER, "t")
        assert rebuilt.summary == before.summary
        assert [m.id for m in rebuilt.messages] == [m.id for m in before.messages]
        assert rebuilt.token_count == before.token_count
        assert 0 < await raw.pttl(keys.meta) <= 1000, "written back to Redis, expiring again"

        await wait_until_gone(raw, keys.data_keys)
        # A bigger window: this turn must not summarize, so the result is exactly history + turn.
        after = await service.add_turn(USER, "t", "user", "Is the Friday release still on?", None, 4000)
        assert not after.summarized
        wm = await service.get_working_memory(USER, "t")
        assert wm.summary == before.summary
        assert [m.id for m in wm.messages] == [*(m.id for m in before.messages), after.turn.id]
        assert wm.context_window == 4000
