"""Admission: requests to the streamable-HTTP endpoint take turns, fairly, and a read that would wait too
long is refused at once with `503 Service Unavailable` and `Retry-After` (RFC 9110 sections 15.6.4,
10.2.3) instead of waiting seconds.

Without it a team's requests all start at once and queue wherever they meet (the event loop, the
database lane, the embedder): the order is whatever the scheduler picks, so under load some requests
wait far longer than the rest (bench/load.py: a p99 of 3.7x the median). Here at most `slots` requests
are in progress (admission.concurrent_requests: the work in progress a 2-core machine can overlap), and
the others wait in one queue per user, served round-robin across the users with requests waiting and in
arrival order within each: a user sending many requests at once takes turns with the others, and
requests arriving one at a time are served in arrival order.

Under overload, reads (search_memory, get_working_memory, every read-only tool, resource reads, prompts)
are shed: one whose expected wait (the requests ahead of it times the recent time per request, over the
slots) passes admission.max_wait_seconds is answered 503 before it is queued, and one that has waited
that long is answered 503 then. Nothing was done for it; the client retries after `Retry-After`
seconds. Writes (every tool that is not annotated read-only) are never shed: they wait their turn,
since refusing them would make a client's agent lose what it meant to remember, and what a write
costs at once is small (its embedding happens after the reply, behind a bounded backlog:
service/vectors.py). The rest (initialize, ping, the lists a client asks for before calling, completions,
notifications, responses, the GET stream and DELETE) is cheap and goes straight through.

stdio has one client and needs none of this; the legacy SSE transport answers each POST with 202 before
the work is done, so the work cannot be held there: it is not admitted (README, "Under load").
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory.config import AdmissionSettings
from mcp_memory.mcp.middleware.request_body import messages_or_413, tool_called
from mcp_memory.mcp.middleware.scopes import ToolScopes
from mcp_memory.observability.metrics import Metrics
from mcp_memory.security.principals import READ

log = logging.getLogger(__name__)

SERVER_BUSY = -32030  # a JSON-RPC server error code of ours, beside rate limiting's -32029
# What takes a turn: the calls that do the work. The rest (initialize, ping, the lists a client asks for
# before a call, notifications, responses) is cheap and goes straight through: a client listing tools
# before a write must not have the write fail because the list was shed.
WORK = frozenset({"tools/call", "resources/read", "prompts/get"})
SERVICE_SECONDS_AT_START = 0.01  # the time per request assumed until requests have been measured
SMOOTHING = 0.1  # weight of each finished request in the running time per request


def default_slots() -> int:
    """Two requests in progress per core: one computing while the other waits on a thread (the database,
    the embedder). Measured at 32 users (bench/load.py, docs/benchmarks.md): 2, 4 and 8 served the same
    rates within the run-to-run spread, and the paced team waited longer the more ran at once."""
    return 2 * (os.cpu_count() or 1)


class Overloaded(Exception):
    """A read refused because it would wait, or has waited, longer than allowed."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"the server is busy; retry in {retry_after:.1f} s")
        self.retry_after = retry_after


@dataclass
class _Waiter:
    admitted: anyio.Event = field(default_factory=anyio.Event)


class FairQueue:
    """At most `slots` holders at once; the rest wait in a queue per key, served round-robin across keys."""

    def __init__(self, slots: int, max_wait: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = slots
        self.max_wait = max_wait
        self._clock = clock
        self.running = 0
        self.waiting = 0
        self._queues: dict[str, deque[_Waiter]] = {}
        self._turns: deque[str] = deque()  # keys with requests waiting, in the order they are served
        self.seconds_per_request = SERVICE_SECONDS_AT_START

    def expected_wait(self, ahead: int) -> float:
        """Seconds until a request with `ahead` requests before it starts, at the recent pace."""
        return (ahead + 1) * self.seconds_per_request / self.slots

    @asynccontextmanager
    async def turn(self, key: str, *, sheddable: bool) -> AsyncIterator[float]:
        """Hold a slot for the body of the `async with`; yields the seconds waited for it. Overloaded
        when `sheddable` and the wait is, or would be, longer than `max_wait`."""
        arrived = self._clock()
        if self.running < self.slots and not self.waiting:
            self.running += 1
        else:
            await self._wait(key, sheddable)
        started = self._clock()
        try:
            yield started - arrived
        finally:
            took = self._clock() - started
            self.seconds_per_request += SMOOTHING * (took - self.seconds_per_request)
            self.running -= 1
            self._admit_next()

    async def _wait(self, key: str, sheddable: bool) -> None:
        if sheddable and (expected := self.expected_wait(self.waiting)) > self.max_wait:
            raise Overloaded(expected)
        waiter = _Waiter()
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = deque()
            self._turns.append(key)
        queue.append(waiter)
        self.waiting += 1
        try:
            with anyio.move_on_after(self.max_wait if sheddable else math.inf):
                await waiter.admitted.wait()
        except BaseException:  # cancelled (the client went away): give back what it held
            if waiter.admitted.is_set():
                self.running -= 1
                self._admit_next()
            else:
                self._leave(key, waiter)
            raise
        if not waiter.admitted.is_set():  # waited max_wait: refused now, having done nothing
            self._leave(key, waiter)
            raise Overloaded(self.expected_wait(self.waiting))

    def _leave(self, key: str, waiter: _Waiter) -> None:
        queue = self._queues[key]
        queue.remove(waiter)
        self.waiting -= 1
        if not queue:
            del self._queues[key]
            self._turns.remove(key)

    def _admit_next(self) -> None:
        while self.running < self.slots and self._turns:
            key = self._turns.popleft()
            queue = self._queues[key]
            waiter = queue.popleft()
            if queue:
                self._turns.append(key)  # its next request waits for the other keys' turns
            else:
                del self._queues[key]
            self.waiting -= 1
            self.running += 1
            waiter.admitted.set()


class Admission:
    """ASGI middleware in front of the streamable-HTTP endpoint (inside the resource guard, so the
    verified user is known): every MCP request takes its turn in a FairQueue keyed by user."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        settings: AdmissionSettings,
        tools: ToolScopes,
        endpoint: str,
        max_body: int,
        metrics: Metrics | None = None,
        routes: Mapping[str, str] | None = None,
    ) -> None:
        self.app = app
        self.tools = tools
        self.endpoint = endpoint
        self.routes = dict(routes or {})  # other paths that take turns: each a read or a write
        self.max_body = max_body
        self.metrics = metrics
        self.queue = FairQueue(settings.concurrent_requests or default_slots(), settings.max_wait_seconds)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in self.routes:
            await self._route(scope, receive, send, self.routes[scope["path"]])
            return
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.endpoint:
            await self.app(scope, receive, send)
            return
        read = await messages_or_413(scope, receive, send, self.max_body)
        if read is None:
            return
        sent, receive = read
        kind = await self._kind(sent)
        if kind is None:
            await self.app(scope, receive, send)
            return
        try:
            await self._in_turn(scope, receive, send, kind)
        except Overloaded as e:
            await self._busy(e, sent, scope, receive, send)

    async def _in_turn(self, scope: Scope, receive: Receive, send: Send, kind: str) -> None:
        """The request served once its user's turn comes (Overloaded when it is shed instead)."""
        async with self.queue.turn(_user_of(scope), sheddable=kind == READ) as waited:
            if self.metrics is not None:
                self.metrics.admitted_after(waited)
            await self.app(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send, kind: str) -> None:
        """A route that is not MCP (the hooks' on a memory server) takes its turn as `kind`; shed, it is
        answered 503 with Retry-After and a plain JSON error."""
        try:
            await self._in_turn(scope, receive, send, kind)
        except Overloaded as e:
            retry_after = max(1, math.ceil(e.retry_after))
            if self.metrics is not None:
                self.metrics.refused("overload")
            busy = JSONResponse(
                {"error": f"the server is at capacity: nothing was done; retry in {retry_after} s"},
                status_code=503,
                headers={"Retry-After": str(retry_after)},
            )
            await busy(scope, receive, send)

    async def _kind(self, sent: list[dict[str, Any]]) -> str | None:
        """READ or WRITE for a request the server works on (the most any message needs); None for
        anything else, which goes straight through."""
        kind = None
        for message in sent:
            if message.get("method") not in WORK:
                continue
            name = tool_called(message)
            needs = READ if name is None else await self.tools.needed(name)
            kind = needs if kind is None or needs != READ else kind
        return kind

    async def _busy(
        self, overloaded: Overloaded, sent: list[dict[str, Any]], scope: Scope, receive: Receive, send: Send
    ) -> None:
        """503 with Retry-After; the body is the JSON-RPC error of each request, which MCP clients
        surface as the call's error (the SDK reads a JSON-RPC error from a non-2xx answer)."""
        retry_after = max(1, math.ceil(overloaded.retry_after))
        log.info(
            "shed a read: %s (%d waiting, %d running)", overloaded, self.queue.waiting, self.queue.running
        )
        if self.metrics is not None:
            self.metrics.refused("overload")
        message = f"the server is at capacity: nothing was done; retry in {retry_after} s"
        errors = [
            {
                "jsonrpc": "2.0",
                "id": m["id"],
                "error": {"code": SERVER_BUSY, "message": message, "data": {"retry_after": retry_after}},
            }
            for m in sent
            if "id" in m and "method" in m
        ]
        busy = JSONResponse(
            errors[0] if len(errors) == 1 else errors,
            status_code=503,
            headers={"Retry-After": str(retry_after)},
        )
        await busy(scope, receive, send)


def _user_of(scope: Scope) -> str:
    """Whose turn a request takes: the verified token's user, else (no authentication) the client's
    address: one person's loopback clients share one queue."""
    token = get_access_token()
    if token is not None and token.subject:
        return f"user:{token.subject}"
    client = scope.get("client")
    return f"address:{client[0] if client else ''}"
