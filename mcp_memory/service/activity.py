"""What the activity plots show: the memories made each day, by type, and how often each thread was
summarized.

Memories per day are read the way the list_memories tool reads them (service/browse.py), page by page,
newest first, so a plot never counts a memory that tool would not show. A long history is counted up
to a cap, newest first, and says so (`truncated`): the oldest days are then undercounted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from mcp_memory import validation as check
from mcp_memory.models import MEMORY_TYPES, ListQuery, Memory, utcnow
from mcp_memory.service import browse
from mcp_memory.storage.base import LongTermStore

# How many memories one plot reads at most: the page is drawn on request, so its cost stays bounded.
MAX_SCANNED = 50_000
MAX_DAYS = 366


@dataclass(frozen=True)
class DailyCounts:
    days: list[date]  # oldest first, UTC calendar days, ending today
    counts: dict[str, list[int]]  # per memory type, one count per day; every type, zeros included
    scanned: int  # memories read to count them
    truncated: bool  # MAX_SCANNED was reached: the oldest days may be missing memories


@dataclass(frozen=True)
class ThreadSummarizations:
    thread_id: str
    count: int  # times the thread's oldest messages were folded into its running summary


async def memories_per_day(
    long_term: LongTermStore,
    user_id: str,
    *,
    days: int = 30,
    now: datetime | None = None,
    max_scanned: int = MAX_SCANNED,
) -> DailyCounts:
    """How many memories of each type were made on each of the last `days` days (UTC), today included.
    Superseded memories count too: they were made that day."""
    days = check.count(days, "days", low=1, high=MAX_DAYS)
    today = (now or utcnow()).astimezone(UTC).date()
    shown = [today - timedelta(days=back) for back in range(days - 1, -1, -1)]
    column = {day: i for i, day in enumerate(shown)}
    counts: dict[str, list[int]] = {memory_type: [0] * days for memory_type in MEMORY_TYPES}
    scanned, cursor = 0, None
    while True:
        page = await browse.list_memories(
            long_term,
            user_id,
            since=datetime.combine(shown[0], time.min, tzinfo=UTC),
            until=datetime.combine(today, time.max, tzinfo=UTC),
            include_superseded=True,
            order="newest",
            limit=min(browse.MAX_LIMIT, max_scanned - scanned),
            cursor=cursor,
        )
        for memory in page.memories:
            day = column.get(memory.created_at.astimezone(UTC).date())
            if day is not None:
                counts[memory.type][day] += 1
        scanned += len(page.memories)
        cursor = page.next_cursor
        if cursor is None or scanned >= max_scanned:
            return DailyCounts(days=shown, counts=counts, scanned=scanned, truncated=cursor is not None)


async def summarizations_per_thread(
    long_term: LongTermStore, user_id: str, *, limit: int = 20, max_scanned: int = MAX_SCANNED
) -> list[ThreadSummarizations]:
    """The `limit` most summarized threads, most first. Each thread has one running summary memory
    (models.summary_id), rewritten by every summarization with its `summary_version`: the working
    memory's count of summary rewrites, carried over when a thread is rebuilt from long term. Forgetting
    a thread's summary clears it in working memory, which is a rewrite too: such a thread counts one
    more than it was summarized."""
    limit = check.count(limit, "limit", low=1, high=browse.MAX_LIMIT)
    found: list[ThreadSummarizations] = []
    for summary in await _summaries(long_term, user_id, max_scanned):
        if summary.thread_id is not None:
            # A summary stored before versions were recorded was still written by one summarization.
            count = int(summary.metadata.get("summary_version") or 1)
            found.append(ThreadSummarizations(thread_id=summary.thread_id, count=count))
    found.sort(key=lambda thread: (-thread.count, thread.thread_id))
    return found[:limit]


async def _summaries(long_term: LongTermStore, user_id: str, max_scanned: int) -> list[Memory]:
    """The user's thread summaries, with their metadata (list_memories' view of a memory has none), read
    from the store in the keyset pages browse.list_memories uses."""
    summaries: list[Memory] = []
    after: tuple[datetime, str] | None = None
    while len(summaries) < max_scanned:
        size = min(browse.MAX_LIMIT, max_scanned - len(summaries))
        page = await long_term.list_memories(
            ListQuery(user_id=user_id, types=["summary"], order="newest", limit=size, after=after)
        )
        summaries += page
        if len(page) < size:
            break
        after = (page[-1].created_at, page[-1].id)
    return summaries
