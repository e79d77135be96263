"""The LongTermStore contract, stored bytes (security.max_stored_bytes): every backend must pass it.

Part of the long-term contract (test_long_term_contract.py), in a file of its own for its fixtures:
stores opened with a limit, and two stores on the same data (two processes on one SQLite file, two
replicas on one Cosmos database). The counter must always equal a recount of what is stored: the
memories' content, and each revision's content and source text (the revision store beside the
long-term store counts toward the same figure).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.errors import LimitExceededError, NotFoundError
from mcp_memory.models import Revision, Scope
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.learning_base import RevisionStore
from mcp_memory.storage.usage import revision_bytes
from tests.contract.conftest_long_term import EMBEDDING, local_cosmos_settings, memory
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio

# Opens a store on this test's data (the same data each call) with this max_stored_bytes.
Opener = Callable[[int | None], AbstractAsyncContextManager[LongTermStore]]


@pytest.fixture(params=["sqlite", "cosmos"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "sqlite":
        from mcp_memory.storage.sqlite.db import SqliteDatabase
        from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

        @asynccontextmanager
        async def open_sqlite(limit: int | None) -> AsyncIterator[LongTermStore]:
            async with (
                SqliteDatabase.open(tmp_path / "memory.db") as db,
                SqliteLongTermStore.open(db, EMBEDDING, max_stored_bytes=limit) as store,
            ):
                yield store

        return open_sqlite

    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

    settings = local_cosmos_settings(request.getfixturevalue("cosmos_server"))

    @asynccontextmanager
    async def open_cosmos(limit: int | None) -> AsyncIterator[LongTermStore]:
        async with CosmosLongTermStore.open(settings, EMBEDDING, max_stored_bytes=limit) as store:
            yield store

    return open_cosmos


def user() -> str:
    return f"u-{uuid.uuid4().hex[:12]}"


async def recount(store: LongTermStore, user_id: str) -> int:
    return sum(len(m.content.encode()) for m in await store.memories_of(user_id))


async def assert_exact(store: LongTermStore, user_id: str) -> int:
    counted = await store.stored_bytes(user_id)
    assert counted == await recount(store, user_id)
    return counted


async def revision_store(store: LongTermStore) -> RevisionStore:
    """The revisions kept beside this long-term store, as learning opens them."""
    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

    if isinstance(store, SqliteLongTermStore):
        from mcp_memory.storage.sqlite.revisions import SqliteRevisionStore

        return SqliteRevisionStore(store.db)
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
    from mcp_memory.storage.cosmos.revisions import CosmosRevisionStore

    assert isinstance(store, CosmosLongTermStore)
    return CosmosRevisionStore(await store.open_learning_container(), store.usage, timeout_seconds=10.0)


def revision(user_id: str, memory_id: str, content: str, **fields: Any) -> Revision:
    values: dict[str, Any] = {"memory_type": "fact", "action": "update", "cause": "user_edit"}
    values.update(user_id=user_id, memory_id=memory_id, content=content, **fields)
    return Revision.model_validate(values)


async def assert_exact_with(
    store: LongTermStore, revisions: RevisionStore, user_id: str, memory_ids: Sequence[str]
) -> int:
    """The counter against a recount of the memories and of the revisions of these memories."""
    counted = await store.stored_bytes(user_id)
    history = [r for m in memory_ids for r in await revisions.history(user_id, m)]
    assert counted == await recount(store, user_id) + sum(
        revision_bytes(r.content, r.source_text) for r in history
    )
    return counted


async def test_stored_bytes_follow_every_write_and_forget(opener: Opener) -> None:
    ann, bob = user(), user()
    async with opener(None) as store:
        assert await store.stored_bytes(ann) == 0
        await store.put([memory(ann, "a1", "café"), memory(ann, "a2", "hello", thread_id="t2")])
        assert await assert_exact(store, ann) == 5 + 5  # UTF-8 bytes, not characters
        await store.put([memory(ann, "a1", "café")])  # the same memory again: stored once
        assert await assert_exact(store, ann) == 10
        await store.put([memory(ann, "s1", "a summary", type="summary")])
        await store.put([memory(ann, "s1", "a longer summary", type="summary")])  # rewritten
        await store.put([memory(ann, "f1", "a fact", type="fact", thread_id=None)])
        await store.put([memory(ann, "f1", "a fact, moved", type="fact")])  # user level to thread
        superseded = memory(ann, "a2", "hello", thread_id="t2", superseded_by="f1", supersede_reason="x")
        await store.put([superseded])
        assert await assert_exact(store, ann) == 10 + 16 + 13
        await store.put([memory(bob, "b1", "bob's")])
        assert await assert_exact(store, bob) == 5

        await store.forget(Scope(user_id=ann, memory_id="s1"))
        assert await assert_exact(store, ann) == 10 + 13
        await store.forget(Scope(user_id=ann, thread_id="t2"), dry_run=True)
        assert await assert_exact(store, ann) == 10 + 13
        await store.forget(Scope(user_id=ann, thread_id="t2"))
        assert await assert_exact(store, ann) == 5 + 13
        await store.forget(Scope(user_id=ann, everything=True))
        assert await assert_exact(store, ann) == 0
        assert await assert_exact(store, bob) == 5  # another user's count is untouched


async def test_a_write_past_the_limit_is_refused_and_stores_nothing(opener: Opener) -> None:
    ann = user()
    async with opener(100) as store:
        await store.put([memory(ann, "a1", "x" * 60)])
        with pytest.raises(LimitExceededError, match=r"60 of 100 bytes.*max_stored_bytes.*41 more"):
            await store.put([memory(ann, "a2", "y" * 41)])
        with pytest.raises(LimitExceededError):  # a batch is refused whole
            await store.put([memory(ann, "s1", "z" * 10, type="summary"), memory(ann, "a3", "w" * 40)])
        for refused in ("a2", "a3", "s1"):
            with pytest.raises(NotFoundError):
                await store.get(ann, refused)
        assert await assert_exact(store, ann) == 60

        await store.put([memory(ann, "a2", "y" * 40)])  # up to the limit exactly
        with pytest.raises(LimitExceededError):
            await store.put([memory(ann, "a2", "y" * 41)])  # a replacement that grows past it
        assert (await store.get(ann, "a2")).content == "y" * 40
        # What does not grow the count always passes: a supersession, a shorter rewrite.
        await store.put([memory(ann, "a2", "y" * 40, superseded_by="a1", supersede_reason="x")])
        await store.put([memory(ann, "a1", "x" * 20)])
        assert await assert_exact(store, ann) == 60


async def test_concurrent_writers_on_two_stores_keep_the_count_exact(opener: Opener) -> None:
    ann = user()
    async with opener(1000) as first, opener(1000) as second:
        refused: list[int] = []

        async def write(i: int) -> None:
            store = first if i % 2 else second
            try:
                await store.put([memory(ann, f"m{i}", f"{i:02d}" + "x" * 98)])  # 100 bytes each
            except LimitExceededError:
                refused.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(write, i)
        assert len(refused) == 6  # ten fit the limit exactly, whichever won
        assert await assert_exact(first, ann) == 1000
        assert await second.stored_bytes(ann) == 1000

        async def change(i: int) -> None:  # stored ones only: each shrinks the count, never refused
            store = first if i % 2 else second
            if i % 4 == 0:
                await store.forget(Scope(user_id=ann, memory_id=f"m{i}"))
            else:
                await store.put([memory(ann, f"m{i}", "short")])

        async with anyio.create_task_group() as tg:
            for i in set(range(16)) - set(refused):
                tg.start_soon(change, i)
        assert await assert_exact(first, ann) == await second.stored_bytes(ann)


async def test_revisions_count_through_appends_forget_and_prune(opener: Opener) -> None:
    ann, bob = user(), user()
    ids = ["f1", "f2", "s1"]
    long_ago = datetime.now(UTC) - timedelta(days=400)
    async with opener(None) as store:
        revisions = await revision_store(store)
        await store.put(
            [
                memory(ann, "f1", "café", type="fact"),
                memory(ann, "f2", "second", type="fact", thread_id="t2"),
                memory(ann, "s1", "a summary", type="summary"),
                memory(bob, "f1", "bob's", type="fact"),
            ]
        )
        assert await assert_exact_with(store, revisions, ann, ids) == 5 + 6 + 9
        await revisions.append(
            revision(ann, "f1", "café", thread_id="t1", source_text="le café", created_at=long_ago)
        )
        await revisions.append(revision(ann, "f1", "café", thread_id="t1"))  # no source text: content only
        await revisions.append(
            revision(ann, "f2", "second", thread_id="t2", source_text="2nd", created_at=long_ago)
        )
        await revisions.append(revision(ann, "s1", "a summary", thread_id="t1", memory_type="summary"))
        await revisions.append(revision(bob, "f1", "bob's", source_text="bob"))
        assert await assert_exact_with(store, revisions, ann, ids) == 20 + (5 + 8) + 5 + (6 + 3) + 9
        assert await assert_exact_with(store, revisions, bob, ["f1"]) == 5 + 5 + 3

        assert await revisions.prune(datetime.now(UTC) - timedelta(days=365)) >= 2
        assert await assert_exact_with(store, revisions, ann, ids) == 20 + 5 + 9

        await revisions.forget(Scope(user_id=ann, memory_id="f1"), dry_run=True)
        assert await assert_exact_with(store, revisions, ann, ids) == 34
        for scope in (Scope(user_id=ann, memory_id="f1"), Scope(user_id=ann, thread_id="t2")):
            await revisions.append(revision(ann, "f2", "second", thread_id="t2", source_text="again"))
            await store.forget(scope)  # the service's order: the memories, then their revisions
            await revisions.forget(scope)
            await assert_exact_with(store, revisions, ann, ids)
        assert await assert_exact_with(store, revisions, ann, ids) == 9 + 9

        everything = Scope(user_id=ann, everything=True)
        await store.forget(everything)
        await revisions.forget(everything)
        assert await assert_exact_with(store, revisions, ann, ids) == 0
        assert await assert_exact_with(store, revisions, bob, ["f1"]) == 13  # another user's is untouched


async def test_a_first_count_on_cosmos_takes_the_revisions_without_a_ttl(
    cosmos_server: CosmosServer,
) -> None:
    """Revisions written before they were counted carry their retention as a ttl and expire by
    themselves: a user's first count leaves them out, and pruning them gives nothing back."""
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
    from mcp_memory.storage.cosmos.revisions import CosmosRevisionStore, revision_document

    ann = user()
    long_ago = datetime.now(UTC) - timedelta(days=400)
    async with CosmosLongTermStore.open(local_cosmos_settings(cosmos_server), EMBEDDING) as store:
        container = await store.open_learning_container()
        revisions = CosmosRevisionStore(container, store.usage, timeout_seconds=10.0)
        legacy = revision(ann, "f1", "expires by itself", source_text="old", created_at=long_ago)
        await container.create_item(revision_document(legacy, 1) | {"ttl": 365 * 86_400})
        counted = revision(ann, "f1", "counted", source_text="said so")
        await container.create_item(revision_document(counted, 2))

        assert await store.stored_bytes(ann) == 7 + 7
        await store.put([memory(ann, "f1", "café", type="fact")])  # the first count is stored here
        assert await store.stored_bytes(ann) == 7 + 7 + 5
        await revisions.prune(datetime.now(UTC) - timedelta(days=365))
        assert [r.content for r in await revisions.history(ann, "f1")] == ["counted"]
        assert await assert_exact_with(store, revisions, ann, ["f1"]) == 7 + 7 + 5
