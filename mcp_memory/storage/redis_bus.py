"""Resource-change events across server replicas: the MCP SDK's SubscriptionBus over Redis pub/sub.

A client subscribed to a thread through replica A must hear about a turn written through replica B.
Each bus delivers its own events to its local listeners at once (they do not wait on Redis) and
publishes them on one channel per deployment prefix; a background reader delivers every other
replica's events to the local listeners. Delivery is fire-and-forget, like the SDK's own bus: a
publish that cannot reach Redis is logged and dropped (clients refetch when they re-listen), so a
notification never fails the write that caused it. The reader reconnects by itself, with backoff.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Self

import anyio
import redis.exceptions
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent, event_from_wire, event_to_notification
from redis.asyncio.client import PubSub
from redis.backoff import ExponentialBackoff

from ..config import WorkingSettings
from ..errors import BackendUnavailableError
from .redis_client import RedisClient, connect, location_of
from .redis_keys import RedisKeys

log = logging.getLogger(__name__)

_POLL_SECONDS = 1.0  # how long one read waits for a message before checking the connection's health
_RECONNECT_BACKOFF = ExponentialBackoff(cap=5.0, base=0.1)

Listener = Callable[[ServerEvent], None]


def encode_event(event: ServerEvent, origin: str) -> str:
    """The wire form: the notification method the SDK would send, plus the URI of a resource update."""
    body: dict[str, str] = {"origin": origin, "method": event_to_notification(event, {}).method}
    if isinstance(event, ResourceUpdated):
        body["uri"] = event.uri
    return json.dumps(body)


def decode_event(payload: str) -> tuple[str, ServerEvent] | None:
    """(origin, event), or None for a payload this version does not understand."""
    try:
        body = json.loads(payload)
        event = event_from_wire(body["method"], {"uri": body.get("uri")})
        return (str(body["origin"]), event) if event is not None else None
    except (ValueError, KeyError, TypeError):
        return None


class RedisSubscriptionBus:
    """`SubscriptionBus` fanning events out to every replica that shares the Redis and key prefix."""

    def __init__(self, client: RedisClient, settings: WorkingSettings) -> None:
        self._client = client
        self._channel = RedisKeys(settings.key_prefix).events_channel
        self._timeout = settings.timeout_seconds
        self._location = location_of(settings)
        self._origin = uuid.uuid4().hex  # our own events come back from Redis; this tells them apart
        self._listeners: dict[object, Listener] = {}

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings) -> AsyncIterator[Self]:
        """Subscribe (raising BackendUnavailableError when Redis is unreachable now), run the reader
        in the background while the context is open, then unsubscribe."""
        client = connect(settings)
        try:
            bus = cls(client, settings)
            try:
                pubsub = await bus._subscribe()
            except (redis.exceptions.RedisError, TimeoutError, OSError) as e:
                raise BackendUnavailableError(
                    f"resource notifications (Redis) are unreachable at {bus._location}"
                ) from e
            async with anyio.create_task_group() as tg:
                tg.start_soon(bus._read_forever, pubsub)
                try:
                    yield bus
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await client.aclose()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Register `listener` and return an idempotent unsubscribe callable."""
        token = object()  # the same callable may be registered twice
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        self._deliver(event)
        try:
            with anyio.fail_after(self._timeout):
                await self._client.publish(self._channel, encode_event(event, self._origin))
        except (redis.exceptions.RedisError, TimeoutError) as e:
            # Handled here: other replicas' clients miss one level-triggered event, the write stands.
            log.warning("could not publish %s to Redis at %s: %s", type(event).__name__, self._location, e)

    def _deliver(self, event: ServerEvent) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # fan-out boundary, as in the SDK's bus: one listener must not starve the rest
                log.exception("subscription listener raised; continuing")

    async def _subscribe(self) -> PubSub:
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            with anyio.fail_after(self._timeout):
                await pubsub.subscribe(self._channel)
        except BaseException:
            await self._close(pubsub)
            raise
        return pubsub

    async def _close(self, pubsub: PubSub) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._timeout):
            await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _read_forever(self, subscribed: PubSub) -> None:
        pubsub: PubSub | None = subscribed
        failures = 0
        try:
            while True:
                try:
                    if pubsub is None:
                        pubsub = await self._subscribe()
                        log.info("event bus reconnected to Redis at %s", self._location)
                    failures = 0
                    while True:
                        message = await pubsub.get_message(timeout=_POLL_SECONDS)
                        if message is not None and message.get("type") == "message":
                            self._receive(message["data"])
                except (redis.exceptions.RedisError, TimeoutError, OSError) as e:
                    failures += 1
                    if failures == 1:
                        log.warning("event bus lost Redis at %s (%s); reconnecting", self._location, e)
                    if pubsub is not None:
                        await self._close(pubsub)
                        pubsub = None
                    await anyio.sleep(_RECONNECT_BACKOFF.compute(failures))
        finally:
            if pubsub is not None:
                await self._close(pubsub)

    def _receive(self, payload: str) -> None:
        decoded = decode_event(payload)
        if decoded is None:
            log.warning("ignoring an event this version cannot read: %.200s", payload)
            return
        origin, event = decoded
        if origin != self._origin:  # ours were delivered locally when published
            self._deliver(event)
