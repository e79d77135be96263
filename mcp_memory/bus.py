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

log = logging.getLogger(__name__)
Listener = Callable[[ServerEvent], None]


class ReplicaBus:
    def __init__(self) -> None:
        self._listeners: dict[object, Listener] = {}
        self._remote: SubscriptionBus | None = None
        self._detach: Callable[[], None] | None = None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None)  # type: ignore[func-returns-value]

    async def publish(self, event: ServerEvent) -> None:
        if self._remote is not None:
            await self._remote.publish(event)  # the remote bus delivers back to us (and to every replica)
        else:
            self._deliver(event)
            await anyio.lowlevel.checkpoint()

    def attach(self, remote: SubscriptionBus) -> None:
        self.detach()
        self._remote = remote
        self._detach = remote.subscribe(self._deliver)

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
        self._remote, self._detach = None, None

    def _deliver(self, event: ServerEvent) -> None:
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # fan-out boundary: one broken listen stream must not starve the others
                log.exception("subscription listener raised; continuing")
