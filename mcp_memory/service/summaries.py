"""Progressive summaries that may outlast the add_turn that started them.

A turn that takes its thread past the summary threshold starts the summary (service/threads.py) and waits
for it at most `summary.inline_seconds`: a chat thread's offline summary is done by then and the reply
says so, as before; a run of long answers, a pasted file or a model's summary (40 ms to seconds) finishes
after the reply, so an IDE agent's add_turn is acknowledged in milliseconds. The turn is stored either
way; only the summary is late.

Reads stay consistent: get_working_memory, summarize_thread and forget of a thread wait for its summary
still running in this process (`settled`), as a search by meaning waits for vectors (service/vectors.py).
Another replica's summary is kept apart by the working store's lease, as before. On shutdown a running
summary may finish within the grace period; one cut short is written by the next turn past the threshold.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
from anyio.abc import TaskGroup

log = logging.getLogger(__name__)

T = TypeVar("T")
Key = tuple[str, str]  # (owner, thread id)


@dataclass
class Started(Generic[T]):
    """What a caller of SummaryRunner.start saw within its wait."""

    done: bool  # finished within the wait (result holds its outcome); False: it goes on after the reply
    result: T | None = None
    already_running: bool = False  # the thread was being summarized: nothing new was started


@dataclass
class _Job:
    finished: anyio.Event = field(default_factory=anyio.Event)
    result: object = None
    error: Exception | None = None
    awaited: bool = True  # the add_turn that started it still waits for it


class SummaryRunner:
    """Runs one summary per thread at a time in a task group that outlives requests."""

    def __init__(self, tasks: TaskGroup) -> None:
        self._tasks = tasks
        self._running: dict[Key, _Job] = {}

    @classmethod
    @asynccontextmanager
    async def running(cls, grace_seconds: float) -> AsyncIterator[SummaryRunner]:
        async with anyio.create_task_group() as tasks:
            runner = cls(tasks)
            try:
                yield runner
            finally:
                with anyio.move_on_after(grace_seconds, shield=True):
                    for job in list(runner._running.values()):
                        await job.finished.wait()
                if runner._running:
                    log.info("%d thread summaries cut short by shutdown", len(runner._running))
                tasks.cancel_scope.cancel()

    async def start(self, key: Key, work: Callable[[], Awaitable[T]], wait_seconds: float) -> Started[T]:
        """Run `work` for the thread `key` and wait for it at most `wait_seconds`. Its error, when it
        fails within the wait, is raised here; after the wait it is logged (the next turn retries)."""
        if key in self._running:
            return Started(done=True, already_running=True)
        job = _Job()
        self._running[key] = job

        async def run() -> None:
            try:
                job.result = await work()
            except Exception as error:  # top of a background task: the caller's to raise, or logged
                if job.awaited:
                    job.error = error
                else:
                    log.exception(
                        "the summary of thread %s failed after the reply; the next turn retries", key[1]
                    )
            finally:
                job.finished.set()
                del self._running[key]

        self._tasks.start_soon(run)
        try:
            with anyio.move_on_after(wait_seconds):
                await job.finished.wait()
        finally:
            # Past the wait, or the caller cancelled while waiting: nobody raises its error any more.
            job.awaited = job.finished.is_set()
        if not job.finished.is_set():
            return Started(done=False)
        if job.error is not None:
            raise job.error
        return Started(done=True, result=job.result)  # type: ignore[arg-type]

    async def settled(self, key: Key) -> None:
        """Wait for the thread's summary still running, if any."""
        job = self._running.get(key)
        if job is not None:
            await job.finished.wait()

    def pending(self) -> int:
        return len(self._running)
