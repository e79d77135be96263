"""The background lane: jobs queued from the request path, run one at a time off it.

submit() never awaits, so add_turn pays for a queue append and nothing else. A full queue drops
the job (logged): the work it stood for is not lost, because extraction reads a thread's pending
turns from the store, not from the job. On shutdown the queue is closed, running and queued jobs
get `grace` seconds to finish, then whatever is left is cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..errors import MemoryServerError
from .parsing import MalformedAnswer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    name: str  # for the logs: "extract thread t1 of alice"
    run: Callable[[], Awaitable[object]]


class Worker:
    def __init__(self, send: MemoryObjectSendStream[Job]) -> None:
        self._send = send
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending = 0
        self._idle = anyio.Event()
        self._idle.set()

    @classmethod
    @asynccontextmanager
    async def running(cls, *, queue_size: int, grace_seconds: float) -> AsyncIterator[Worker]:
        send, receive = anyio.create_memory_object_stream[Job](queue_size)
        worker = cls(send)
        worker._spawn(worker._consume(receive))
        try:
            yield worker
        finally:
            await worker._stop(grace_seconds)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        # Tasks of their own rather than a task group entered here, on purpose: the service is opened
        # and closed by a reference-counted host, possibly from different tasks and inside a shielded
        # scope, and a task group's cancel scope must be exited by the task (and at the nesting level)
        # that entered it. _stop() cancels and awaits every task, so none outlives the service.
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def submit(self, job: Job) -> bool:
        """Queue a job without waiting; False (and logged) when the queue is full or closed."""
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:
            log.warning("background queue full; dropped %s (its turns stay pending)", job.name)
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.info("shutting down; not starting %s", job.name)
            return False
        self._pending += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        return True

    def every(self, seconds: float, job: Job) -> None:
        """Submit `job` now and then every `seconds` until shutdown (e.g. revision retention)."""

        async def repeat() -> None:
            while True:
                if not self.submit(job):
                    return
                await anyio.sleep(seconds)  # a timer, not polling: nothing to wait on instead

        self._spawn(repeat())

    async def drain(self) -> None:
        """Wait until every job submitted so far has finished (tests and benchmarks use this)."""
        await self._idle.wait()

    async def _consume(self, receive: MemoryObjectReceiveStream[Job]) -> None:
        async with receive:
            async for job in receive:
                try:
                    await job.run()
                except (MemoryServerError, MalformedAnswer) as e:
                    log.warning("%s skipped: %s", job.name, e)
                except Exception:
                    # Top boundary of the background lane, on purpose: one job's bug (or an unmapped
                    # driver error) must not stop learning for every later turn.
                    log.exception("%s failed", job.name)
                finally:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    async def _stop(self, grace_seconds: float) -> None:
        self._send.close()  # the consumer finishes what is queued, then ends
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(grace_seconds):
                await self._idle.wait()
            if self._pending:
                log.warning("shutdown: cancelling %d unfinished background job(s)", self._pending)
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks)
