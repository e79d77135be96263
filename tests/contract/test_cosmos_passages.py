"""How the Cosmos DB store keeps a long memory's passages, on the local Cosmos-protocol server: one item
per passage after the first, in the memory's own partition, written before the memory item, never
listed as memories, rewritten with the memory and removed with it (storage/cosmos/passages.py).
Search over passages needs VectorDistance, which the local server lacks: its SQL is checked in
test_cosmos_sql.py, its ranking in tests/unit/test_cosmos_passage_ranking.py.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcp_memory.errors import EmbeddingMismatchError, InvalidInputError
from mcp_memory.models import ListQuery, Scope
from mcp_memory.search.passages import passages
from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
from mcp_memory.storage.cosmos.passages import PASSAGE_TYPE, passage_version
from tests.contract.conftest_long_term import EMBEDDING, embed, local_cosmos_settings, memory
from tests.contract.test_cosmos_local import raw
from tests.contract.test_passages_contract import LONG_CONTENT, long_memory, paragraph
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio

OTHER_CONTENT = "\n\n".join(paragraph(w) for w in ("violin bow rosin", "chess opening gambit", "river canoe"))


@pytest.fixture
async def store(cosmos_server: CosmosServer) -> AsyncIterator[CosmosLongTermStore]:
    async with CosmosLongTermStore.open(local_cosmos_settings(cosmos_server), EMBEDDING) as opened:
        yield opened


@pytest.fixture
def user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def passage_items(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((d for d in docs if d["type"] == PASSAGE_TYPE), key=lambda d: d["position"])


async def test_passages_after_the_first_are_items_in_the_memorys_partition(
    store: CosmosLongTermStore, user: str
) -> None:
    long = long_memory(user)
    await store.put([long])

    docs = await raw(store, user)
    item = next(d for d in docs if d["id"] == "long")
    items = passage_items(docs)
    spans = passages(LONG_CONTENT)

    assert item["passage_spans"] == [list(s) for s in spans]
    assert item["passage_version"] == passage_version(long.content_hash)
    assert item["embedding"] == pytest.approx(embed(LONG_CONTENT[spans[0].start : spans[0].end]), abs=1e-6)
    assert [d["position"] for d in items] == list(range(1, len(spans)))
    assert [d["span"] for d in items] == [list(s) for s in spans[1:]]
    for d, span in zip(items, spans[1:], strict=True):
        assert d["id"] == f"long:p:{item['passage_version']}:{d['position']}"
        assert (d["user_id"], d["thread_id"], d["memory_id"], d["memory_type"]) == (
            user,
            "t1",
            "long",
            "turn",
        )
        assert d["created_at"] == item["created_at"] and d["superseded_by"] is None
        assert "content" not in d and "index_text" not in d  # no text: no stored bytes, no full-text entry
        assert d["embedding"] == pytest.approx(embed(LONG_CONTENT[span.start : span.end]), abs=1e-6)


async def test_a_short_memory_is_stored_as_before(store: CosmosLongTermStore, user: str) -> None:
    short = memory(user, "short", "just one passage")
    await store.put([short.model_copy(update={"passage_embeddings": [short.embedding]})])

    (doc,) = [d for d in await raw(store, user) if d["type"] == "turn"]

    assert "passage_spans" not in doc and "passage_version" not in doc
    assert passage_items(await raw(store, user)) == []


async def test_new_content_replaces_the_old_passages(store: CosmosLongTermStore, user: str) -> None:
    fact = long_memory(user, "fact-1", type="fact", thread_id=None)
    await store.put([fact])
    rewritten = long_memory(user, "fact-1", content=OTHER_CONTENT, type="fact", thread_id=None)
    await store.put([rewritten])

    items = passage_items(await raw(store, user))

    assert {d["passage_version"] for d in items} == {passage_version(rewritten.content_hash)}
    assert len(items) == len(passages(OTHER_CONTENT)) - 1
    assert await store.stored_bytes(user) == len(OTHER_CONTENT.encode())


async def test_rewritten_without_passage_vectors_the_passages_stay_and_follow_its_supersession(
    store: CosmosLongTermStore, user: str
) -> None:
    await store.put([long_memory(user)])
    before = passage_items(await raw(store, user))
    (listed,) = await store.list_memories(ListQuery(user_id=user, limit=5))
    assert listed.passage_embeddings is None  # listings carry no vectors
    first_only = (await store.get(user, "long")).model_copy(update={"passage_embeddings": None})

    await store.put(
        [first_only.model_copy(update={"superseded_by": "other", "supersede_reason": "duplicate"})]
    )

    after = passage_items(await raw(store, user))
    assert [d["id"] for d in after] == [d["id"] for d in before]
    assert all(d["superseded_by"] == "other" for d in after)  # the search filter's copy follows
    assert (await store.get(user, "long")).passage_embeddings is not None


async def test_a_shorter_content_without_passage_vectors_drops_the_passages(
    store: CosmosLongTermStore, user: str
) -> None:
    await store.put([long_memory(user)])
    await store.put([memory(user, "long", "now a short turn")])

    docs = await raw(store, user)
    assert passage_items(docs) == []
    assert "passage_spans" not in next(d for d in docs if d["id"] == "long")


async def test_passage_vectors_that_do_not_fit_are_refused_before_anything_is_written(
    store: CosmosLongTermStore, user: str
) -> None:
    long = long_memory(user)
    vectors = long.passage_embeddings or []

    with pytest.raises(InvalidInputError, match="passage vectors for"):
        await store.put([long.model_copy(update={"passage_embeddings": vectors[:-1]})])
    with pytest.raises(EmbeddingMismatchError, match="passage vector"):
        await store.put([long.model_copy(update={"passage_embeddings": [*vectors[:-1], [0.5, 0.5]]})])

    assert await raw(store, user) == []


@pytest.mark.parametrize(
    ("scope", "left"),
    [({"memory_id": "long"}, ["t2-turn"]), ({"thread_id": "t1"}, ["t2-turn"]), ({"everything": True}, [])],
    ids=["memory", "thread", "everything"],
)
async def test_forget_removes_every_passage(
    store: CosmosLongTermStore, user: str, scope: dict[str, Any], left: list[str]
) -> None:
    await store.put([long_memory(user), memory(user, "t2-turn", "elsewhere", thread_id="t2")])
    assert passage_items(await raw(store, user))

    counted = await store.forget(Scope(user_id=user, **scope))

    assert counted == {"turn": 2 if scope.get("everything") else 1}  # memories, never passages
    assert passage_items(await raw(store, user)) == []
    assert [m.id for m in await store.memories_of(user)] == left


async def test_forget_removes_passages_of_a_write_that_never_reached_its_memory(
    store: CosmosLongTermStore, user: str
) -> None:
    # What a crash between the passages and the memory item leaves: passages no memory item names.
    long = long_memory(user)
    await store.put([long])
    memory_item = next(d for d in await raw(store, user) if d["id"] == "long")
    await store._turns.delete_item("long", partition_key=[user, "t1"])
    assert passage_items(await raw(store, user))
    assert [m.id for m in await store.memories_of(user)] == []

    await store.forget(Scope(user_id=user, memory_id=memory_item["id"]))

    assert passage_items(await raw(store, user)) == []
