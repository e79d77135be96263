"""What the activity plots show, read from an in-process MemoryService on the embedded default: memories
made per day by type, and how many times each thread was summarized."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.errors import InvalidInputError
from mcp_memory.models import Memory, utcnow
from mcp_memory.service.activity import (
    ThreadSummarizations,
    memories_per_day,
    summarizations_per_thread,
)
from mcp_memory.service.memory_service import MemoryService

pytestmark = pytest.mark.anyio

USER = "tester"


def fact(memory_id: str, made: datetime, **superseded: object) -> Memory:
    return Memory(
        id=memory_id, user_id=USER, type="fact", content=f"fact {memory_id}", created_at=made, **superseded
    )


async def test_memories_are_counted_on_the_utc_day_they_were_made(service: MemoryService) -> None:
    now = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
    said = {
        now - timedelta(days=1, hours=1): 1,  # 9 January
        now - timedelta(days=3): 2,  # 7 January
        now - timedelta(days=3, hours=11, minutes=59): 1,  # 7 January, 00:01
        now - timedelta(days=3, hours=12, minutes=1): 1,  # 6 January, 23:59: the day before
        now - timedelta(days=40): 3,  # before the window
    }
    for when, how_many in sorted(said.items()):  # a thread's turns are said in order
        for i in range(how_many):
            await service.add_turn(USER, "t", "user", f"turn {i} said at {when}", created_at=when)
    await service.stores.long_term.put(
        [
            fact("fact_now", now - timedelta(hours=2)),
            fact("fact_old", now - timedelta(days=1), superseded_by="fact_now", superseded_at=now),
        ]
    )

    daily = await memories_per_day(service.stores.long_term, USER, days=7, now=now)

    assert daily.days == [datetime(2026, 1, d, tzinfo=UTC).date() for d in range(4, 11)]
    assert set(daily.counts) == {"turn", "summary", "fact", "user_summary", "observation"}
    assert daily.counts["turn"] == [0, 0, 1, 3, 0, 1, 0]
    assert daily.counts["fact"] == [0, 0, 0, 0, 0, 1, 1]  # the superseded one was still made that day
    assert daily.counts["summary"] == daily.counts["user_summary"] == [0] * 7
    assert daily.scanned == 7 and not daily.truncated


async def test_a_long_history_is_counted_up_to_the_cap_newest_first(service: MemoryService) -> None:
    now = utcnow()
    for day in range(4, -1, -1):
        for i in range(3):
            await service.add_turn(USER, "t", "user", f"turn {i}", created_at=now - timedelta(days=day))

    daily = await memories_per_day(service.stores.long_term, USER, days=5, now=now, max_scanned=7)

    assert daily.truncated and daily.scanned == 7
    assert daily.counts["turn"] == [0, 0, 1, 3, 3]
    whole = await memories_per_day(service.stores.long_term, USER, days=5, now=now, max_scanned=15)
    assert not whole.truncated and whole.counts["turn"] == [3] * 5


async def test_no_memories_is_a_row_of_zeros_for_every_type(service: MemoryService) -> None:
    now = utcnow()
    daily = await memories_per_day(service.stores.long_term, USER, now=now)
    assert len(daily.days) == 30 and daily.days[-1] == now.date()
    assert daily.counts == {t: [0] * 30 for t in ("turn", "summary", "fact", "user_summary", "observation")}
    assert daily.scanned == 0 and not daily.truncated


async def test_a_window_of_no_days_is_refused(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="days"):
        await memories_per_day(service.stores.long_term, USER, days=0)


async def summarized(service: MemoryService, thread_id: str, times: int) -> None:
    for round_ in range(times):
        await service.add_turn(
            USER, thread_id, "user", f"round {round_} of {thread_id}: the plan changed again"
        )
        await service.summarize_thread(USER, thread_id, keep_recent=0)


async def test_threads_are_ranked_by_how_many_times_they_were_summarized(service: MemoryService) -> None:
    await summarized(service, "twice", 2)
    await summarized(service, "once", 1)
    await summarized(service, "thrice", 3)
    await service.add_turn(USER, "never", "user", "a thread never summarized")

    found = await summarizations_per_thread(service.stores.long_term, USER)

    assert found == [
        ThreadSummarizations("thrice", 3),
        ThreadSummarizations("twice", 2),
        ThreadSummarizations("once", 1),
    ]
    assert await summarizations_per_thread(service.stores.long_term, USER, limit=1) == found[:1]
    daily = await memories_per_day(service.stores.long_term, USER)
    assert daily.counts["summary"][-1] == 3  # one running summary per thread, however often rewritten


async def test_summaries_are_read_past_one_page(service: MemoryService) -> None:
    for i in range(5):
        await summarized(service, f"thread-{i}", 1 + i % 2)
    found = await summarizations_per_thread(service.stores.long_term, USER, max_scanned=3)
    assert len(found) == 3  # capped
    everything = await summarizations_per_thread(service.stores.long_term, USER)
    assert [t.count for t in everything] == [2, 2, 1, 1, 1]
    assert [t.thread_id for t in everything] == ["thread-1", "thread-3", "thread-0", "thread-2", "thread-4"]
