"""Prepares the configured users' search indexes in the background right after start-up.

The embedded store keeps each user's BM25 postings and vectors in RAM, loaded from the snapshot beside
the data file or, without one, built from the file (which grows with the store: docs/benchmarks.md).
An MCP client usually starts the server well before its first question, so preparing them at
start-up hides that wait. Requests are served meanwhile; a search that arrives before the indexes are
ready waits for them (the store opens them once). Users past the index memory budget are left to
their first search.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import anyio

from mcp_memory.errors import MemoryServerError
from mcp_memory.storage import LongTermStore

log = logging.getLogger(__name__)


class Warmup:
    """One background pass over `users`; `done` is set when it ends (finished, failed or cancelled)."""

    def __init__(self, long_term: LongTermStore, users: Iterable[str]) -> None:
        self._long_term = long_term
        self._users = list(dict.fromkeys(users))  # in order, once each
        self.done = anyio.Event()
        self._stopping = False

    @classmethod
    @asynccontextmanager
    async def running(cls, long_term: LongTermStore, users: Iterable[str]) -> AsyncIterator[Warmup]:
        warmup = cls(long_term, users)
        # A task of its own, not a task group, for the reason given in learning/worker.py: the host
        # may open and close the service from different tasks.
        task = asyncio.get_running_loop().create_task(warmup._run())
        try:
            yield warmup
        finally:
            # Stop after the user being prepared, and wait for that one: its build runs on a worker
            # thread that nothing can interrupt, and it reads the store, which closes after this.
            # (Cancelling the task would only stop the waiting, and leave the thread running.)
            warmup._stopping = True
            with anyio.CancelScope(shield=True):
                await asyncio.wait([task])

    async def _run(self) -> None:
        try:
            for user_id in self._users:
                if self._stopping:
                    break
                started = time.perf_counter()
                try:
                    await self._long_term.warm(user_id)
                except MemoryServerError as e:
                    log.warning("search indexes of %s not prepared at start-up: %s", user_id, e)
                    continue
                log.info("search indexes of %s ready in %.2f s", user_id, time.perf_counter() - started)
        except Exception:
            # Top boundary of this task, on purpose: a failed warm-up only means the first search
            # builds the indexes itself, as it would with warm-up off.
            log.exception("warming the search indexes failed")
        finally:
            self.done.set()
