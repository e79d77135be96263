"""Change notifications across server replicas: a relay over Redis pub/sub.

A client subscribed to a thread through replica A must hear about a turn written through replica B.
Each replica delivers its own events to its own sessions (mcp_memory/mcp/subscriptions.py) and publishes them here,
with the user they belong to, on one channel per deployment prefix; a background reader hands every
other replica's events to the local listeners and drops the echo of our own, so a session hears each
change once. Delivery is fire-and-forget, like the SDK's own bus: a publish that cannot reach Redis
is logged and dropped (clients refetch when they re-listen), so a notification never fails the write
that caused it. The reader reconnects by itself, with backoff.

On a Redis Cluster the channel is a shard channel (SPUBLISH/SSUBSCRIBE): a plain PUBLISH is copied to
every node over the cluster bus, while a shard channel's messages stay on the shard that owns its slot.
"""

from __future__ import annotations

import json
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Self

import anyio
import redis.exceptions
from mcp.shared.subscriptions import ResourceUpdated, event_from_wire, event_to_notification
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import ClusterPubSub, RedisCluster
from redis.backoff import ExponentialBackoff

from mcp_memory.config import WorkingSettings
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.models import UserEvent
from mcp_memory.storage.redis.client import RedisClient, connect, location_of
from mcp_memory.storage.redis.keys import RedisKeys

log = logging.getLogger(__name__)

_POLL_SECONDS = 1.0  # how long one read waits for a message before checking the connection's health
_RECONNECT_BACKOFF = ExponentialBackoff(cap=5.0, base=0.1)
_DATA = frozenset({"message", "smessage"})
_LOST = frozenset({"unsubscribe", "sunsubscribe"})  # the server dropped us (a shard's slot moved)

Listener = Callable[[UserEvent], None]


class SubscriptionLostError(redis.exceptions.ConnectionError):
    """The server ended our subscription; the reader subscribes again."""


def encode_event(envelope: UserEvent, origin: str) -> str:
    """The wire form: the notification method the SDK would send, the URI of a resource update, and
    the user the event belongs to (absent for an event that is everyone's)."""
    event = envelope.event
    body: dict[str, str] = {"origin": origin, "method": event_to_notification(event, {}).method}
    if isinstance(event, ResourceUpdated):
        body["uri"] = event.uri
    if envelope.user_id is not None:
        body["user"] = envelope.user_id
    return json.dumps(body)


def decode_event(payload: str) -> tuple[str, UserEvent] | None:
    """(origin, event), or None for a payload this version does not understand."""
    try:
        body = json.loads(payload)
        event = event_from_wire(body["method"], {"uri": body.get("uri")})
        if event is None:
            return None
        user = body.get("user")
        return str(body["origin"]), UserEvent(None if user is None else str(user), event)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class ChannelRelay(ABC):
    """One Redis pub/sub channel between replicas: publish, and a background reader that reconnects by
    itself, with backoff. Subclasses say what a payload means (`_receive`)."""

    WHAT = "the replica relay"  # named in errors and logs

    def __init__(self, client: RedisClient, settings: WorkingSettings, channel: str) -> None:
        self._client = client
        self._channel = channel
        self._timeout = settings.timeout_seconds
        self._location = location_of(settings)
        self._origin = uuid.uuid4().hex  # our own messages come back from Redis; this tells them apart

    @asynccontextmanager
    async def _reading(self, *, required: bool) -> AsyncIterator[None]:
        """Subscribe, run the reader in the background while the context is open, then unsubscribe.
        Redis unreachable now: BackendUnavailableError when `required`, else the reader keeps trying."""
        pubsub: PubSub | None = None
        try:
            pubsub = await self._subscribe()
        except (redis.exceptions.RedisError, TimeoutError, OSError) as e:
            if required:
                raise BackendUnavailableError(
                    f"{self.WHAT} (Redis) are unreachable at {self._location}", backend="redis"
                ) from e
            log.warning(
                "%s: Redis at %s is unreachable (%s); subscribing in the background",
                self.WHAT,
                self._location,
                e,
            )
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read_forever, pubsub)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _publish(self, payload: str) -> int:
        """How many subscribers Redis handed the payload to (raises Redis errors and TimeoutError)."""
        with anyio.fail_after(self._timeout):
            if isinstance(self._client, RedisCluster):
                return int(await self._client.spublish(self._channel, payload))
            return int(await self._client.publish(self._channel, payload))

    async def _subscribe(self, *, again: bool = False) -> PubSub:
        client = self._client
        pubsub: PubSub | None = None
        try:
            with anyio.fail_after(self._timeout):
                if isinstance(client, RedisCluster):
                    # The cluster client loads its slot map lazily, on its first command, and pub/sub
                    # never refreshes it; subscribing routes by that map. So load it first, and load it
                    # anew on every resubscription: a shard subscription usually ends because its slot
                    # moved to another master (resharding, a failover).
                    await client.initialize()
                    if again:
                        await client.nodes_manager.initialize()
                    pubsub = client.pubsub()
                    await pubsub.ssubscribe(self._channel)
                else:
                    pubsub = client.pubsub()
                    await pubsub.subscribe(self._channel)
        except BaseException:
            if pubsub is not None:
                await self._close(pubsub)
            raise
        return pubsub

    async def _close(self, pubsub: PubSub) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._timeout):
            await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _next_message(self, pubsub: PubSub) -> dict[str, Any] | None:
        if isinstance(pubsub, ClusterPubSub):
            return await pubsub.get_sharded_message(timeout=_POLL_SECONDS)
        message: dict[str, Any] | None = await pubsub.get_message(timeout=_POLL_SECONDS)
        return message

    async def _read_forever(self, subscribed: PubSub | None) -> None:
        pubsub: PubSub | None = subscribed
        failures = 0
        try:
            while True:
                try:
                    if pubsub is None:
                        pubsub = await self._subscribe(again=True)
                        log.info("%s: reconnected to Redis at %s", self.WHAT, self._location)
                    failures = 0
                    while True:
                        message = await self._next_message(pubsub)
                        kind = None if message is None else message.get("type")
                        if message is not None and kind in _DATA:
                            await self._receive(message["data"])
                        elif kind in _LOST:
                            raise SubscriptionLostError(f"Redis ended our subscription ({kind})")
                except (redis.exceptions.RedisError, TimeoutError, OSError) as e:
                    failures += 1
                    if failures == 1:
                        log.warning("%s: lost Redis at %s (%s); reconnecting", self.WHAT, self._location, e)
                    if pubsub is not None:
                        await self._close(pubsub)
                        pubsub = None
                    await anyio.sleep(_RECONNECT_BACKOFF.compute(failures))
        finally:
            if pubsub is not None:
                await self._close(pubsub)

    @abstractmethod
    async def _receive(self, payload: str) -> None:
        """One message another replica published."""


class RedisEventRelay(ChannelRelay):
    """Fans events out to every other replica that shares the Redis and key prefix."""

    WHAT = "resource notifications"

    def __init__(self, client: RedisClient, settings: WorkingSettings) -> None:
        super().__init__(client, settings, RedisKeys(settings.key_prefix).events_channel)
        self._listeners: dict[object, Listener] = {}

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings) -> AsyncIterator[Self]:
        """Subscribe (raising BackendUnavailableError when Redis is unreachable now), run the reader
        in the background while the context is open, then unsubscribe."""
        client = connect(settings)
        try:
            relay = cls(client, settings)
            async with relay._reading(required=True):
                yield relay
        finally:
            await client.aclose()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Register `listener` for other replicas' events; returns an idempotent unsubscribe callable."""
        token = object()  # the same callable may be registered twice
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, envelope: UserEvent) -> None:
        """Send one of this replica's events to the others (it was delivered here already)."""
        try:
            await self._publish(encode_event(envelope, self._origin))
        except (redis.exceptions.RedisError, TimeoutError) as e:
            # Handled here: other replicas' clients miss one level-triggered event, the write stands.
            kind = type(envelope.event).__name__
            log.warning("could not publish %s to Redis at %s: %s", kind, self._location, e)

    def _deliver(self, envelope: UserEvent) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(envelope)
            except Exception:  # fan-out boundary, as in the SDK's bus: one listener must not starve the rest
                log.exception("relay listener raised; continuing")

    async def _receive(self, payload: str) -> None:
        decoded = decode_event(payload)
        if decoded is None:
            log.warning("ignoring an event this version cannot read: %.200s", payload)
            return
        origin, envelope = decoded
        if origin != self._origin:  # ours were delivered locally when published
            self._deliver(envelope)
