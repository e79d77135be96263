"""The background lane: jobs queued from the request path, run off it, fairly between users.

Each user has a lane of their own: that user's jobs run in order, one at a time, and different users'
lanes run side by side, at most `concurrency` jobs at once. So one user's slow or failing model (a
silent sampling client, an LLM timing out) delays only that user's learning.

submit() never awaits, so add_turn pays for a queue append and nothing else. A job with a key that
is already waiting in its lane is not queued twice. When `queue_size` jobs wait, a keyed job is
deferred instead: kept once per (lane, key) outside the bound and run when its lane gets to it.
Nothing is dropped silently; only a keyless job meeting a full queue is refused (logged), and every
job Learning submits has a key or a keyed stand-in. On shutdown no new job starts; running and
waiting jobs get `grace` seconds to finish, then whatever is left is cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_memory.errors import MemoryServerError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    name: str  # for the logs: "extract thread t1 of alice"
    run: Callable[[], Awaitable[object]]
    lane: str = ""  # whose work (a user id); "" for the server's own upkeep
    key: str | None = None  # what it does, e.g. "extract:t1": one waiting job per key and lane


@dataclass
class _Lane:
    queued: deque[Job] = field(default_factory=deque)
    deferred: dict[str, Job] = field(default_factory=dict)  # key -> job, taken when the queue was full
    running: bool = False
    idle: anyio.Event = field(default_factory=anyio.Event)

    def waiting_keys(self) -> set[str]:
        return {j.key for j in self.queued if j.key is not None} | set(self.deferred)


class Worker:
    def __init__(self, *, queue_size: int, concurrency: int) -> None:
        self._queue_size = queue_size
        self._slots = anyio.Semaphore(concurrency)
        self._lanes: dict[str, _Lane] = {}
        self._queued = 0  # jobs waiting in any lane's queue (the deferred ones are not counted)
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle = anyio.Event()
        self._idle.set()
        # Told of every job that failed (its reason as the log has it), e.g. to show it in the status.
        self.on_failure: Callable[[Job, str], None] | None = None

    @classmethod
    @asynccontextmanager
    async def running(
        cls, *, queue_size: int, concurrency: int, grace_seconds: float
    ) -> AsyncIterator[Worker]:
        worker = cls(queue_size=queue_size, concurrency=concurrency)
        try:
            yield worker
        finally:
            await worker._stop(grace_seconds)

    def submit(self, job: Job, *, when_full: Job | None = None) -> bool:
        """Queue a job without waiting. With the queue full, `when_full` (or else the job itself) is
        deferred when it has a key. False (and logged) only when closed, or full and nothing keyed."""
        if self._closed:
            log.info("shutting down; not starting %s", job.name)
            return False
        lane = self._lanes.get(job.lane) or self._open_lane(job.lane)
        if job.key is not None and job.key in lane.waiting_keys():
            return True  # the waiting one will do this work, and see everything stored by then
        if self._queued < self._queue_size:
            lane.queued.append(job)
            self._queued += 1
        else:
            stand_in = when_full or job
            if stand_in.key is None:
                log.warning("background queue full; refused %s (its turns stay pending)", job.name)
                self._close_if_idle(job.lane, lane)
                return False
            log.info("background queue full; deferred %s", stand_in.name)
            lane.deferred[stand_in.key] = stand_in
        if not lane.running:
            lane.running = True
            self._spawn(self._run_lane(job.lane, lane))
        return True

    def every(self, seconds: float, job: Job) -> None:
        """Submit `job` now and then every `seconds` until shutdown (e.g. revision retention)."""

        async def repeat() -> None:
            while True:
                if not self.submit(job):
                    return
                await anyio.sleep(seconds)  # a timer, not polling: nothing to wait on instead

        self._spawn(repeat())

    def after(self, seconds: float, job: Job) -> None:
        """Submit `job` once, `seconds` from now (unless shutting down by then)."""

        async def later() -> None:
            await anyio.sleep(seconds)  # a timer: the budget window it waits for ends by the clock
            self.submit(job)

        self._spawn(later())

    def waiting(self, lane: str) -> int:
        """How many jobs of the lane are queued or deferred (not counting the running one)."""
        found = self._lanes.get(lane)
        return len(found.queued) + len(found.deferred) if found else 0

    async def drain(self, lane: str | None = None) -> None:
        """Wait until every job submitted so far has finished, or only one lane's (tests and
        benchmarks use this)."""
        if lane is None:
            await self._idle.wait()
        elif (found := self._lanes.get(lane)) is not None:
            await found.idle.wait()

    def _open_lane(self, name: str) -> _Lane:
        lane = self._lanes[name] = _Lane()
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        return lane

    def _close_if_idle(self, name: str, lane: _Lane) -> None:
        if lane.running or lane.queued or lane.deferred:
            return
        lane.idle.set()
        if self._lanes.get(name) is lane:
            del self._lanes[name]
        if not self._lanes:
            self._idle.set()

    async def _run_lane(self, name: str, lane: _Lane) -> None:
        try:
            while True:
                async with self._slots:  # take a turn among all lanes, then this lane's next job
                    if lane.queued:
                        job = lane.queued.popleft()
                        self._queued -= 1
                    elif lane.deferred:
                        job = lane.deferred.pop(next(iter(lane.deferred)))  # the oldest deferred
                    else:
                        return
                    await self._run(job)
        finally:
            lane.running = False
            self._close_if_idle(name, lane)

    async def _run(self, job: Job) -> None:
        try:
            await job.run()
        except MemoryServerError as e:
            log.warning("%s skipped: %s", job.name, e)
            self._failed(job, str(e))
        except Exception as e:
            # Top boundary of the background lane, on purpose: one job's bug (or an unmapped driver
            # error) must not stop learning for every later turn.
            log.exception("%s failed", job.name)
            self._failed(job, f"internal error ({type(e).__name__}); details are in the server log")

    def _failed(self, job: Job, reason: str) -> None:
        if self.on_failure is not None:
            self.on_failure(job, reason)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        # Tasks of their own rather than a task group entered here, on purpose: the service is opened
        # and closed by a reference-counted host, possibly from different tasks and inside a shielded
        # scope, and a task group's cancel scope must be exited by the task (and at the nesting level)
        # that entered it. _stop() cancels and awaits every task, so none outlives the service.
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stop(self, grace_seconds: float) -> None:
        self._closed = True  # no new job; the lanes finish what is queued, then end
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(grace_seconds):
                await self._idle.wait()
            unfinished = sum(self.waiting(name) + lane.running for name, lane in self._lanes.items())
            if unfinished:
                log.warning("shutdown: cancelling %d unfinished background job(s)", unfinished)
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks)
