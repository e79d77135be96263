"""The background lanes (learning/worker.py): per-user order, users side by side, coalescing by key, a
full queue that defers instead of dropping, drain and shutdown. Jobs are gated on events, never timed."""

from __future__ import annotations

import anyio
import pytest

from mcp_memory.learning.worker import Job, Worker
from tests.helpers import HANG_SECONDS

pytestmark = pytest.mark.anyio


class Gate:
    """A job body that records its start and waits until released."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log
        self.started = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self) -> None:
        self.log.append(self.name)
        self.started.set()
        await self.release.wait()


async def test_a_stuck_user_delays_only_their_own_lane() -> None:
    ran: list[str] = []
    async with Worker.running(queue_size=10, concurrency=2, grace_seconds=0) as worker:
        stuck = Gate("ann-1", ran)
        worker.submit(Job("ann 1", stuck, "ann"))
        worker.submit(Job("ann 2", Gate("ann-2", ran), "ann"))
        with anyio.fail_after(HANG_SECONDS):
            await stuck.started.wait()
            bob = Gate("bob-1", ran)
            bob.release.set()
            worker.submit(Job("bob 1", bob, "bob"))
            await worker.drain("bob")
        assert ran == ["ann-1", "bob-1"]  # ann's second job waits behind her first, bob's ran
        assert worker.waiting("ann") == 1


async def test_jobs_of_one_user_run_in_order_one_at_a_time() -> None:
    ran: list[str] = []
    async with Worker.running(queue_size=10, concurrency=4, grace_seconds=1) as worker:
        gates = [Gate(f"ann-{i}", ran) for i in range(3)]
        for gate in gates:
            gate.release.set()
            worker.submit(Job(gate.name, gate, "ann"))
        with anyio.fail_after(HANG_SECONDS):
            await worker.drain()
    assert ran == ["ann-0", "ann-1", "ann-2"]


async def test_a_keyed_job_already_waiting_is_not_queued_twice() -> None:
    ran: list[str] = []
    async with Worker.running(queue_size=10, concurrency=1, grace_seconds=1) as worker:
        first = Gate("first", ran)
        worker.submit(Job("first", first, "ann", key="extract:t"))
        with anyio.fail_after(HANG_SECONDS):
            await first.started.wait()  # running: a new one for the same key is queued behind it
        extract = Gate("again", ran)
        extract.release.set()
        assert worker.submit(Job("again", extract, "ann", key="extract:t"))
        assert worker.submit(Job("and again", extract, "ann", key="extract:t"))
        assert worker.waiting("ann") == 1
        first.release.set()
        with anyio.fail_after(HANG_SECONDS):
            await worker.drain()
    assert ran == ["first", "again"]


async def test_a_full_queue_defers_one_stand_in_per_key_and_runs_it_later() -> None:
    ran: list[str] = []
    async with Worker.running(queue_size=1, concurrency=1, grace_seconds=1) as worker:
        busy = Gate("busy", ran)
        worker.submit(Job("busy", busy, "ann"))
        with anyio.fail_after(HANG_SECONDS):
            await busy.started.wait()
        queued = Gate("turn-1", ran)
        queued.release.set()
        assert worker.submit(Job("turn 1", queued, "bob"))  # fills the queue
        stand_in = Gate("extract", ran)
        stand_in.release.set()
        for i in range(2, 5):
            turn = Job(f"turn {i}", Gate(f"turn-{i}", ran), "bob")
            assert worker.submit(turn, when_full=Job("extract t", stand_in, "bob", key="extract:t"))
        assert worker.waiting("bob") == 2  # the queued turn and one deferred extraction
        keyless = Job("unkeyed", Gate("unkeyed", ran), "bob")
        assert not worker.submit(keyless)  # the only refusal: nothing keyed to keep instead
        busy.release.set()
        with anyio.fail_after(HANG_SECONDS):
            await worker.drain()
    assert ran == ["busy", "turn-1", "extract"]


async def test_shutdown_gives_grace_then_cancels_and_refuses_new_jobs() -> None:
    ran: list[str] = []
    async with Worker.running(queue_size=10, concurrency=1, grace_seconds=0.05) as worker:
        never = Gate("never", ran)
        worker.submit(Job("never", never, "ann"))
        with anyio.fail_after(HANG_SECONDS):
            await never.started.wait()
    assert not worker.submit(Job("late", Gate("late", ran), "ann"))
    assert ran == ["never"]
