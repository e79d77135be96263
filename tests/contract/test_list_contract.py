"""LongTermStore.list_memories on every backend: SQLite and the local Cosmos-protocol server.

Keyset pages on (created_at, id): every memory that existed when paging started comes exactly once,
however many are written between pages; each filter narrows; as_of shows memory as it stood then.
(Redis is a working-memory backend only: with Redis, long term is SQLite or Cosmos DB, both run here.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest

from mcp_memory.models import ListOrder, ListQuery, Memory
from mcp_memory.storage.base import LongTermStore
from tests.contract.conftest_long_term import T0, memory

pytestmark = pytest.mark.anyio

NewUser = Callable[[], str]


def listing(user_id: str, **fields: object) -> ListQuery:
    return ListQuery.model_validate({"user_id": user_id, "limit": 100, **fields})


async def ids(store: LongTermStore, user_id: str, **fields: object) -> list[str]:
    return [m.id for m in await store.list_memories(listing(user_id, **fields))]


async def every_page(
    store: LongTermStore,
    query: ListQuery,
    between: Callable[[int], Awaitable[None]],
) -> list[list[str]]:
    """Page to the end, calling `between(page number)` after each page."""
    pages: list[list[str]] = []
    while True:
        page = await store.list_memories(query)
        pages.append([m.id for m in page])
        if len(page) < query.limit:
            return pages
        await between(len(pages))
        last = page[-1]
        query = query.model_copy(update={"after": (last.created_at, last.id)})


def history(user_id: str) -> list[Memory]:
    """Turns in two threads and facts, several created at the very same moment (ties on created_at)."""
    turns = [
        memory(user_id, f"turn-{i:02}", f"turn {i}", thread_id="a" if i % 2 else "b", minutes=i // 3)
        for i in range(17)
    ]
    facts = [
        memory(user_id, f"fact-{i}", f"fact {i}", type="fact", thread_id=None, minutes=i // 2)
        for i in range(6)
    ]
    return turns + facts


@pytest.mark.parametrize("order", ["newest", "oldest"])
async def test_pages_cover_every_memory_exactly_once_while_memories_are_written(
    long_term_store: LongTermStore, new_user: NewUser, order: ListOrder
) -> None:
    user = new_user()
    existing = history(user)
    await long_term_store.put(existing)
    written: list[str] = []

    async def write(page: int) -> None:  # newer than everything listed so far, as a real write is
        new = [memory(user, f"new-{page}-{i}", "late", minutes=1000 + page) for i in range(2)]
        await long_term_store.put(new)
        written.extend(m.id for m in new)

    pages = await every_page(long_term_store, listing(user, order=order, limit=4), write)
    seen = [i for page in pages for i in page]

    assert len(seen) == len(set(seen))
    key = {m.id: (m.created_at, m.id) for m in existing}
    expected = sorted(key, key=key.__getitem__, reverse=order == "newest")
    if order == "newest":  # later memories sort before the page key: never in a later page
        assert seen == expected
    else:  # oldest first: they come at the end, after everything that existed
        assert seen[: len(expected)] == expected
        assert set(seen[len(expected) :]) <= set(written) and seen[len(expected) :]
    assert all(len(page) <= 4 for page in pages)


async def test_a_page_boundary_inside_a_run_of_equal_times_loses_nothing(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    same = [memory(user, f"m{i}", f"same moment {i}", minutes=7) for i in range(9)]
    await long_term_store.put(same)

    async def nothing(_: int) -> None:
        return None

    for order in ("newest", "oldest"):
        pages = await every_page(long_term_store, listing(user, order=order, limit=2), nothing)
        ids_ = sorted((m.id for m in same), reverse=order == "newest")
        assert [i for page in pages for i in page] == ids_


async def test_each_filter_narrows(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await long_term_store.put(
        [
            memory(user, "t-a", "turn in a", thread_id="a", minutes=0),
            memory(user, "t-b", "turn in b", thread_id="b", minutes=10),
            memory(user, "s-a", "summary of a", thread_id="a", type="summary", minutes=20),
            memory(
                user,
                "f-pref",
                "likes tea",
                type="fact",
                thread_id=None,
                minutes=30,
                metadata={"fact_type": "preference"},
            ),
            memory(
                user,
                "f-sem",
                "lives in Lisbon",
                type="fact",
                thread_id="a",
                minutes=40,
                metadata={"fact_type": "semantic"},
            ),
            memory(
                user,
                "f-old",
                "lives in Porto",
                type="fact",
                thread_id=None,
                minutes=5,
                metadata={"fact_type": "semantic"},
                superseded_by="f-sem",
                superseded_at=T0 + timedelta(minutes=40),
            ),
        ]
    )
    everything = ["f-sem", "f-pref", "s-a", "t-b", "t-a"]
    assert await ids(long_term_store, user) == everything
    assert await ids(long_term_store, user, types=["fact"]) == ["f-sem", "f-pref"]
    assert await ids(long_term_store, user, types=["turn", "summary"]) == ["s-a", "t-b", "t-a"]
    assert await ids(long_term_store, user, thread_id="a") == ["f-sem", "s-a", "t-a"]
    assert await ids(long_term_store, user, kind="preference") == ["f-pref"]
    assert await ids(long_term_store, user, kind="semantic") == ["f-sem"]
    assert await ids(long_term_store, user, since=T0 + timedelta(minutes=10)) == [
        "f-sem",
        "f-pref",
        "s-a",
        "t-b",
    ]
    assert await ids(long_term_store, user, until=T0 + timedelta(minutes=10)) == ["t-b", "t-a"]
    assert await ids(long_term_store, user, include_superseded=True) == [*everything[:-1], "f-old", "t-a"]
    assert await ids(long_term_store, user, include_superseded=True, kind="semantic") == ["f-sem", "f-old"]
    assert await ids(long_term_store, user, order="oldest") == everything[::-1]
    assert await ids(long_term_store, user, limit=2) == everything[:2]
    assert await ids(long_term_store, "someone-else") == []


async def test_as_of_shows_memory_as_it_stood(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    replaced_at = T0 + timedelta(minutes=30)
    await long_term_store.put(
        [
            memory(
                user,
                "f-porto",
                "lives in Porto",
                type="fact",
                thread_id=None,
                minutes=0,
                superseded_by="f-lisbon",
                superseded_at=replaced_at,
            ),
            memory(user, "f-lisbon", "lives in Lisbon", type="fact", thread_id=None, minutes=30),
            memory(
                user,
                "f-early",
                "was a student",
                type="fact",
                thread_id=None,
                minutes=1,
                superseded_by="f-porto",
                superseded_at=T0 + timedelta(minutes=2),
            ),
            memory(user, "t-1", "hello", minutes=10),
        ]
    )
    before = T0 + timedelta(minutes=20)

    then = await long_term_store.list_memories(listing(user, as_of=before, types=["fact"]))
    assert [m.id for m in then] == ["f-porto"]  # current then; f-lisbon did not exist yet
    assert await ids(long_term_store, user, as_of=before) == ["t-1", "f-porto"]
    assert await ids(long_term_store, user, as_of=T0 + timedelta(minutes=45), types=["fact"]) == ["f-lisbon"]
    assert await ids(long_term_store, user, as_of=replaced_at, types=["fact"]) == ["f-lisbon"]
    # Superseded before as_of: only when asked for, and still nothing created after as_of.
    assert await ids(long_term_store, user, as_of=before, types=["fact"], include_superseded=True) == [
        "f-early",
        "f-porto",
    ]
    assert await ids(long_term_store, user, as_of=T0 - timedelta(minutes=1)) == []


async def test_listing_returns_memories_without_vectors(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    stored = memory(user, "m1", "I moved to Lisbon", metadata={"fact_type": "semantic"}, type="fact")
    await long_term_store.put([stored])

    (listed,) = await long_term_store.list_memories(listing(user))

    assert listed.embedding is None
    assert listed.model_dump(exclude={"embedding"}) == stored.model_dump(exclude={"embedding"})
