"""The subscription bus the MCP server is built with, before any backend is connected.

The server needs its bus at construction, but a Redis connection opens later, in the host. This bus
delivers to local listeners by itself and, once the host attaches a replica-wide bus (Redis pub/sub),
publishes through it instead, so subscribers on every replica hear about every change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio.lowlevel
from mcp.server.subscriptions import ServerEvent, SubscriptionBus

from .legacy_subscriptions import LegacySubscriptions

log = logging.getLogger(__name__)
Listener = Callable[[ServerEvent], None]


class ReplicaBus:
    def __init__(self) -> None:
        self._listeners: dict[object, Listener] = {}
        self._remote: SubscriptionBus | None = None
        self._detach: Callable[[], None] | None = None
        self.legacy = LegacySubscriptions()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        if self._remote is not None:
            await self._remote.publish(event)  # the remote bus delivers back to us (and to every replica)
        else:
            self._deliver(event)
        await self.legacy.forward(event)
        await anyio.lowlevel.checkpoint()

    def attach(self, remote: SubscriptionBus) -> None:
        self.detach()
        self._remote = remote
        detach_local = remote.subscribe(self._deliver)
        detach_legacy = remote.subscribe(self._from_other_replica)

        def detach() -> None:
            detach_local()
            detach_legacy()

        self._detach = detach

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
        self._remote, self._detach = None, None

    def _from_other_replica(self, event: ServerEvent) -> None:
        # Our own events reach legacy sessions in publish(); the remote bus echoes them back too, and a
        # repeated "updated" notification only makes a client refetch once more.
        self.legacy.forward_soon(event)

    def _deliver(self, event: ServerEvent) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # fan-out boundary: one broken listen stream must not starve the others
                log.exception("subscription listener raised; continuing")
