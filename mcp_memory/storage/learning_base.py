"""What learning needs from a backend beyond the two storage roles: revisions and trigger counters.

Revisions are the immutable history of a long-term memory (facts, summaries, the user profile,
explicit memories): one row per create, update, supersede, delete or rollback, holding the content
after the change and what caused it. Trigger counters are the per-user numbers that decide when a
background extraction or reconciliation runs; every increment is atomic, so among any number of
replicas exactly one sees the value that fires a trigger.

SQLite implements both in storage/sqlite/revisions.py. Redis can implement TriggerCounters with
INCR (+ EXPIRE in the same MULTI) and a Lua compare-and-set; Cosmos DB with one item per counter
replaced under its ETag (If-Match), retried on 412.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from mcp_memory.models import Revision, Scope


class RevisionStore(Protocol):
    """Append-only history of long-term memories; only forget and retention remove rows."""

    async def append(self, revision: Revision) -> Revision:
        """Store the revision with the next seq of its memory (atomically); return it with its seq."""
        ...

    async def history(self, user_id: str, memory_id: str) -> list[Revision]:
        """Every revision of the memory, oldest first (empty when it has none)."""
        ...

    async def get(self, user_id: str, revision_id: str) -> Revision:
        """One revision; raises NotFoundError when the user has none by that id."""
        ...

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> int:
        """Delete (or count) the revisions of what the scope names: one memory, a thread's memories
        (revisions carry the memory's thread_id) or all of the user's. Returns how many."""
        ...

    async def prune(self, before: datetime) -> int:
        """Retention: delete every revision created before `before`, for all users."""
        ...


class TriggerCounters(Protocol):
    """Per-user counters and marks shared by every replica and worker process."""

    async def increment(
        self, user_id: str, key: str, *, by: int = 1, ttl_seconds: float | None = None
    ) -> int:
        """Add `by` atomically and return the new value. With ttl_seconds, a counter created now expires
        after that long (a rate window); an expired counter starts again from zero."""
        ...

    async def read(self, user_id: str, key: str) -> str | None:
        """The mark stored under key, or None."""
        ...

    async def compare_and_set(self, user_id: str, key: str, expected: str | None, value: str) -> bool:
        """Set the mark to value only if it is still `expected` (None = absent). False if another
        writer changed it first (nothing is written)."""
        ...

    async def forget(self, user_id: str, *, prefix: str = "") -> int:
        """Delete the user's counters and marks whose key starts with prefix; returns how many."""
        ...
