"""Resource-change events reach listeners on every replica through Redis pub/sub."""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent, ToolsListChanged

from mcp_memory.errors import BackendUnavailableError
from mcp_memory.storage.redis_bus import RedisSubscriptionBus, decode_event, encode_event
from tests.services.redis_server import RedisServer, redis_settings

pytestmark = pytest.mark.anyio


async def wait_for(events: list[ServerEvent], count: int) -> None:
    with anyio.fail_after(15):
        while len(events) < count:  # noqa: ASYNC110 (events arrive from another connection)
            await anyio.sleep(0.01)


def test_events_survive_the_wire() -> None:
    for event in (ResourceUpdated(uri="memory://threads/t1"), ResourcesListChanged(), ToolsListChanged()):
        assert decode_event(encode_event(event, "me")) == ("me", event)
    assert decode_event('{"origin": "x", "method": "notifications/unknown"}') is None
    assert decode_event("not json") is None


async def test_an_event_published_on_one_replica_reaches_the_other(redis_url: str) -> None:
    settings = redis_settings(redis_url)
    async with RedisSubscriptionBus.open(settings) as a, RedisSubscriptionBus.open(settings) as b:
        on_a: list[ServerEvent] = []
        on_b: list[ServerEvent] = []
        a.subscribe(on_a.append)
        b.subscribe(on_b.append)
        await a.publish(ResourceUpdated(uri="memory://threads/t1"))
        await a.publish(ResourcesListChanged())
        await wait_for(on_b, 2)
        assert on_b == [ResourceUpdated(uri="memory://threads/t1"), ResourcesListChanged()]
        # Pub/sub keeps order per subscriber: once b's event reaches a, a's own echoes have come back too.
        await b.publish(ToolsListChanged())
        await wait_for(on_a, 3)
        assert on_a == [
            ResourceUpdated(uri="memory://threads/t1"),
            ResourcesListChanged(),
            ToolsListChanged(),
        ]


async def test_another_deployment_prefix_hears_nothing(redis_url: str) -> None:
    ours, theirs = redis_settings(redis_url), redis_settings(redis_url)
    async with (
        RedisSubscriptionBus.open(ours) as a,
        RedisSubscriptionBus.open(theirs) as other,
        RedisSubscriptionBus.open(theirs) as other_peer,
    ):
        heard: list[ServerEvent] = []
        other.subscribe(heard.append)
        await a.publish(ResourceUpdated(uri="memory://threads/secret"))
        # Redis delivers to one subscriber in publish order, across channels: the marker comes after.
        await other_peer.publish(ToolsListChanged())
        await wait_for(heard, 1)
        assert heard == [ToolsListChanged()]


async def test_unsubscribed_and_raising_listeners_do_not_affect_the_others(redis_url: str) -> None:
    settings = redis_settings(redis_url)
    async with RedisSubscriptionBus.open(settings) as a, RedisSubscriptionBus.open(settings) as b:
        gone: list[ServerEvent] = []
        kept: list[ServerEvent] = []

        def broken(event: ServerEvent) -> None:
            raise RuntimeError("listener bug")

        unsubscribe = b.subscribe(gone.append)
        b.subscribe(broken)
        b.subscribe(kept.append)
        unsubscribe()
        unsubscribe()  # idempotent
        await a.publish(ResourcesListChanged())
        await wait_for(kept, 1)
        assert gone == []


async def test_open_fails_clearly_when_redis_is_unreachable(private_redis: RedisServer) -> None:
    url = private_redis.url
    await anyio.to_thread.run_sync(private_redis.stop)
    with (
        anyio.fail_after(30),
        pytest.raises(BackendUnavailableError, match=r"\(Redis\) are unreachable at 127"),
    ):
        async with RedisSubscriptionBus.open(redis_settings(url, timeout_seconds=1.0)):
            pass


async def test_the_bus_reconnects_after_redis_restarts(private_redis: RedisServer) -> None:
    settings = redis_settings(private_redis.url, timeout_seconds=1.0)
    async with RedisSubscriptionBus.open(settings) as a, RedisSubscriptionBus.open(settings) as b:
        on_a: list[ServerEvent] = []
        on_b: list[ServerEvent] = []
        a.subscribe(on_a.append)
        b.subscribe(on_b.append)
        await anyio.to_thread.run_sync(private_redis.stop)
        await a.publish(ResourcesListChanged())  # Redis down: dropped for other replicas, never raised
        assert on_a == [ResourcesListChanged()]  # local listeners do not depend on Redis
        await anyio.to_thread.run_sync(private_redis.start)
        # b resubscribes with backoff; events published before it is back are lost (level-triggered).
        with anyio.fail_after(30):
            while ResourceUpdated(uri="memory://threads/t1") not in on_b:
                await a.publish(ResourceUpdated(uri="memory://threads/t1"))
                await anyio.sleep(0.05)
        assert ResourcesListChanged() not in on_b
