"""Opens the service once per process and shares it between MCP sessions.

The SDK enters a server's lifespan once per connection on stdio and SSE (once per process on
streamable HTTP); the data file, the ONNX model and the backend clients must not be reopened per
connection, so the lifespan borrows the service from this host, which opens it on first use and
closes it when the last user leaves.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Protocol

import anyio

from mcp_memory.config import Settings
from mcp_memory.llm.sampling import SamplingSessions
from mcp_memory.mcp.middleware.rate_limit import SharedBuckets
from mcp_memory.mcp.subscriptions import ReplicaBus
from mcp_memory.observability.metrics import Metrics
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.parts import ChangeListener
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage import REDIS_WORKING, needs_extra

log = logging.getLogger(__name__)


class SessionStore(Protocol):
    """Where 2025-protocol MCP sessions live for every replica (storage/redis/sessions.py). The state is
    mcp/shared_sessions.py's JSON; every call re-arms the session's expiry."""

    async def save(self, session_id: str, state: str, ttl_ms: int) -> None: ...

    async def touch(self, session_id: str, ttl_ms: int) -> tuple[str | None, bool, frozenset[str]]:
        """(state, ended, subscribed URIs); (None, False, {}) for a session Redis does not know."""
        ...

    async def end(self, session_id: str, ttl_ms: int) -> None: ...

    async def subscribe(self, session_id: str, uri: str, ttl_ms: int) -> None: ...

    async def unsubscribe(self, session_id: str, uri: str) -> None: ...


class SessionMessageRelay(Protocol):
    """Carries one of a 2025 session's JSON-RPC messages to the other replicas (storage/redis/answers.py):
    a client's answer to the replica whose request it answers, or a server message to the replica that
    holds the session's stream."""

    async def publish(self, session_id: str, message: str) -> None: ...


# Hears the messages other replicas relayed: (session id, the JSON-RPC message); mcp/client_answers.py
# for answers, mcp/client_streams.py for messages to a client's stream.
SessionMessageListener = Callable[[str, str], Awaitable[None]]


class ServiceHost:
    """A reference-counted MemoryService: opened by the first user, closed after the last."""

    def __init__(
        self, settings: Settings, on_change: ChangeListener | None = None, bus: ReplicaBus | None = None
    ) -> None:
        self.settings = settings
        self.on_change = on_change
        self.bus = bus
        self.metrics = Metrics()  # this server's registry: what /metrics shows (mcp/routes.py)
        # Set by mcp/server.install_chain: the client sessions MCP sampling can reach.
        self.sampling: SamplingSessions | None = None
        self._lock = anyio.Lock()
        self._users = 0
        self._stack: AsyncExitStack | None = None
        self._service: MemoryService | None = None
        # Open with the service when Redis is configured: the replicas' shared request buckets.
        self.request_buckets: SharedBuckets | None = None
        # Open with the service when Redis is configured: 2025 sessions every replica can serve.
        self.session_store: SessionStore | None = None
        # Open with the session store: clients' answers to other replicas' requests, and who hears them.
        self.answer_relay: SessionMessageRelay | None = None
        self.answer_listener: SessionMessageListener | None = None
        # Open with the session store: server messages for a client's stream open on another replica.
        self.stream_relay: SessionMessageRelay | None = None
        self.stream_listener: SessionMessageListener | None = None

    @property
    def service(self) -> MemoryService:
        if self._service is None:
            raise RuntimeError("the memory service is not open")
        return self._service

    def embedding_queue(self) -> VectorWriter | None:
        """The open service's queue of turns waiting for vectors; None without one or when closed."""
        return self._service.vectors if self._service is not None else None

    @asynccontextmanager
    async def use(self) -> AsyncIterator[MemoryService]:
        async with self._lock:
            if self._service is None:
                stack = AsyncExitStack()
                try:
                    self._service = await stack.enter_async_context(
                        open_service(self.settings, self._notify, self.sampling, self.metrics)
                    )
                    await self._connect_bus(stack)
                    await self._open_request_buckets(stack)
                    await self._open_session_store(stack)
                except BaseException:
                    await stack.aclose()
                    raise
                self._stack = stack
            self._users += 1
        try:
            yield self._service
        finally:
            closing: AsyncExitStack | None = None
            with anyio.CancelScope(shield=True):
                async with self._lock:
                    self._users -= 1
                    if self._users == 0 and self._stack is not None:
                        closing, self._stack, self._service = self._stack, None, None
            # Closed outside the shield: the stack holds task groups (the Redis event bus, background
            # workers) whose cancel scopes must exit in the order they were entered, and a scope
            # entered after them (the shield) would still be the task's current one.
            if closing is not None:
                await closing.aclose()

    async def _connect_bus(self, stack: AsyncExitStack) -> None:
        """With Redis working memory, change notifications travel between replicas over Redis pub/sub."""
        if self.bus is None or self.settings.working.resolved_backend != "redis":
            return
        with needs_extra(REDIS_WORKING):
            from mcp_memory.storage.redis.relay import RedisEventRelay

        relay = await stack.enter_async_context(RedisEventRelay.open(self.settings.working))
        self.bus.attach(relay)
        stack.callback(self.bus.detach)

    async def _open_request_buckets(self, stack: AsyncExitStack) -> None:
        """With Redis configured, every replica spends a principal's requests from one bucket there."""
        if self.settings.working.redis_url is None:
            return
        with needs_extra(REDIS_WORKING):
            from mcp_memory.storage.redis.rate import RedisRequestBuckets

        security = self.settings.security
        self.request_buckets = await stack.enter_async_context(
            RedisRequestBuckets.open(
                self.settings.working, security.requests_per_second, security.request_burst
            )
        )
        stack.callback(setattr, self, "request_buckets", None)

    async def _open_session_store(self, stack: AsyncExitStack) -> None:
        """With Redis configured, 2025-protocol sessions are kept there (mcp/shared_sessions.py)."""
        if self.settings.working.redis_url is None:
            return
        with needs_extra(REDIS_WORKING):
            from mcp_memory.storage.redis.answers import RedisAnswerRelay, RedisStreamRelay
            from mcp_memory.storage.redis.sessions import RedisSessionStore

        self.session_store = await stack.enter_async_context(RedisSessionStore.open(self.settings.working))
        stack.callback(setattr, self, "session_store", None)
        self.answer_relay = await stack.enter_async_context(
            RedisAnswerRelay.open(self.settings.working, self._hear_answer)
        )
        stack.callback(setattr, self, "answer_relay", None)
        self.stream_relay = await stack.enter_async_context(
            RedisStreamRelay.open(self.settings.working, self._hear_stream_message)
        )
        stack.callback(setattr, self, "stream_relay", None)

    async def _hear_answer(self, session_id: str, message: str) -> None:
        if self.answer_listener is not None:
            await self.answer_listener(session_id, message)

    async def _hear_stream_message(self, session_id: str, message: str) -> None:
        if self.stream_listener is not None:
            await self.stream_listener(session_id, message)

    async def _notify(self, user_id: str, thread_id: str | None) -> None:
        if self.on_change is not None:
            await self.on_change(user_id, thread_id)
