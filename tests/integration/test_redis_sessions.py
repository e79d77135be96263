"""2025-protocol sessions on Redis (storage/redis/sessions.py), on one server and on the cluster: what one
replica records another reads, every read re-arms the expiry, and a deleted session stays ended."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.redis.keys import RedisKeys
from mcp_memory.storage.redis.sessions import RedisSessionStore

pytestmark = pytest.mark.anyio

TTL_MS = 60_000
SESSION = "0f{1}:*"  # a header may hold anything: braces and glob characters stay inside the id


@pytest.mark.parametrize("fixture", ["redis_working_settings", "redis_cluster_working_settings"])
async def test_one_replica_reads_what_another_recorded(request: pytest.FixtureRequest, fixture: str) -> None:
    settings: WorkingSettings = request.getfixturevalue(fixture)
    async with RedisSessionStore.open(settings) as first, RedisSessionStore.open(settings) as second:
        assert await second.touch(SESSION, TTL_MS) == (None, False, frozenset())
        await first.save(SESSION, '{"state": 1}', TTL_MS)
        await first.subscribe(SESSION, "memory://threads/a", TTL_MS)
        await first.subscribe(SESSION, "memory://threads/b", TTL_MS)
        await second.unsubscribe(SESSION, "memory://threads/a")
        assert await second.touch(SESSION, TTL_MS) == ('{"state": 1}', False, {"memory://threads/b"})
        await second.end(SESSION, TTL_MS)
        assert await first.touch(SESSION, TTL_MS) == (None, True, frozenset())
        await first.save(SESSION, '{"state": 2}', TTL_MS)  # a new session under the id starts afresh
        assert await first.touch(SESSION, TTL_MS) == ('{"state": 2}', False, frozenset())


async def test_a_read_re_arms_the_expiry_and_a_tombstone_is_never_re_armed(
    redis_working_settings: WorkingSettings, redis_url: str
) -> None:
    key = RedisKeys(redis_working_settings.key_prefix).session(SESSION)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        async with RedisSessionStore.open(redis_working_settings) as store:
            await store.save(SESSION, "{}", 1_000)
            assert 0 < await raw.pttl(key) <= 1_000
            await store.touch(SESSION, TTL_MS)
            assert await raw.pttl(key) > 1_000
            await store.end(SESSION, 1_000)
            await store.touch(SESSION, TTL_MS)
            assert 0 < await raw.pttl(key) <= 1_000
    finally:
        await raw.aclose()
