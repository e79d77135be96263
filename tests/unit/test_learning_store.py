"""The SQLite revision store and trigger counters, and the long-term store's learning queries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from mcp_memory.errors import NotFoundError
from mcp_memory.llm.hash_embedder import HashingEmbedder
from mcp_memory.models import Memory, Revision, Scope, content_hash, utcnow
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
from mcp_memory.storage.sqlite.revisions import SqliteRevisionStore, SqliteTriggerCounters

pytestmark = pytest.mark.anyio
EMBEDDER = HashingEmbedder(64)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SqliteDatabase]:
    async with SqliteDatabase.open(tmp_path / "memory.db") as opened:
        yield opened


def _revision(memory_id: str, content: str, *, user: str = "u", thread: str | None = "t") -> Revision:
    return Revision(
        user_id=user,
        memory_id=memory_id,
        thread_id=thread,
        memory_type="fact",
        action="update",
        cause="user_edit",
        content=content,
    )


async def test_revisions_are_numbered_per_memory_and_listed_in_order(db: SqliteDatabase) -> None:
    store = SqliteRevisionStore(db)
    first = await store.append(_revision("m1", "one"))
    await store.append(_revision("m2", "other"))
    second = await store.append(_revision("m1", "two"))
    assert (first.seq, second.seq) == (1, 2)
    assert [r.content for r in await store.history("u", "m1")] == ["one", "two"]
    assert (await store.get("u", second.id)).content == "two"
    with pytest.raises(NotFoundError, match="no revision"):
        await store.get("someone-else", second.id)


async def test_forget_removes_revisions_by_memory_thread_and_user(db: SqliteDatabase) -> None:
    store = SqliteRevisionStore(db)
    await store.append(_revision("m1", "a", thread="t1"))
    await store.append(_revision("m2", "b", thread="t1"))
    await store.append(_revision("m3", "c", thread="t2"))
    await store.append(_revision("m4", "d", user="v"))
    assert await store.forget(Scope(user_id="u", memory_id="m1"), dry_run=True) == 1
    assert await store.history("u", "m1") != []
    assert await store.forget(Scope(user_id="u", memory_id="m1")) == 1
    assert await store.forget(Scope(user_id="u", thread_id="t1")) == 1
    assert await store.forget(Scope(user_id="u", everything=True)) == 1
    assert await store.history("u", "m3") == [] and len(await store.history("v", "m4")) == 1


async def test_retention_prunes_old_revisions(db: SqliteDatabase) -> None:
    store = SqliteRevisionStore(db)
    old = _revision("m1", "old").model_copy(update={"created_at": utcnow() - timedelta(days=400)})
    await store.append(old)
    await store.append(_revision("m1", "new"))
    assert await store.prune(utcnow() - timedelta(days=365)) == 1
    assert [r.content for r in await store.history("u", "m1")] == ["new"]


async def test_concurrent_increments_fire_a_trigger_exactly_once_per_multiple(tmp_path: Path) -> None:
    # Two connections to one file stand for two replicas sharing the store.
    async with SqliteDatabase.open(tmp_path / "m.db") as one, SqliteDatabase.open(tmp_path / "m.db") as two:
        counters = [SqliteTriggerCounters(one), SqliteTriggerCounters(two)]
        seen: list[int] = []

        async def bump(i: int) -> None:
            seen.append(await counters[i % 2].increment("u", "turns:t"))

        async with anyio.create_task_group() as group:
            for i in range(40):
                group.start_soon(bump, i)
    assert sorted(seen) == list(range(1, 41))
    assert sum(1 for n in seen if n % 10 == 0) == 4


async def test_marks_are_compare_and_set_and_windows_expire(db: SqliteDatabase) -> None:
    counters = SqliteTriggerCounters(db)
    assert await counters.compare_and_set("u", "extracted:t", None, "a")
    assert not await counters.compare_and_set("u", "extracted:t", None, "b")
    assert await counters.compare_and_set("u", "extracted:t", "a", "b")
    assert await counters.read("u", "extracted:t") == "b"
    assert await counters.increment("u", "llm_calls:1", ttl_seconds=-1) == 1  # already expired
    assert await counters.increment("u", "llm_calls:1", ttl_seconds=3600) == 1  # so it starts again
    assert await counters.increment("u", "llm_calls:1", ttl_seconds=3600) == 2
    assert await counters.forget("u", prefix="extracted:") == 1
    assert await counters.read("u", "extracted:t") is None
    assert await counters.forget("u") == 1


async def test_long_term_finds_by_hash_nearest_and_active(db: SqliteDatabase) -> None:
    async with SqliteLongTermStore.open(db, EMBEDDER.spec) as store:
        texts = ["The user is vegetarian", "The deploy target is eu-west", "The user is vegetarian!"]
        facts = [
            Memory(
                id=f"fact_{i}",
                user_id="u",
                type="fact",
                content=t,
                embedding=EMBEDDER.embed_now([t])[0].tolist(),
            )
            for i, t in enumerate(texts)
        ]
        await store.put(facts)
        await store.put(
            [facts[2].model_copy(update={"superseded_by": "fact_0", "supersede_reason": "duplicate"})]
        )
        assert [
            m.id
            for m in await store.find_by_hash("u", content_hash("the user is  VEGETARIAN"), types=("fact",))
        ] == ["fact_0"]
        assert await store.find_by_hash("u", content_hash("The user is vegetarian"), types=("turn",)) == []
        near = await store.similar(
            "u", facts[0].embedding or [], types=("fact",), min_similarity=0.5, limit=5
        )  # the superseded near-twin is not offered
        assert [h.memory.id for h in near] == ["fact_0"] and near[0].score == pytest.approx(1.0, abs=1e-5)
        active = await store.list_active("u", types=("fact",), limit=10)
        assert [m.id for m in active] == ["fact_1", "fact_0"]  # newest first, superseded left out
        later = await store.list_active("u", types=("fact",), limit=10, changed_since=facts[0].created_at)
        assert [m.id for m in later] == ["fact_1"]


async def test_forgetting_a_thread_spares_the_counters_of_threads_whose_id_it_begins(
    db: SqliteDatabase,
) -> None:
    from mcp_memory.learning.extraction import mark_key
    from mcp_memory.learning.triggers import turns_key

    counters = SqliteTriggerCounters(db)
    for thread in ("t1", "t10", "t1:x"):
        await counters.increment("u", turns_key(thread))
        assert await counters.compare_and_set("u", mark_key(thread), None, "turn_a")
    await counters.forget("u", prefix=turns_key("t1"))
    await counters.forget("u", prefix=mark_key("t1"))
    assert await counters.read("u", mark_key("t1")) is None
    assert await counters.read("u", mark_key("t10")) == "turn_a"
    assert await counters.read("u", mark_key("t1:x")) == "turn_a"
    assert await counters.increment("u", turns_key("t10")) == 2, "t10's turn count survived"
    assert await counters.increment("u", turns_key("t1")) == 1, "t1's was forgotten"
