"""The per-user LLM budget: every model call the server makes for a user, in one hourly count.

Summaries, fact extraction, reconciliation and profile updates all draw from
`security.llm_calls_per_hour`; background work (everything but summaries) also from its own share,
`learning.max_llm_calls_per_hour`, so background learning can never spend the calls an explicit
summarize_thread needs. The counts live in the trigger-counter store, so replicas sharing the data
share the budget, and each call is one atomic increment: among concurrent callers exactly `limit`
get through. A refused call gives its increment back, so "used" never reads above the limit for long.

Windows are clock hours (UTC): a budget used up at 10:40 frees up at 11:00, on every replica alike.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from mcp_memory.config import Settings
from mcp_memory.errors import LimitExceededError
from mcp_memory.observability.metrics import LLM_CALLS, Metrics
from mcp_memory.views import BudgetView

HOUR = 3600.0
ALL_KEY = "llm_calls"
BACKGROUND_KEY = "llm_background_calls"


class Counts(Protocol):
    """What the budget needs of a counter store: TriggerCounters' atomic increment."""

    async def increment(
        self, user_id: str, key: str, *, by: int = 1, ttl_seconds: float | None = None
    ) -> int: ...


class BudgetUsedUp(LimitExceededError):
    """The hour's model calls are spent; `resets_at` (epoch seconds) is when the next window opens."""

    limit = LLM_CALLS

    def __init__(self, message: str, resets_at: float) -> None:
        super().__init__(message)
        self.resets_at = resets_at


@dataclass
class LlmBudget:
    counters: Counts  # the learning TriggerCounters, shared by replicas
    limit: int | None  # every call; None = unlimited
    background_limit: int  # the background share within it
    clock: Callable[[], float] = time.time  # epoch seconds; tests move it instead of waiting an hour
    metrics: Metrics | None = None  # counts every refusal, foreground and background, here

    @classmethod
    def of(cls, settings: Settings, counters: Counts, metrics: Metrics | None = None) -> LlmBudget:
        return cls(
            counters,
            settings.security.llm_calls_per_hour,
            settings.learning.max_llm_calls_per_hour,
            metrics=metrics,
        )

    @classmethod
    def in_process(cls, settings: Settings, metrics: Metrics | None = None) -> LlmBudget:
        """For a service without learning (no shared counter store): counted in this process only."""
        return cls.of(settings, ProcessCounters(), metrics)

    def resets_at(self) -> float:
        return (self._window() + 1) * HOUR

    async def charge(self, user_id: str, what: str, *, background: bool) -> None:
        """Take one call from the user's hour, or raise BudgetUsedUp (nothing taken)."""
        window = self._window()
        if background:
            await self._take(user_id, f"{BACKGROUND_KEY}:{window}", self.background_limit, what, [])
        taken = [f"{BACKGROUND_KEY}:{window}"] if background else []
        if self.limit is not None:
            await self._take(user_id, f"{ALL_KEY}:{window}", self.limit, what, taken)

    async def view(self, user_id: str) -> BudgetView:
        """This hour's use, read without spending (an increment by zero is the one atomic read)."""
        window = self._window()
        used = await self.counters.increment(user_id, f"{ALL_KEY}:{window}", by=0, ttl_seconds=2 * HOUR)
        background = await self.counters.increment(
            user_id, f"{BACKGROUND_KEY}:{window}", by=0, ttl_seconds=2 * HOUR
        )
        return BudgetView(
            limit=self.limit,
            used=used,
            background_limit=self.background_limit,
            background_used=background,
            resets_at=datetime.fromtimestamp(self.resets_at(), UTC),
        )

    async def _take(self, user_id: str, key: str, limit: int, what: str, taken: list[str]) -> None:
        # The window's counter outlives the window by an hour, so no replica reads a reset counter early.
        used = await self.counters.increment(user_id, key, ttl_seconds=2 * HOUR)
        if used <= limit:
            return
        for counted in [*taken, key]:
            await self.counters.increment(user_id, counted, by=-1, ttl_seconds=2 * HOUR)
        if self.metrics is not None:
            self.metrics.refused(LLM_CALLS)
        resets_at = self.resets_at()
        at = datetime.fromtimestamp(resets_at, UTC)
        minutes = max(1, math.ceil((resets_at - self.clock()) / 60))
        share = (
            f"background learning's share ({limit} of the hour's calls) is used up"
            if key.startswith(BACKGROUND_KEY)
            else f"{limit} model calls per hour (summaries, fact extraction, reconciliation, profile) "
            "are used up for this user"
        )
        raise BudgetUsedUp(
            f"LLM quota reached: {share}; {what} can run again after {at:%H:%M} UTC (in about {minutes} min). "
            "Turns are still recorded meanwhile, and facts are learned from them then.",
            resets_at,
        )

    def _window(self) -> int:
        return int(self.clock() // HOUR)


@dataclass
class ProcessCounters:
    """Counts kept in this process's memory (windows expire by the wall clock)."""

    _numbers: dict[tuple[str, str], tuple[int, float | None]] = field(default_factory=dict)

    async def increment(
        self, user_id: str, key: str, *, by: int = 1, ttl_seconds: float | None = None
    ) -> int:
        now = time.time()
        number, expires = self._numbers.get((user_id, key), (0, None))
        if expires is not None and expires <= now:
            number, expires = 0, None
        if expires is None and ttl_seconds is not None and number == 0:
            expires = now + ttl_seconds
        self._numbers[(user_id, key)] = (number + by, expires)
        return number + by
