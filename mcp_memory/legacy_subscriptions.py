"""resources/subscribe for clients on the 2025 protocol (most deployed clients speak it).

2026-07-28 clients listen through the SDK's `subscriptions/listen` on our ReplicaBus. Older clients
subscribe per URI instead; this keeps (session, uri) pairs and sends them notifications/resources/updated
for every ResourceUpdated the bus carries, local or from another replica. A session that can no longer
be reached is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
from mcp.server.subscriptions import ResourceUpdated, ServerEvent
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

log = logging.getLogger(__name__)


class LegacySubscriptions:
    def __init__(self) -> None:
        self._subscribers: dict[str, dict[int, Any]] = {}  # uri -> {id(session): session}
        self._pending: set[asyncio.Task[None]] = set()

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        self._subscribers.setdefault(str(params.uri), {})[id(ctx.session)] = ctx.session
        return EmptyResult()

    async def unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        self._subscribers.get(str(params.uri), {}).pop(id(ctx.session), None)
        return EmptyResult()

    async def forward(self, event: ServerEvent) -> None:
        """Notify the sessions subscribed to this event's URI (called where an event is published)."""
        if not isinstance(event, ResourceUpdated):
            return
        sessions = self._subscribers.get(event.uri, {})
        for key, session in list(sessions.items()):
            try:
                await session.send_resource_updated(event.uri)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, RuntimeError):
                # The client went away; forget its subscriptions rather than fail the write that changed it.
                sessions.pop(key, None)

    def forward_soon(self, event: ServerEvent) -> None:
        """For events arriving from another replica on a synchronous bus callback."""
        if not isinstance(event, ResourceUpdated) or event.uri not in self._subscribers:
            return
        # A bus listener cannot await; the send runs as its own task (kept referenced until done).
        task = asyncio.get_running_loop().create_task(self.forward(event))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
