"""resources/subscribe for clients on the 2025 protocol (most deployed clients speak it).

2026-07-28 clients listen through the SDK's `subscriptions/listen` on our ReplicaBus. Older clients
subscribe per URI instead; this keeps, per (user, uri), the sessions subscribed to it, and sends them
notifications/resources/updated for every ResourceUpdated of that user the bus carries, local or from
another replica. URIs name a thread, not its owner (`memory://threads/default` is every user's
default thread), so the principal is part of the key: a session only hears about its own principal's
memory, and about the shared spaces (`memory://spaces/{space}/threads/...`) the principal is a member of
when the change happens. A session that can no longer be reached is dropped.

Behind a load balancer a session's requests reach several replicas: `persist` (set by
mcp/shared_sessions.py when Redis keeps the sessions) records each subscribe and unsubscribe with the
session, and a replica serving the session restores them on its own connection (`restore`): at each of
the session's requests it serves, and before each event while it holds the session's listening stream
(`refresh`), so a subscription made through another replica is heard on the stream wherever it is open.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.subscriptions import ResourceUpdated
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from mcp_memory.mcp.connections import connection_of
from mcp_memory.models import UserEvent
from mcp_memory.security.principals import Principal

log = logging.getLogger(__name__)

Subscription = tuple[Principal, str]  # (who subscribed, uri)
Persist = Callable[[str, str, bool], Awaitable[None]]  # (session id, uri, subscribed)


class LegacySubscriptions:
    def __init__(
        self, principal: Callable[[], Principal], hears: Callable[[Principal, UserEvent], bool]
    ) -> None:
        self._principal = principal  # the principal of the request being served
        self._hears = hears  # whether that principal may hear an event (its own, or its spaces')
        self._subscribers: dict[Subscription, dict[int, Any]] = {}  # -> {id(connection): session}
        self._pending: set[asyncio.Task[None]] = set()
        self.persist: Persist | None = None
        self.refresh: Callable[[UserEvent], Awaitable[None]] | None = None  # restore before each event

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        key = (self._principal(), str(params.uri))
        # Keyed by the connection: ctx.session is a proxy made for this one request, so an unsubscribe
        # (another request) would not find it. The proxy kept sends on the connection's own channel.
        connection = connection_of(ctx.session)
        self._subscribers.setdefault(key, {})[id(connection)] = ctx.session
        if self.persist is not None and connection.session_id is not None:
            await self.persist(connection.session_id, key[1], True)
        return EmptyResult()

    def restore(self, principal: Principal, connection: Any, uris: frozenset[str]) -> None:
        """The session's subscriptions as recorded, made through any replica, on this one's connection."""
        for key in [key for key in self._subscribers if key[0] == principal and key[1] not in uris]:
            sessions = self._subscribers[key]
            sessions.pop(id(connection), None)
            if not sessions:
                del self._subscribers[key]
        for uri in uris:
            self._subscribers.setdefault((principal, uri), {}).setdefault(id(connection), connection)

    async def unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        key = (self._principal(), str(params.uri))
        connection = connection_of(ctx.session)
        sessions = self._subscribers.get(key, {})
        sessions.pop(id(connection), None)
        if not sessions:
            self._subscribers.pop(key, None)
        if self.persist is not None and connection.session_id is not None:
            await self.persist(connection.session_id, key[1], False)
        return EmptyResult()

    async def forward(self, envelope: UserEvent) -> None:
        """Notify the sessions of the event's user subscribed to its URI."""
        if self.refresh is not None:
            await self.refresh(envelope)
        for key in self._keys_for(envelope):
            sessions = self._subscribers.get(key, {})
            for session_id, session in list(sessions.items()):
                try:
                    await session.send_resource_updated(key[1])
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, RuntimeError):
                    # The client went away; forget its subscriptions rather than fail the write that changed it.
                    sessions.pop(session_id, None)

    def forward_soon(self, envelope: UserEvent) -> None:
        """For events arriving from another replica on a synchronous relay callback."""
        if self.refresh is None and not self._keys_for(envelope):
            return
        # The send runs as its own task (kept referenced until done).
        task = asyncio.get_running_loop().create_task(self.forward(envelope))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _keys_for(self, envelope: UserEvent) -> list[Subscription]:
        event = envelope.event
        if not isinstance(event, ResourceUpdated):
            return []
        return [key for key in self._subscribers if key[1] == event.uri and self._hears(key[0], envelope)]
