"""Per-principal limits: request rate, stored bytes and LLM calls per hour.

The rate applies to authenticated (network) principals; quotas apply to every user, stdio's too.

One process keeps the counters in memory. Behind several replicas each enforces its own share (a
principal may reach N times the rate across N replicas). The stored-bytes figure is measured from
the long-term store when a user is first seen and again after forgetting or importing, and counted
up by each write in between.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from .auth import current_principal
from .config import SecuritySettings, Settings
from .errors import PermissionDeniedError

log = logging.getLogger(__name__)

RATE_LIMITED = -32029  # a JSON-RPC server error code of ours (the range -32000..-32099 is for servers)
HOUR = 3600.0
UNMETERED_METHODS = frozenset({"initialize", "ping"})


class LimitExceededError(PermissionDeniedError):
    """A per-user rate or quota is used up; the message says which and when it frees up."""


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


class RateLimit:
    """Server middleware: every request of a principal spends from its bucket before it is handled."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        security = settings.security
        self._limiter = RateLimiter(security.requests_per_second, security.request_burst, clock)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # Network principals only: the stdio (or loopback, tokenless) user owns the process and its data.
        if ctx.request_id is None or ctx.method in UNMETERED_METHODS or get_access_token() is None:
            return await call_next(ctx)
        principal = current_principal(self._settings)
        wait = self._limiter.take(principal.user_id)
        if wait <= 0:
            return await call_next(ctx)
        security = self._settings.security
        message = (
            f"rate limit reached: at most {security.requests_per_second:g} requests per second "
            f"(bursts of {security.request_burst}) for this user; retry in {math.ceil(wait * 10) / 10:g} s"
        )
        log.info("rate-limited %s (%s)", principal.name, ctx.method)
        if ctx.method == "tools/call":
            return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)
        raise MCPError(code=RATE_LIMITED, message=message)


@dataclass
class Quotas:
    """Stored bytes and LLM calls per hour, per user."""

    security: SecuritySettings
    clock: Callable[[], float] = time.monotonic
    _stored: dict[str, int] = field(default_factory=dict)
    _llm_calls: dict[str, deque[float]] = field(default_factory=dict)

    async def reserve_storage(self, user_id: str, adding: int, measure: Callable[[], Awaitable[int]]) -> None:
        """Count `adding` bytes against the user's quota, or refuse them; `measure` reads the real usage."""
        limit = self.security.max_stored_bytes
        if limit is None:
            return
        if user_id not in self._stored:
            self._stored[user_id] = await measure()
        used = self._stored[user_id]
        if used + adding > limit:
            raise LimitExceededError(
                f"storage quota reached: this user stores {used:,} of {limit:,} bytes and this write needs "
                f"{adding:,} more; forget old threads (forget thread_id=...) or export and forget everything"
            )
        self._stored[user_id] = used + adding

    def forget_usage(self, user_id: str) -> None:
        """After a deletion or import: measure again on the next write."""
        self._stored.pop(user_id, None)

    def charge_llm_call(self, user_id: str) -> None:
        """Count one LLM call (a summary, an extraction), or refuse it when the hour's quota is spent."""
        limit = self.security.llm_calls_per_hour
        if limit is None:
            return
        now = self.clock()
        calls = self._llm_calls.setdefault(user_id, deque())
        while calls and calls[0] <= now - HOUR:
            calls.popleft()
        if len(calls) >= limit:
            minutes = math.ceil((calls[0] + HOUR - now) / 60)
            raise LimitExceededError(
                f"LLM quota reached: {limit} summary/extraction calls per hour for this user; "
                f"the next one is allowed in about {minutes} min (turns are still recorded meanwhile)"
            )
        calls.append(now)

    def forget_user(self, user_id: str) -> None:
        """Complete forgetting includes the counters."""
        self._stored.pop(user_id, None)
        self._llm_calls.pop(user_id, None)
