"""Change notifications reach the other replicas through Redis pub/sub, with their user, once each:
on one Redis server and on a three-master Redis Cluster (sharded pub/sub)."""

from __future__ import annotations

import uuid
from collections import Counter

import anyio
import anyio.to_thread
import pytest
import redis
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent, ToolsListChanged
from mcp_types import SubscribeRequestParams
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from mcp_memory.config import Settings, WorkingSettings
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.mcp.subscriptions import ReplicaBus
from mcp_memory.models import UserEvent
from mcp_memory.storage.redis.client import connect
from mcp_memory.storage.redis.keys import RedisKeys
from mcp_memory.storage.redis.relay import RedisEventRelay, decode_event, encode_event
from tests.helpers import HANG_SECONDS
from tests.services.redis_cluster import RedisClusterProcesses, RedisDeployment
from tests.services.redis_server import RedisServer, redis_settings
from tests.unit.test_bus import LegacySession, as_principal

pytestmark = pytest.mark.anyio

ANN_T1 = UserEvent("ann", ResourceUpdated(uri="memory://threads/t1"))


async def wait_for(events: list[UserEvent], count: int) -> None:
    with anyio.fail_after(HANG_SECONDS):
        while len(events) < count:  # noqa: ASYNC110 (events arrive from another connection)
            await anyio.sleep(0.01)  # polling the listener's record


def test_events_and_their_user_survive_the_wire() -> None:
    for envelope in (
        ANN_T1,
        UserEvent("bob", ResourcesListChanged()),
        UserEvent(None, ToolsListChanged()),
        UserEvent("a:b c", ResourceUpdated(uri="memory://threads/x")),
    ):
        assert decode_event(encode_event(envelope, "me")) == ("me", envelope)
    assert decode_event('{"origin": "x", "method": "notifications/unknown"}') is None
    assert decode_event("not json") is None
    assert decode_event("[1, 2]") is None


async def test_an_event_reaches_the_other_replica_once_and_never_comes_back(
    redis_deployment: RedisDeployment,
) -> None:
    settings = redis_deployment.settings()
    async with RedisEventRelay.open(settings) as a, RedisEventRelay.open(settings) as b:
        on_a: list[UserEvent] = []
        on_b: list[UserEvent] = []
        a.subscribe(on_a.append)
        b.subscribe(on_b.append)
        await a.publish(ANN_T1)
        await a.publish(UserEvent("ann", ResourcesListChanged()))
        await wait_for(on_b, 2)
        assert on_b == [ANN_T1, UserEvent("ann", ResourcesListChanged())]
        # Pub/sub keeps order per subscriber: once b's event reaches a, a's own echoes have come back
        # too, and were dropped (a delivered its events locally when it published them).
        await b.publish(UserEvent(None, ToolsListChanged()))
        await wait_for(on_a, 1)
        assert on_a == [UserEvent(None, ToolsListChanged())]


async def test_another_deployment_prefix_hears_nothing(redis_deployment: RedisDeployment) -> None:
    ours, theirs = redis_deployment.settings(), redis_deployment.settings()
    async with (
        RedisEventRelay.open(ours) as a,
        RedisEventRelay.open(theirs) as other,
        RedisEventRelay.open(theirs) as other_peer,
    ):
        heard: list[UserEvent] = []
        other.subscribe(heard.append)
        await a.publish(UserEvent("ann", ResourceUpdated(uri="memory://threads/secret")))
        # Redis delivers to one subscriber in publish order, across channels: the marker comes after.
        # (On a cluster the two channels may live on different shards; the marker then proves less,
        # and the prefix's own channel is what keeps deployments apart.)
        await other_peer.publish(UserEvent(None, ToolsListChanged()))
        await wait_for(heard, 1)
        assert heard == [UserEvent(None, ToolsListChanged())]


async def test_unsubscribed_and_raising_listeners_do_not_affect_the_others(
    redis_deployment: RedisDeployment,
) -> None:
    settings = redis_deployment.settings()
    async with RedisEventRelay.open(settings) as a, RedisEventRelay.open(settings) as b:
        gone: list[UserEvent] = []
        kept: list[UserEvent] = []

        def broken(envelope: UserEvent) -> None:
            raise RuntimeError("listener bug")

        unsubscribe = b.subscribe(gone.append)
        b.subscribe(broken)
        b.subscribe(kept.append)
        unsubscribe()
        unsubscribe()  # idempotent
        await a.publish(UserEvent(None, ResourcesListChanged()))
        await wait_for(kept, 1)
        assert gone == []


async def test_two_replicas_tell_each_session_once_and_only_its_own_users_changes(
    redis_deployment: RedisDeployment, settings: Settings
) -> None:
    """The whole path: ReplicaBus on each replica, a Redis relay between them, listen streams and
    2025-protocol sessions of two users subscribed to the same thread URI on both replicas."""
    working = redis_deployment.settings()
    uri = "memory://threads/default"
    replicas = [ReplicaBus(settings), ReplicaBus(settings)]
    heard: dict[tuple[int, str, str], list[ServerEvent]] = {}
    async with RedisEventRelay.open(working) as relay_a, RedisEventRelay.open(working) as relay_b:
        for n, (bus, relay) in enumerate(zip(replicas, (relay_a, relay_b), strict=True)):
            bus.attach(relay)
            for user in ("ann", "bob"):
                with as_principal(user):
                    bus.subscribe(heard.setdefault((n, user, "listen"), []).append)
                    session = LegacySession(heard.setdefault((n, user, "legacy"), []))
                    await bus.legacy.subscribe(session.ctx, SubscribeRequestParams(uri=uri))

        await replicas[0].publish_for("ann", ResourceUpdated(uri=uri))
        await replicas[1].publish_for("ann", ResourceUpdated(uri=uri))
        await replicas[0].publish_for("ann", ResourcesListChanged())
        # Markers: bob's change through each replica; once both have reached every bob session on both
        # replicas, everything published before them has been delivered (one channel, in order).
        await replicas[0].publish_for("bob", ResourceUpdated(uri=uri))
        await replicas[1].publish_for("bob", ResourceUpdated(uri=uri))

        def markers_arrived() -> bool:
            return all(len(heard[(n, "bob", kind)]) >= 2 for n in (0, 1) for kind in ("listen", "legacy"))

        with anyio.fail_after(HANG_SECONDS):
            while not markers_arrived():  # noqa: ASYNC110 (events arrive from another connection)
                await anyio.sleep(0.01)  # polling the sessions' records

    for n in (0, 1):
        # A replica's own events come first, the other's when Redis brings them: compare as multisets.
        assert Counter(heard[(n, "ann", "listen")]) == {
            ResourceUpdated(uri=uri): 2,
            ResourcesListChanged(): 1,
        }
        assert heard[(n, "ann", "legacy")] == [ResourceUpdated(uri=uri)] * 2  # no list events on 2025
        assert heard[(n, "bob", "listen")] == [ResourceUpdated(uri=uri)] * 2
        assert heard[(n, "bob", "legacy")] == [ResourceUpdated(uri=uri)] * 2


async def test_a_cluster_client_subscribes_before_any_other_command(redis_cluster_url: str) -> None:
    """The relay is the first thing to talk to a cluster at start-up; its slot map must be loaded."""
    settings = redis_settings(redis_cluster_url, cluster=True, key_prefix=f"first-{uuid.uuid4().hex[:8]}")
    async with RedisEventRelay.open(settings) as a, RedisEventRelay.open(settings) as b:
        heard: list[UserEvent] = []
        b.subscribe(heard.append)
        await a.publish(ANN_T1)
        await wait_for(heard, 1)
        assert heard == [ANN_T1]


async def test_open_fails_clearly_when_redis_is_unreachable(private_redis: RedisServer) -> None:
    url = private_redis.url
    await anyio.to_thread.run_sync(private_redis.stop)
    with (
        anyio.fail_after(30),
        pytest.raises(BackendUnavailableError, match=r"\(Redis\) are unreachable at 127"),
    ):
        async with RedisEventRelay.open(redis_settings(url, timeout_seconds=1.0)):
            pass


async def test_the_relay_reconnects_after_redis_restarts(private_redis: RedisServer) -> None:
    settings: WorkingSettings = redis_settings(private_redis.url, timeout_seconds=1.0)
    async with RedisEventRelay.open(settings) as a, RedisEventRelay.open(settings) as b:
        on_b: list[UserEvent] = []
        b.subscribe(on_b.append)
        await anyio.to_thread.run_sync(private_redis.stop)
        await a.publish(UserEvent("ann", ResourcesListChanged()))  # Redis down: dropped, never raised
        await anyio.to_thread.run_sync(private_redis.start)
        await publish_until_heard(a, on_b, seconds=30)
        assert UserEvent("ann", ResourcesListChanged()) not in on_b


async def test_the_relay_reconnects_after_the_channels_cluster_node_restarts(
    private_redis_cluster: RedisClusterProcesses,
) -> None:
    settings = redis_settings(private_redis_cluster.url, cluster=True, timeout_seconds=1.0)
    channel = RedisKeys(settings.key_prefix).events_channel
    port = await shard_port(settings, channel)
    (owner,) = [node for node in private_redis_cluster.nodes if node.port == port]
    async with RedisEventRelay.open(settings) as a, RedisEventRelay.open(settings) as b:
        on_b: list[UserEvent] = []
        b.subscribe(on_b.append)
        await anyio.to_thread.run_sync(owner.stop)
        await a.publish(UserEvent("ann", ResourcesListChanged()))  # the shard is down: dropped, never raised
        await anyio.to_thread.run_sync(owner.start)  # same port and node identity, same slots
        await publish_until_heard(a, on_b, seconds=60)
        assert UserEvent("ann", ResourcesListChanged()) not in on_b


async def test_the_relay_follows_the_channel_when_its_slot_moves_to_another_master(
    private_redis_cluster: RedisClusterProcesses,
) -> None:
    settings = redis_settings(private_redis_cluster.url, cluster=True, timeout_seconds=1.0)
    channel = RedisKeys(settings.key_prefix).events_channel
    port = await shard_port(settings, channel)
    target = next(node for node in private_redis_cluster.nodes if node.port != port)
    async with RedisEventRelay.open(settings) as a, RedisEventRelay.open(settings) as b:
        on_b: list[UserEvent] = []
        b.subscribe(on_b.append)
        await a.publish(ANN_T1)
        await wait_for(on_b, 1)
        # Resharding an empty slot, as an operator's tool does: the old owner then ends the shard
        # subscriptions of that slot (SUNSUBSCRIBE), and the relay must subscribe on the new owner.
        await anyio.to_thread.run_sync(move_slot, private_redis_cluster, key_slot(channel.encode()), target)
        assert await shard_port(settings, channel) == target.port
        on_b.clear()
        await publish_until_heard(a, on_b, seconds=60)


def move_slot(cluster: RedisClusterProcesses, slot: int, target: RedisServer) -> None:
    """Give a slot without keys to `target`, telling every master (CLUSTER SETSLOT ... NODE)."""
    clients = {node.port: redis.Redis(port=node.port, decode_responses=True) for node in cluster.nodes}
    try:
        target_id = clients[target.port].execute_command("CLUSTER", "MYID")  # type: ignore[no-untyped-call]
        # The new owner first, then the others, as the Redis Cluster specification orders it.
        order = [target.port, *(port for port in clients if port != target.port)]
        for port in order:
            clients[port].execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)  # type: ignore[no-untyped-call]
    finally:
        for client in clients.values():
            client.close()


async def publish_until_heard(a: RedisEventRelay, on_b: list[UserEvent], *, seconds: float) -> None:
    """Publish ANN_T1 through `a` until the other relay heard it: it resubscribes by itself, with
    backoff, and what is published before it is back is lost (notifications are level-triggered)."""
    with anyio.fail_after(seconds):
        while ANN_T1 not in on_b:
            await a.publish(ANN_T1)
            await anyio.sleep(0.05)  # polling until the relay has resubscribed


async def shard_port(settings: WorkingSettings, channel: str) -> int:
    """The port of the master that owns the channel's hash slot."""
    client = connect(settings)
    assert isinstance(client, RedisCluster)
    try:
        await client.initialize()
        node = client.get_node_from_key(channel)
        assert node is not None
        return int(node.port)
    finally:
        await client.aclose()
