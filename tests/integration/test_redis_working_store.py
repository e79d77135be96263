"""What only the Redis store promises: key layout, TTL on every key, retry safety, Redis Cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis
from redis.crc import key_slot

from mcp_memory.config import WorkingSettings
from mcp_memory.models import Message, Scope
from mcp_memory.storage.redis.keys import RedisKeys
from mcp_memory.storage.redis.working import RedisWorkingMemoryStore
from tests.helpers import HANG_SECONDS
from tests.services.redis_server import RedisServer, find_redis_binary, redis_settings

pytestmark = pytest.mark.anyio


def turn(n: int | str, tokens: int = 10) -> Message:
    return Message(id=f"m{n}", role="user", content=f"message {n}", token_count=tokens)


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


async def thread_keys(raw: aioredis.Redis, prefix: str, user: str) -> list[str]:
    return sorted([k async for k in raw.scan_iter(match=RedisKeys(prefix).user_thread_pattern(user))])


def test_key_names_encode_ids_so_they_cannot_collide_or_escape() -> None:
    keys = RedisKeys("mm")
    assert keys.thread("ann", "t1").meta == "mm:{ann:t1}:meta"
    assert keys.thread("a", "b:c").meta != keys.thread("a:b", "c").meta
    odd = keys.thread("u}*", "{t?")
    assert odd.meta.count("{") == 1 and odd.meta.count("}") == 1
    assert keys.thread_id_of("u}*", odd.meta) == "{t?"
    assert keys.user_thread_pattern("u}*") == "mm:{u%7D%2A:*"


async def test_every_key_of_a_thread_shares_one_slot_and_carries_the_ttl(
    redis_working_settings: WorkingSettings, raw: aioredis.Redis
) -> None:
    settings = redis_working_settings.model_copy(update={"ttl_seconds": 3600})
    prefix = settings.key_prefix
    async with RedisWorkingMemoryStore.open(settings) as store:
        await store.append("ann", "t1", turn(1), context_window=1000)
        await store.set_data("ann", "t1", {"k": 1})
        assert await store.try_lock("ann", "t1", "owner", 30)
        found = await thread_keys(raw, prefix, "ann")
        assert [k.rsplit(":", 1)[1] for k in found] == ["lease", "messages", "meta"]
        assert len({key_slot(k.encode()) for k in found}) == 1
        data_keys = [k for k in found if not k.endswith(":lease")]
        for key in [*data_keys, RedisKeys(prefix).user_threads("ann")]:
            assert 0 < await raw.pttl(key) <= (3600 + 60) * 1000

        # Sliding: each write re-arms the TTL of every key of the thread.
        for write in (
            store.append("ann", "t1", turn(2)),
            store.set_data("ann", "t1", {"k": 2}),
            store.compact(
                "ann", "t1", expected_version=0, removed_ids=["m1"], summary="s", summary_token_count=1
            ),
            store.forget(Scope(user_id="ann", thread_id="t1", memory_id="m2")),
        ):
            for key in data_keys:
                await raw.pexpire(key, 5000)
            assert await write is not False
            for key in data_keys:
                if await raw.exists(key):
                    assert await raw.pttl(key) > 5000


async def test_without_a_ttl_nothing_expires(
    redis_working_settings: WorkingSettings, raw: aioredis.Redis
) -> None:
    async with RedisWorkingMemoryStore.open(redis_working_settings) as store:
        await store.append("ann", "t1", turn(1))
        await store.set_data("ann", "t1", {"k": 1})
    prefix = redis_working_settings.key_prefix
    for key in [*await thread_keys(raw, prefix, "ann"), RedisKeys(prefix).user_threads("ann")]:
        assert await raw.pttl(key) == -1


async def test_a_retried_append_is_applied_once(redis_working_settings: WorkingSettings) -> None:
    # A client whose reply was lost sends the identical message again; the thread must not double it.
    async with RedisWorkingMemoryStore.open(redis_working_settings) as store:
        message = turn(1, tokens=7)
        first = await store.append("ann", "t1", message)
        again = await store.append("ann", "t1", message)
        assert (first.token_count, first.message_count) == (again.token_count, again.message_count) == (7, 1)
        assert await store.compact(
            "ann", "t1", expected_version=0, removed_ids=["m1"], summary="s", summary_token_count=2
        )
        # ...and a retried compact finds its own rewrite applied instead of reporting a conflict.
        assert await store.compact(
            "ann", "t1", expected_version=0, removed_ids=["m1"], summary="s", summary_token_count=2
        )
        memory = await store.get("ann", "t1")
        assert memory is not None and memory.summary_version == 1 and memory.messages == []


async def test_forget_everything_finds_threads_missing_from_the_index(
    redis_working_settings: WorkingSettings, raw: aioredis.Redis
) -> None:
    prefix = redis_working_settings.key_prefix
    async with RedisWorkingMemoryStore.open(redis_working_settings) as store:
        await store.append("ann", "t1", turn(1))
        await store.append("ann", "t:2", turn(2))
        await store.append("ann:x", "t1", turn(3))  # a user whose id starts like ann's
        await raw.delete(RedisKeys(prefix).user_threads("ann"))  # evicted, or a lost index write
        counts = await store.forget(Scope(user_id="ann", everything=True))
        assert (counts.threads, counts.messages) == (2, 2)
        assert await thread_keys(raw, prefix, "ann") == []
        assert await store.get("ann:x", "t1") is not None


@pytest.fixture
async def cluster_url(tmp_path: Path) -> AsyncIterator[str]:
    """A one-node Redis Cluster owning every slot: it refuses any command whose keys span two slots."""
    binary = find_redis_binary()
    if binary is None:
        pytest.fail("no Redis server binary; see tests/services/redis_server.py")
    server = RedisServer(binary, tmp_path / "cluster", cluster=True)
    server.start()
    try:
        client = aioredis.Redis.from_url(server.url, decode_responses=True)
        await client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)  # type: ignore[no-untyped-call]
        with anyio.fail_after(HANG_SECONDS):
            while (await client.cluster("INFO"))["cluster_state"] != "ok":  # noqa: ASYNC110 (polling)
                await anyio.sleep(0.05)  # until the node has taken its slots
        await client.aclose()
        yield server.url
    finally:
        server.stop()


async def test_the_store_works_on_redis_cluster(cluster_url: str) -> None:
    settings = redis_settings(cluster_url, cluster=True, ttl_seconds=600)
    async with RedisWorkingMemoryStore.open(settings) as store:
        for i in range(4):
            await store.append("ann", "t1", turn(i), context_window=4000)
        await store.append("ann", "t2", turn(9))
        await store.set_data("ann", "t1", {"k": 1})
        assert await store.compact(
            "ann", "t1", expected_version=0, removed_ids=["m0", "m1"], summary="s", summary_token_count=3
        )
        assert await store.try_lock("ann", "t1", "me", 10)
        await store.unlock("ann", "t1", "me")
        memory = await store.get("ann", "t1")
        assert memory is not None and [m.id for m in memory.messages] == ["m2", "m3"]
        assert {t.thread_id: t.token_count for t in await store.list_threads("ann")} == {"t1": 23, "t2": 10}
        assert (await store.forget(Scope(user_id="ann", memory_id="m9"))).messages == 1  # found by SCAN too
        counts = await store.forget(Scope(user_id="ann", everything=True))
        assert (counts.threads, counts.messages) == (2, 2)
        assert await store.list_threads("ann") == []
