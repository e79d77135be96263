"""The Cosmos DB store's LateContext on the local Cosmos-protocol server: a turn's full-text context gets
the turns after it as they arrive, loses a forgotten turn's words, and a rewrite never brings a
forgotten turn back (search/context.py, storage/base.py).

That server has no FullTextScore, so search cannot run here (test_cosmos_service.py): what full-text
search would index, the stored documents' index_text and index_context, is read from the containers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from mcp_memory.config import Settings
from mcp_memory.models import Memory, Scope
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.base import LateContext
from mcp_memory.storage.cosmos.documents import context_patch, document_hash
from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
from mcp_memory.storage.usage import content_bytes
from tests.contract.conftest_long_term import EMBEDDING, local_cosmos_settings, memory, on_local_cosmos
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio
USER = "ann"


@pytest.fixture
async def cosmos_service(
    fast_settings: Settings, cosmos_server: CosmosServer
) -> AsyncIterator[MemoryService]:
    async with open_service(on_local_cosmos(fast_settings, cosmos_server, turn_ttl_seconds=3600)) as service:
        yield service


@pytest.fixture
async def cosmos_store(cosmos_server: CosmosServer) -> AsyncIterator[CosmosLongTermStore]:
    async with CosmosLongTermStore.open(local_cosmos_settings(cosmos_server), EMBEDDING) as store:
        yield store


def store_of(service: MemoryService) -> CosmosLongTermStore:
    store = service.stores.long_term
    assert isinstance(store, CosmosLongTermStore)
    return store


async def stored(store: CosmosLongTermStore, memory_id: str) -> dict[str, Any] | None:
    """The turn's document as stored, or None."""
    docs = [
        d
        async for d in store._turns.query_items(
            "SELECT * FROM c WHERE c.id = @id", parameters=[{"name": "@id", "value": memory_id}]
        )
    ]
    return docs[0] if docs else None


def indexed(doc: dict[str, Any] | None) -> str:
    """What full-text search indexes for the document, lowercased; checks the layout on the way."""
    assert doc is not None
    assert doc["index_text"] == f"{doc['content']}\n{doc['index_context']}"
    assert doc["doc_hash"] == document_hash(doc), "the document hash follows the rewrite"
    return str(doc["index_text"]).lower()


async def test_a_turn_holds_the_next_turns_words_once_it_arrives(cosmos_service: MemoryService) -> None:
    store = store_of(cosmos_service)
    assert isinstance(store, LateContext)
    answer = await cosmos_service.add_turn(USER, "trip", "user", "Finally booked it, ten nights!")
    assert "lisbon" not in indexed(await stored(store, answer.turn.id))

    question = await cosmos_service.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon did you book?")
    doc = await stored(store, answer.turn.id)
    assert "lisbon" in indexed(doc)
    assert doc is not None and "Lisbon" in doc["index_context"]
    assert 0 < doc["ttl"] <= 3600, "a rewrite never keeps a turn longer than its TTL"
    assert "finally booked" in indexed(await stored(store, question.turn.id)), "the turn before it"
    # Contexts are not content: the stored-bytes count is the contents' alone.
    contents = [answer.turn.content, question.turn.content]
    assert await store.stored_bytes(USER) == sum(content_bytes(c) for c in contents)
    assert (await cosmos_service.get_memory(USER, answer.turn.id)).index_context == doc["index_context"]


async def test_forgetting_the_middle_turn_removes_its_words_from_both_neighbours(
    cosmos_service: MemoryService,
) -> None:
    store = store_of(cosmos_service)
    first = await cosmos_service.add_turn(USER, "trip", "user", "We landed this morning.")
    middle = await cosmos_service.add_turn(USER, "trip", "user", "My passport number is Zanzibar-7731.")
    last = await cosmos_service.add_turn(USER, "trip", "assistant", "Enjoy the beaches of Portugal!")
    assert "zanzibar" in indexed(await stored(store, first.turn.id))
    assert "zanzibar" in indexed(await stored(store, last.turn.id))

    await cosmos_service.forget(USER, memory_id=middle.turn.id)

    assert await stored(store, middle.turn.id) is None
    for turn in (first, last):
        doc = await stored(store, turn.turn.id)
        assert "zanzibar" not in indexed(doc) and "7731" not in indexed(doc)
        assert doc is not None and "zanzibar" not in doc["index_context"].lower()
    assert "portugal" in indexed(await stored(store, first.turn.id)), "its new neighbour after it"
    assert "landed" in indexed(await stored(store, last.turn.id)), "its new neighbour before it"


async def test_a_rewrite_never_brings_a_forgotten_turn_back(cosmos_service: MemoryService) -> None:
    store = store_of(cosmos_service)
    kept = await cosmos_service.add_turn(USER, "trip", "user", "Kept turn.")
    gone = await cosmos_service.add_turn(USER, "trip", "user", "Forgotten turn.")
    await cosmos_service.forget(USER, memory_id=gone.turn.id)

    assert await store.set_index_contexts(USER, {gone.turn.id: "new words"}) == 0
    assert await store.set_index_contexts(USER, {gone.turn.id: "x", kept.turn.id: "fresh context"}) == 1
    assert await store.set_index_contexts(USER, {}) == 0
    assert await stored(store, gone.turn.id) is None
    assert "fresh context" in indexed(await stored(store, kept.turn.id))
    assert await store.set_index_contexts("someone-else", {kept.turn.id: "theirs"}) == 0


async def test_a_turn_forgotten_after_the_read_is_skipped_not_recreated(
    cosmos_service: MemoryService,
) -> None:
    store = store_of(cosmos_service)
    turn = (await cosmos_service.add_turn(USER, "trip", "user", "Soon forgotten.")).turn
    read = await stored(store, turn.id)
    assert read is not None
    await cosmos_service.forget(USER, memory_id=turn.id)

    assert await store._writes._rewrite_context(USER, read, "late words") is False  # the patch: 404
    assert await stored(store, turn.id) is None


async def test_a_turn_changed_after_the_read_is_read_again(cosmos_service: MemoryService) -> None:
    store = store_of(cosmos_service)
    turn = (await cosmos_service.add_turn(USER, "trip", "user", "Changed meanwhile.")).turn
    read = await stored(store, turn.id)
    assert read is not None
    assert await store.set_index_contexts(USER, {turn.id: "someone else's words"}) == 1  # a new ETag

    assert await store._writes._rewrite_context(USER, read, "my words") is True  # 412, read, patch
    doc = await stored(store, turn.id)
    assert doc is not None and doc["index_context"] == "my words"
    assert indexed(doc) == "changed meanwhile.\nmy words"


async def test_turns_around_is_the_window_of_active_turns(cosmos_store: CosmosLongTermStore) -> None:
    store = cosmos_store
    user = "window"
    turns = [memory(user, f"w{i}", f"turn {i}", minutes=i) for i in range(5)]
    other = memory(user, "o1", "another thread", thread_id="t2", minutes=2)
    fact = memory(user, "f1", "a fact about the user", thread_id=None, type="fact", minutes=2)
    await store.put([*turns, other, fact])

    async def window(memory_id: str, reach: int) -> list[str]:
        return [m.id for m in await store.turns_around(user, memory_id, reach=reach)]

    assert await window("w2", 1) == ["w1", "w2", "w3"]
    assert await window("w2", 2) == ["w0", "w1", "w2", "w3", "w4"]
    assert await window("w0", 2) == ["w0", "w1", "w2"]
    assert await window("w4", 9) == ["w0", "w1", "w2", "w3", "w4"]
    assert await window("w3", 0) == ["w3"]
    assert await window("f1", 2) == [], "no thread"
    assert await window("nope", 2) == [], "gone"
    assert await window("w2", 1) == ["w1", "w2", "w3"]
    assert await store.turns_around("someone-else", "w2", reach=1) == []

    await store.forget(Scope(user_id=user, memory_id="w3"))
    assert await window("w2", 1) == ["w1", "w2", "w4"], "forgotten turns are not in the window"
    assert await window("w3", 1) == [], "nor is the window of a forgotten turn"
    found = await store.turns_around(user, "w2", reach=1)
    assert all(isinstance(m, Memory) and m.thread_id == "t1" for m in found)


async def test_turns_at_the_same_moment_are_ordered_by_id(cosmos_store: CosmosLongTermStore) -> None:
    store = cosmos_store
    user = "ties"
    # Created in an order their ids do not follow; k0 before them, k9 after.
    same = [memory(user, f"k{c}", f"turn {c}", minutes=1) for c in "dbeac"]
    await store.put([memory(user, "k0", "first", minutes=0), *same, memory(user, "k9", "last", minutes=2)])

    async def window(memory_id: str, reach: int) -> list[str]:
        return [m.id for m in await store.turns_around(user, memory_id, reach=reach)]

    assert await window("kc", 1) == ["kb", "kc", "kd"]
    assert await window("k0", 2) == ["k0", "ka", "kb"], "the cut reads its last moment whole"
    assert await window("k9", 2) == ["kd", "ke", "k9"]
    recent = await store.recent(user, "t1", limit=7)
    assert [m.id for m in recent] == ["k0", "ka", "kb", "kc", "kd", "ke", "k9"], "as recent() orders them"


def test_the_patch_sets_the_context_its_text_and_hash_and_keeps_the_expiry() -> None:
    doc: dict[str, Any] = {
        "id": "x",
        "content": "hello",
        "index_text": "hello\nold",
        "index_context": "old",
        "ttl": 100,
        "_ts": 1000,
        "_etag": "e",
    }
    doc["doc_hash"] = document_hash(doc)
    operations = {op["path"]: op["value"] for op in context_patch(doc, "new", now=1030.2)}
    assert operations["/index_context"] == "new"
    assert operations["/index_text"] == "hello\nnew"
    assert operations["/ttl"] == 69, "31 seconds of the 100 had passed since the last write"
    patched = {**doc, **{k.lstrip("/"): v for k, v in operations.items()}}
    assert operations["/doc_hash"] == document_hash(patched)
    assert all(op["op"] == "set" for op in context_patch(doc, "new", now=1030.2))

    assert context_patch(doc, "old", now=5000) == [], "the same context: nothing to write"
    assert context_patch({**doc, "ttl": 10}, "new", now=9999)[2] == {"op": "set", "path": "/ttl", "value": 1}
    no_ttl = {k: v for k, v in doc.items() if k != "ttl"}
    assert "/ttl" not in {op["path"] for op in context_patch(no_ttl, "new", now=1030.2)}
    empty = {op["path"]: op["value"] for op in context_patch(doc, "", now=1000)}
    assert empty["/index_text"] == "hello" and empty["/index_context"] == ""


async def test_a_kept_turn_rewritten_elsewhere_is_read_again(cosmos_server: CosmosServer) -> None:
    """A store patches the turns it wrote last without reading them (kept under their ETag): when another
    replica rewrote one meanwhile, the patch answers 412 and the turn is read and patched again."""
    settings = local_cosmos_settings(cosmos_server)
    async with (
        CosmosLongTermStore.open(settings, EMBEDDING) as ours,
        CosmosLongTermStore.open(settings, EMBEDDING) as theirs,
    ):
        turn = memory(USER, "kept-turn", "the kettle is on the stove")
        await ours.put([turn])
        assert (USER, turn.id) in ours._writes.kept_turns
        assert await theirs.set_index_contexts(USER, {turn.id: "their context"}) == 1
        assert await ours.set_index_contexts(USER, {turn.id: "our context"}) == 1
        assert "our context" in indexed(await stored(ours, turn.id))
        assert await ours.set_index_contexts(USER, {turn.id: "our next context"}) == 1, "kept again"
        assert "our next context" in indexed(await stored(theirs, turn.id))


async def test_a_thread_lock_is_dropped_when_no_write_needs_it(cosmos_service: MemoryService) -> None:
    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(cosmos_service.add_turn, USER, f"thread-{i % 3}", "user", f"turn {i} of a thread")
    assert cosmos_service._turns.contexts._locks == {}
