"""Opens the service once per process and shares it between MCP sessions.

The SDK enters a server's lifespan once per connection on stdio and SSE (once per process on
streamable HTTP); the data file, the ONNX model and the backend clients must not be reopened per
connection, so the lifespan borrows the service from this host, which opens it on first use and
closes it when the last user leaves.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from threadpoolctl import threadpool_limits

from .auth import load_tokens
from .bus import ReplicaBus
from .config import Settings
from .learning import open_learning
from .limits import SharedBuckets
from .llm.chat import open_chat_model
from .llm.embedder import open_embedder
from .llm.sampling import SamplingSessions
from .service import ChangeListener, MemoryService
from .storage import open_stores
from .summarize import build_summarizer
from .tokens import TokenCounter
from .warmup import Warmup

log = logging.getLogger(__name__)


@asynccontextmanager
async def open_service(
    settings: Settings, on_change: ChangeListener | None = None, sampling: SamplingSessions | None = None
) -> AsyncIterator[MemoryService]:
    """Everything the service needs, opened in order and closed in reverse."""
    async with AsyncExitStack() as stack:
        # One BLAS thread: a search does one mat-vec; OpenBLAS waking its sleeping worker threads
        # between requests cost 5-7 ms a search (measured at 3k memories) against 0.6 ms on one thread.
        stack.enter_context(threadpool_limits(limits=1, user_api="blas"))
        tokens = await anyio.to_thread.run_sync(
            lambda: TokenCounter.load(settings.token_encoding, cache_dir=settings.data_dir / "tiktoken")
        )
        embedder = await stack.enter_async_context(open_embedder(settings.embedding))
        stores = await stack.enter_async_context(open_stores(settings, embedder.spec))
        warmup = None
        if settings.long_term.warm_on_start:
            users = [settings.user_id, *(t.user_id for t in load_tokens(settings.security))]
            warmup = await stack.enter_async_context(Warmup.running(stores.long_term, users))
        chat = await stack.enter_async_context(open_chat_model(settings.llm))
        summarizer = build_summarizer(chat, tokens.count, settings.prompts_dir)
        # Facts, revisions, the profile (issue 5); its background lane closes before the stores do.
        learning = await stack.enter_async_context(
            open_learning(settings, stores, embedder, tokens, chat, sampling)
        )
        log.info(
            "memory service ready for user %s: %s; embeddings: %s; summaries: %s",
            settings.user_id,
            stores.description,
            embedder.spec.model,
            summarizer.name,
        )
        yield MemoryService(
            settings=settings,
            stores=stores,
            embedder=embedder,
            tokens=tokens,
            summarizer=summarizer,
            on_change=on_change,
            learning=learning,
            warmup=warmup,
            llm_budget=learning.budget if learning is not None else None,
        )


class ServiceHost:
    """A reference-counted MemoryService: opened by the first user, closed after the last."""

    def __init__(
        self, settings: Settings, on_change: ChangeListener | None = None, bus: ReplicaBus | None = None
    ) -> None:
        self.settings = settings
        self.on_change = on_change
        self.bus = bus
        # Set by server_learning.register_learning: the client sessions MCP sampling can reach.
        self.sampling: SamplingSessions | None = None
        self._lock = anyio.Lock()
        self._users = 0
        self._stack: AsyncExitStack | None = None
        self._service: MemoryService | None = None
        # Open with the service when Redis is configured: the replicas' shared request buckets.
        self.request_buckets: SharedBuckets | None = None

    @property
    def service(self) -> MemoryService:
        if self._service is None:
            raise RuntimeError("the memory service is not open")
        return self._service

    @asynccontextmanager
    async def use(self) -> AsyncIterator[MemoryService]:
        async with self._lock:
            if self._service is None:
                stack = AsyncExitStack()
                try:
                    self._service = await stack.enter_async_context(
                        open_service(self.settings, self._notify, self.sampling)
                    )
                    await self._connect_bus(stack)
                    await self._open_request_buckets(stack)
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
        from .storage.redis_bus import RedisEventRelay

        relay = await stack.enter_async_context(RedisEventRelay.open(self.settings.working))
        self.bus.attach(relay)
        stack.callback(self.bus.detach)

    async def _open_request_buckets(self, stack: AsyncExitStack) -> None:
        """With Redis configured, every replica spends a principal's requests from one bucket there."""
        if self.settings.working.redis_url is None:
            return
        from .storage.redis_rate import RedisRequestBuckets

        security = self.settings.security
        self.request_buckets = await stack.enter_async_context(
            RedisRequestBuckets.open(
                self.settings.working, security.requests_per_second, security.request_burst
            )
        )
        stack.callback(setattr, self, "request_buckets", None)

    async def _notify(self, user_id: str, thread_id: str | None) -> None:
        if self.on_change is not None:
            await self.on_change(user_id, thread_id)
