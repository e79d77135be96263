"""The hooks' routes on a memory server (`mcp-memory serve --transport http|sse`), for each teammate's
machine: POST /hooks/recall (what to inject, as the resident server answers it: mcp/hook_routes.py) and
POST /hooks/capture (a courier's batch of captured events: service/deliveries.py).

In front, as for /mcp: the resource guard (middleware/oauth.py) checks the bearer token and the scope
each path needs (HOOK_SCOPES: read to recall, write to capture) and answers 401/403 with the same
challenges; on streamable HTTP, admission (middleware/admission.py) takes a capture as a write (it waits
its turn) and a recall as a read (shed with 503 under overload: the hook injects nothing). Here: whose
request it is (the verified principal and its spaces, never the server's configured user), its rate (the
tools' per-principal limit: 429 with Retry-After), and whom the audit trail names. Without any way in
configured (a loopback address, or behind the operator's authenticating proxy) the principal is the
configured user, as for /mcp.

Where a project's sessions go, and what recall reads, follows the space its repository names
(service/capture.py `project_owner`): a writer's sessions into the space, a reader's and a
non-member's into their own memory; a member recalls from the space, anyone else only their own.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from mcp_memory.audit import Actor, acting
from mcp_memory.errors import BackendUnavailableError, InvalidInputError
from mcp_memory.mcp.hook_routes import recall_answer
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.mcp.middleware.rate_limit import RateLimit
from mcp_memory.security.principals import READ, WRITE, Principal, current_principal
from mcp_memory.security.spaces import Access
from mcp_memory.service.capture import HookCapture
from mcp_memory.service.deliveries import REASON_CHARS, events_of, store_batch
from mcp_memory.service.hook_recall import HookRecall

log = logging.getLogger(__name__)

RECALL, CAPTURE = "/hooks/recall", "/hooks/capture"
HOOK_SCOPES = {RECALL: READ, CAPTURE: WRITE}  # the scope each path needs (the guard checks it)
RETRY_SECONDS = 5  # a backend down: when a courier should send the batch again
LOCKS_KEPT = 1_000  # users' capture locks kept while unused


@dataclass
class TeamHooks:
    """The hooks' two routes over the server's one service, for whoever each request's token names."""

    host: ServiceHost
    limit: RateLimit
    _recall: HookRecall | None = None
    _capture: HookCapture | None = None
    _locks: dict[str, anyio.Lock] = field(default_factory=dict)

    @classmethod
    def of(cls, host: ServiceHost) -> TeamHooks:
        return cls(host, RateLimit(host.settings, shared=lambda: host.request_buckets))

    def routes(self) -> list[BaseRoute]:
        return [
            Route(CAPTURE, self._on_capture, methods=["POST"]),
            Route(RECALL, self._on_recall, methods=["POST"]),
        ]

    def recall(self) -> HookRecall:
        if self._recall is None:
            self._recall = HookRecall(self.host.service, self.host.settings.user_id)
        return self._recall

    def capture(self) -> HookCapture:
        if self._capture is None:
            on_thread = self.recall().thread_added
            self._capture = HookCapture(self.host.service, self.host.settings.user_id, on_thread=on_thread)
        return self._capture

    async def _on_recall(self, request: Request) -> JSONResponse:
        principal = current_principal(self.host.settings)
        limited = await self._limited(principal)
        if limited is not None:
            return limited
        access = await self._access(principal)
        actor = Actor(principal.user_id, client=principal.name, tool="hooks:recall")
        return await recall_answer(request, self.recall(), self.host.settings.hooks, access, actor)

    async def _on_capture(self, request: Request) -> JSONResponse:
        principal = current_principal(self.host.settings)
        limited = await self._limited(principal)
        if limited is not None:
            return limited
        try:
            events = events_of(await request.json())
        except (ValueError, InvalidInputError) as e:
            return JSONResponse({"error": str(e)[:REASON_CHARS]}, status_code=400)
        access = await self._access(principal)
        try:
            async with self._one_at_a_time(principal.user_id):
                with acting(Actor(principal.user_id, client=principal.name, tool="hooks:capture")):
                    results = await store_batch(self.capture(), events, access, principal.shown_as)
        except BackendUnavailableError as e:  # logged here; the courier sends the whole batch again
            log.warning("hooks: a delivery of %s waits: %s", principal.user_id, e)
            return JSONResponse(
                {"error": f"{e}"[:REASON_CHARS]},
                status_code=503,
                headers={"Retry-After": str(RETRY_SECONDS)},
            )
        return JSONResponse({"results": results})

    async def _access(self, principal: Principal) -> Access:
        """The principal's spaces now (a membership change applies to this request, and is recorded in
        the space's trail first, as for the tools)."""
        await self.host.service.notice_memberships()
        return Access.of(self.host.settings, principal.user_id, principal.groups)

    async def _limited(self, principal: Principal) -> JSONResponse | None:
        """429 with Retry-After when the principal has spent its requests (tokenless: never)."""
        if not principal.authenticated:
            return None
        wait = await self.limit.take(principal.user_id)
        if wait <= 0:
            return None
        seconds = max(1, math.ceil(wait))
        log.info("rate-limited %s (hooks)", principal.name)
        return JSONResponse(
            {"error": f"rate limit reached for this user; retry in {seconds} s"},
            status_code=429,
            headers={"Retry-After": str(seconds)},
        )

    @asynccontextmanager
    async def _one_at_a_time(self, user_id: str) -> AsyncIterator[None]:
        """A user's deliveries one after another: two at once could store a session's turns out of
        order (each moves its times after the thread's latest, read before the other wrote)."""
        if len(self._locks) > LOCKS_KEPT:
            self._locks = {u: lock for u, lock in self._locks.items() if lock.locked()}
        lock = self._locks.setdefault(user_id, anyio.Lock())
        async with lock:
            yield
