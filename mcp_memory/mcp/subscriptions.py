"""The subscription bus the MCP server is built with, before any backend is connected.

The server needs its bus at construction, but a Redis connection opens later, in the host. Every
change goes through `publish_for` with the user it belongs to and takes one path: one fan-out to this
replica's sessions (listen streams and 2025-protocol subscriptions alike, each once), then, when the
host has attached a Redis relay, to the other replicas, whose relays deliver it to their own fan-out.
The relay drops the echo of our own events, so no session hears a change twice.

Each listen stream belongs to the principal that opened it: the SDK's ListenHandler calls
`subscribe` inside the `subscriptions/listen` request, where the request's token is known, and the
stream then hears only that user's events, and those of the shared spaces the principal is a member
of when the event is delivered (membership is read from settings then, so a member removed hears
nothing more; security/spaces.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import anyio.lowlevel
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent

from mcp_memory.config import Settings
from mcp_memory.mcp.legacy_subscriptions import LegacySubscriptions
from mcp_memory.models import UserEvent, space_of
from mcp_memory.security.principals import Principal, current_principal
from mcp_memory.security.spaces import roles_of

log = logging.getLogger(__name__)
Listener = Callable[[ServerEvent], None]


class Relay(Protocol):
    """Carries events to the other replicas (storage/redis/relay.py) and hands theirs to `listener`."""

    async def publish(self, envelope: UserEvent) -> None: ...

    def subscribe(self, listener: Callable[[UserEvent], None]) -> Callable[[], None]: ...


class ReplicaBus:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._listeners: dict[object, tuple[Principal, Listener]] = {}
        self._relay: Relay | None = None
        self._detach: Callable[[], None] | None = None
        self.legacy = LegacySubscriptions(self._principal, self.hears)

    def _principal(self) -> Principal:
        return current_principal(self._settings)

    def hears(self, principal: Principal, envelope: UserEvent) -> bool:
        """Whether a session of this principal may hear the event: its own memory's, one of a space it
        is a member of now, or one about no memory in particular."""
        if envelope.concerns(principal.user_id):
            return True
        space = space_of(envelope.user_id or "")
        return space is not None and space in roles_of(self._settings, principal.user_id, principal.groups)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """The SDK's listen streams register here; each hears its own principal's events only."""
        token = object()
        self._listeners[token] = (self._principal(), listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def publish(self, event: ServerEvent) -> None:
        """Events the SDK publishes itself. Resources here are always some user's, so a resource event
        belongs to the principal of the request that raised it; a tool or prompt list change is everyone's."""
        resource_event = isinstance(event, ResourceUpdated | ResourcesListChanged)
        await self.publish_for(self._principal().user_id if resource_event else None, event)

    async def publish_for(self, user_id: str | None, event: ServerEvent) -> None:
        envelope = UserEvent(user_id, event)
        self._deliver(envelope)
        await self.legacy.forward(envelope)
        if self._relay is not None:
            await self._relay.publish(envelope)  # fire-and-forget: a relay failure is logged there
        await anyio.lowlevel.checkpoint()

    def attach(self, relay: Relay) -> None:
        self.detach()
        self._relay = relay
        self._detach = relay.subscribe(self._from_other_replica)

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
        self._relay, self._detach = None, None

    def _from_other_replica(self, envelope: UserEvent) -> None:
        self._deliver(envelope)
        self.legacy.forward_soon(envelope)  # a relay listener cannot await; the sends run as a task

    def _deliver(self, envelope: UserEvent) -> None:
        for principal, listener in list(self._listeners.values()):
            if not self.hears(principal, envelope):
                continue
            try:
                listener(envelope.event)
            except Exception:  # fan-out boundary: one broken listen stream must not starve the others
                log.exception("subscription listener raised; continuing")
