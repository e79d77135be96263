"""The fair queue behind admission (mcp/middleware/admission.py): turns round-robin across users, arrival order
within one, reads shed past the longest wait, writes never, and nothing leaked by a cancelled waiter."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from mcp_memory.mcp.middleware.admission import FairQueue, Overloaded
from tests.helpers import eventually_async

pytestmark = pytest.mark.anyio


async def _request(queue: FairQueue, key: str, name: str, served: list[str], release: anyio.Event) -> None:
    async with queue.turn(key, sheddable=False):
        served.append(name)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


async def test_waiting_users_take_turns_and_each_users_requests_keep_their_order() -> None:
    queue = FairQueue(slots=1, max_wait=10.0)
    served: list[str] = []
    gates = {name: anyio.Event() for name in ["hold", "a1", "a2", "a3", "b1", "c1"]}
    async with anyio.create_task_group() as group:
        group.start_soon(_request, queue, "x", "hold", served, gates["hold"])
        await _settle()
        for name in ["a1", "a2", "a3", "b1", "c1"]:  # ann sends three at once, then bob and cy one each
            group.start_soon(_request, queue, name[0], name, served, gates[name])
            await _settle()
        assert queue.waiting == 5 and queue.running == 1
        for name in ["hold", "a1", "b1", "c1", "a2", "a3"]:
            assert served[-1] == name  # the one holding the slot is the one served last
            gates[name].set()
            await _settle()
    assert served == ["hold", "a1", "b1", "c1", "a2", "a3"]
    assert queue.running == 0 and queue.waiting == 0


async def test_a_read_that_waits_too_long_is_refused_and_a_write_waits_its_turn() -> None:
    queue = FairQueue(slots=1, max_wait=0.05)
    release = anyio.Event()
    served: list[str] = []
    outcomes: list[str] = []

    async def read() -> None:
        try:
            async with queue.turn("bob", sheddable=True):
                outcomes.append("read served")
        except Overloaded as e:
            outcomes.append(f"read refused, retry after {e.retry_after:.2f}")

    async def write() -> None:
        async with queue.turn("cy", sheddable=False):
            outcomes.append("write served")

    async with anyio.create_task_group() as group:
        group.start_soon(_request, queue, "ann", "hold", served, release)
        await _settle()
        group.start_soon(read)
        group.start_soon(write)
        # Past max_wait the read gives up (however late the loop gets to it); the write still waits.
        await eventually_async(lambda: outcomes, what="the read's outcome")
        assert outcomes[0].startswith("read refused")
        assert queue.waiting == 1
        release.set()
    assert outcomes[1] == "write served"
    assert queue.running == 0 and queue.waiting == 0


async def test_a_read_expected_to_wait_too_long_is_refused_at_once_without_queueing() -> None:
    queue = FairQueue(slots=1, max_wait=60.0)
    queue.seconds_per_request = 120.0  # the recent pace: two minutes a request
    release = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_request, queue, "ann", "hold", [], release)
        await _settle()
        # "At once": a read that queued would wait max_wait (a minute) for the held slot, released only
        # below; this bound is far above what a refusal takes on any machine and far below that minute.
        with anyio.fail_after(15), pytest.raises(Overloaded) as refused:
            async with queue.turn("bob", sheddable=True):
                pytest.fail("served although expected to wait two minutes")
        assert refused.value.retry_after == pytest.approx(120.0)
        assert queue.waiting == 0
        release.set()


async def test_a_waiter_cancelled_in_the_queue_leaves_no_trace() -> None:
    queue = FairQueue(slots=1, max_wait=10.0)
    release = anyio.Event()
    served: list[str] = []
    async with anyio.create_task_group() as group:
        group.start_soon(_request, queue, "ann", "hold", served, release)
        await _settle()
        with anyio.move_on_after(0.05):  # the client went away while waiting
            async with queue.turn("bob", sheddable=False):
                pytest.fail("served while the slot was held")
        assert queue.waiting == 0
        release.set()
    async with queue.turn("bob", sheddable=True):  # the slot came back
        assert queue.running == 1
    assert queue.running == 0


async def test_the_pace_follows_the_time_requests_take() -> None:
    now = [0.0]
    queue = FairQueue(slots=2, max_wait=1.0, clock=lambda: now[0])
    for _ in range(50):
        async with queue.turn("ann", sheddable=True):
            now[0] += 0.2
    assert queue.seconds_per_request == pytest.approx(0.2, rel=0.01)
    assert queue.expected_wait(ahead=9) == pytest.approx(1.0, rel=0.01)  # 10 requests over 2 slots
