"""Per-principal limits: request rate and stored bytes (LLM calls per hour: learning/budget.py).

The rate applies to authenticated (network) principals; quotas apply to every user, stdio's too.

The rate: with Redis configured (working.redis_url) every replica spends a principal's requests from
one bucket there (storage/redis/rate.py); otherwise each process keeps its own. When Redis cannot
answer, the limit falls back to this process's buckets for a while, with a warning: a memory server
must not stop serving because its rate-limit store blinked. Stored bytes are counted by the long-term
store itself, next to the data, and refused inside its write (storage/usage.py).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_memory.config import Settings
from mcp_memory.errors import BackendUnavailableError, LimitExceededError
from mcp_memory.mcp.middleware.results import error_result
from mcp_memory.observability.metrics import RATE_LIMITED as LIMITED_OUTCOME
from mcp_memory.observability.metrics import note_outcome
from mcp_memory.security.principals import current_principal

log = logging.getLogger(__name__)

RATE_LIMITED = -32029  # a JSON-RPC server error code of ours (the range -32000..-32099 is for servers)
UNMETERED_METHODS = frozenset({"initialize", "ping"})
# After the shared bucket store failed, how long each process limits on its own before trying it again
# (so an outage costs one timeout per interval, not one per request).
SHARED_RETRY_SECONDS = 10.0


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """A token bucket per key: `burst` requests at once, refilled at `per_second`."""

    def __init__(self, per_second: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second = per_second
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, key: str) -> float:
        """Spend one request; 0.0 when allowed, else the seconds until one is available."""
        now = self._clock()
        bucket = self._buckets.setdefault(key, _Bucket(tokens=float(self.burst), at=now))
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.per_second)
        bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self.per_second


class SharedBuckets(Protocol):
    """Request buckets every replica spends from (storage/redis/rate.py)."""

    async def take(self, user_id: str) -> float:
        """0.0 when allowed, else the seconds until a request is; BackendUnavailableError when down."""
        ...


class RateLimit:
    """Server middleware: every request of a principal spends from its bucket before it is handled.

    `shared` returns the replicas' shared buckets while the service is open (None: this process's own).
    """

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        shared: Callable[[], SharedBuckets | None] = lambda: None,
    ) -> None:
        self._settings = settings
        security = settings.security
        self._limiter = RateLimiter(security.requests_per_second, security.request_burst, clock)
        self._shared = shared
        self._clock = clock
        self._shared_down_until: float | None = None

    async def take(self, user_id: str) -> float:
        """Spend one of the user's requests: 0.0 when allowed, else the seconds until one is (the hooks'
        routes on a memory server spend from the same buckets: mcp/team_hooks.py)."""
        buckets = self._shared()
        now = self._clock()
        if buckets is None or (self._shared_down_until is not None and now < self._shared_down_until):
            return self._limiter.take(user_id)
        try:
            wait = await buckets.take(user_id)
        except BackendUnavailableError as e:
            log.warning(
                "rate limit: %s; each process limits requests on its own for %gs", e, SHARED_RETRY_SECONDS
            )
            self._shared_down_until = now + SHARED_RETRY_SECONDS
            return self._limiter.take(user_id)
        if self._shared_down_until is not None:
            log.info("rate limit: shared request buckets are back")
            self._shared_down_until = None
        return wait

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # Network principals only: the stdio (or loopback, tokenless) user owns the process and its data.
        if ctx.request_id is None or ctx.method in UNMETERED_METHODS or get_access_token() is None:
            return await call_next(ctx)
        principal = current_principal(self._settings)
        wait = await self.take(principal.user_id)
        if wait <= 0:
            return await call_next(ctx)
        security = self._settings.security
        message = (
            f"rate limit reached: at most {security.requests_per_second:g} requests per second "
            f"(bursts of {security.request_burst}) for this user; retry in {math.ceil(wait * 10) / 10:g} s"
        )
        log.info("rate-limited %s (%s)", principal.name, ctx.method)
        note_outcome(LIMITED_OUTCOME, LimitExceededError(message))  # a 2025 client's log warns of it too
        if ctx.method == "tools/call":
            return error_result(message)
        raise MCPError(code=RATE_LIMITED, message=message)
