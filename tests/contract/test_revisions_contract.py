"""The RevisionStore contract (storage/learning_base.py): every backend that keeps revisions passes it.

Backends: SQLite (the embedded file) and Cosmos DB on the local Cosmos-protocol server (the learning
container next to the long-term containers). Users are unique per test, so nothing leaks between tests.
What only Cosmos DB has (the container, partitioning, no TTL on the items: prune deletes them) is checked
at the end of this module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.errors import ConfigError, InvalidInputError, NotFoundError
from mcp_memory.models import Revision, Scope
from mcp_memory.storage.learning_base import RevisionStore
from tests.contract.conftest_long_term import local_cosmos_settings, open_cosmos, open_sqlite
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NewUser = Callable[[], str]


@pytest.fixture(params=["sqlite", "cosmos"])
async def revision_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RevisionStore]:
    if request.param == "sqlite":
        from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
        from mcp_memory.storage.sqlite.revisions import SqliteRevisionStore

        async with open_sqlite(tmp_path / "memory.db") as store:
            assert isinstance(store, SqliteLongTermStore)
            yield SqliteRevisionStore(store.db)
        return
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
    from mcp_memory.storage.cosmos.revisions import CosmosRevisionStore

    server: CosmosServer = request.getfixturevalue("cosmos_server")
    async with open_cosmos(local_cosmos_settings(server)) as store:
        assert isinstance(store, CosmosLongTermStore)
        container = await store.open_learning_container()
        yield CosmosRevisionStore(container, store.usage, timeout_seconds=10.0)


def revision(user_id: str, memory_id: str, content: str, *, minutes: int = 0, **fields: Any) -> Revision:
    values: dict[str, Any] = {
        "user_id": user_id,
        "memory_id": memory_id,
        "thread_id": "t1",
        "memory_type": "fact",
        "action": "create",
        "cause": "extraction",
        "content": content,
        "created_at": T0 + timedelta(minutes=minutes),
    }
    values.update(fields)
    return Revision.model_validate(values)


async def test_append_numbers_each_memorys_revisions_from_one(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user = new_user()
    first = await revision_store.append(revision(user, "f1", "budget is $10,000"))
    other = await revision_store.append(revision(user, "f2", "lives in Lisbon"))
    second = await revision_store.append(
        revision(user, "f1", "budget is $15,000", action="update", cause="user_edit", minutes=1)
    )

    assert (first.seq, second.seq, other.seq) == (1, 2, 1)
    assert first.id != second.id


async def test_history_lists_every_revision_oldest_first_as_written(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user = new_user()
    written = [
        await revision_store.append(
            revision(
                user,
                "f1",
                "budget for the Hawaii trip is $10,000",
                metadata={"confidence": 0.9, "source_turn_ids": ["t1-3"]},
                source_text="we can spend ten thousand on Hawaii",
                labels={"model": "stub"},
            )
        ),
        await revision_store.append(
            revision(
                user, "f1", "superseded", action="supersede", cause="reconcile", minutes=1, thread_id=None
            ).model_copy(update={"superseded_by": "f9", "supersede_reason": "contradict"})
        ),
        await revision_store.append(
            revision(user, "f1", "back again", action="restore", cause="rollback", minutes=2)
        ),
    ]
    await revision_store.append(revision(new_user(), "f1", "another user's memory of the same id"))

    history = await revision_store.history(user, "f1")

    assert [r.model_dump() for r in history] == [r.model_dump() for r in written]
    assert [r.seq for r in history] == [1, 2, 3]
    assert await revision_store.history(user, "nothing") == []


async def test_get_finds_a_revision_of_the_user_only(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user = new_user()
    stored = await revision_store.append(revision(user, "f1", "prefers tea", labels={"why": "asked"}))

    assert (await revision_store.get(user, stored.id)).model_dump() == stored.model_dump()
    with pytest.raises(NotFoundError):
        await revision_store.get(user, "rev_unknown")
    with pytest.raises(NotFoundError):
        await revision_store.get(new_user(), stored.id)


async def test_concurrent_appends_take_distinct_seqs(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user = new_user()
    seqs: list[int] = []

    async def append(i: int) -> None:
        seqs.append((await revision_store.append(revision(user, "f1", f"version {i}", minutes=i))).seq)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(append, i)

    assert sorted(seqs) == list(range(1, 9))
    assert [r.seq for r in await revision_store.history(user, "f1")] == list(range(1, 9))


async def test_forget_one_memory_dry_run_then_for_real(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user = new_user()
    for i in range(3):
        await revision_store.append(revision(user, "f1", f"v{i}", minutes=i))
    await revision_store.append(revision(user, "f2", "kept"))

    assert await revision_store.forget(Scope(user_id=user, memory_id="f1"), dry_run=True) == 3
    assert len(await revision_store.history(user, "f1")) == 3
    assert await revision_store.forget(Scope(user_id=user, memory_id="f1")) == 3

    assert await revision_store.history(user, "f1") == []
    assert len(await revision_store.history(user, "f2")) == 1
    assert await revision_store.forget(Scope(user_id=user, memory_id="f1")) == 0
    restarted = await revision_store.append(revision(user, "f1", "a new memory under the old id"))
    assert restarted.seq == 1


async def test_forget_a_thread_by_the_thread_id_revisions_carry(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user = new_user()
    await revision_store.append(revision(user, "f1", "from t1", thread_id="t1"))
    await revision_store.append(revision(user, "s1", "summary of t1", thread_id="t1", memory_type="summary"))
    await revision_store.append(revision(user, "f2", "from t2", thread_id="t2"))
    await revision_store.append(revision(user, "f3", "about the user", thread_id=None))

    assert await revision_store.forget(Scope(user_id=user, thread_id="t1")) == 2

    assert await revision_store.history(user, "f1") == []
    assert await revision_store.history(user, "s1") == []
    assert len(await revision_store.history(user, "f2")) == 1
    assert len(await revision_store.history(user, "f3")) == 1


async def test_forget_everything_leaves_nothing_of_the_user(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user, other = new_user(), new_user()
    stored = [
        await revision_store.append(revision(user, f"f{i}", "x", thread_id=thread))
        for i, thread in enumerate(["t1", "t2", None])
    ]
    kept = await revision_store.append(revision(other, "f0", "someone else's"))

    assert await revision_store.forget(Scope(user_id=user, everything=True)) == 3

    for r in stored:
        with pytest.raises(NotFoundError):
            await revision_store.get(user, r.id)
    assert await revision_store.forget(Scope(user_id=user, everything=True), dry_run=True) == 0
    assert (await revision_store.get(other, kept.id)).content == "someone else's"


async def test_forget_needs_a_scope(revision_store: RevisionStore, new_user: NewUser) -> None:
    with pytest.raises(InvalidInputError):
        await revision_store.forget(Scope(user_id=new_user()))


async def test_prune_deletes_what_is_older_than_the_bound_for_every_user(
    revision_store: RevisionStore, new_user: NewUser
) -> None:
    user, other = new_user(), new_user()
    now = datetime.now(UTC)
    old = await revision_store.append(revision(user, "f1", "old", created_at=now - timedelta(days=400)))
    theirs = await revision_store.append(
        revision(other, "f1", "old too", created_at=now - timedelta(days=401))
    )
    recent = await revision_store.append(revision(user, "f1", "recent", created_at=now - timedelta(days=1)))

    assert (
        await revision_store.prune(now - timedelta(days=365)) >= 2
    )  # a shared (live) database may hold more

    for user_id, gone in ((user, old), (other, theirs)):
        with pytest.raises(NotFoundError):
            await revision_store.get(user_id, gone.id)
    assert [r.id for r in await revision_store.history(user, "f1")] == [recent.id]


# -- Cosmos DB only: the learning container -------------------------------------------------------------


async def test_cosmos_revisions_live_in_the_memorys_partition_without_a_ttl(
    cosmos_server: CosmosServer, new_user: NewUser
) -> None:
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
    from mcp_memory.storage.cosmos.revisions import CosmosRevisionStore

    settings = local_cosmos_settings(cosmos_server)
    user = new_user()
    async with open_cosmos(settings) as store:
        assert isinstance(store, CosmosLongTermStore)
        container = await store.open_learning_container()
        props = await container.read()
        assert props["id"] == f"{settings.memories_container}-learning"
        assert props["partitionKey"]["paths"] == ["/user_id", "/group_id"]
        assert props["partitionKey"]["kind"] == "MultiHash"
        assert props["defaultTtl"] == -1
        stored = await CosmosRevisionStore(container, store.usage, timeout_seconds=10.0).append(
            revision(user, "fact_1", "prefers tea")
        )

        docs = [
            d
            async for d in container.query_items(
                "SELECT * FROM c WHERE c.user_id = @u", parameters=[{"name": "@u", "value": user}]
            )
        ]
        assert len(docs) == 1
        assert (docs[0]["group_id"], docs[0]["revision_id"]) == ("fact_1", stored.id)
        # Prune deletes it and gives its bytes back; an expiry Cosmos DB performed would not.
        assert "ttl" not in docs[0]

    async with open_cosmos(settings) as store:  # reopening validates the existing container cleanly
        assert isinstance(store, CosmosLongTermStore)
        await store.open_learning_container()


async def test_cosmos_learning_container_with_another_key_is_refused(cosmos_server: CosmosServer) -> None:
    from azure.cosmos import PartitionKey

    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

    settings = local_cosmos_settings(cosmos_server)
    async with open_cosmos(settings) as store:
        assert isinstance(store, CosmosLongTermStore)
        await store._database.create_container(
            f"{settings.memories_container}-learning", partition_key=PartitionKey(path="/user_id")
        )
        with pytest.raises(ConfigError, match="partition key"):
            await store.open_learning_container()
