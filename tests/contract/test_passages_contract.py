"""The passage contract (issue 36): a long memory is stored with a vector per passage, found by any of
them, and returned once, pointing at the passage that matched. Every backend must pass it.

`long_term_store` (SQLite and the local Cosmos-protocol server): storing, reading back, listing, export
and forgetting. `search_store` (SQLite here; a live Azure account in test_cosmos_live.py):
search, which the local Cosmos server cannot run (no VectorDistance); the SQL Cosmos DB is sent is
checked in test_cosmos_sql.py, and the Cosmos layout of passages in test_cosmos_passages.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mcp_memory.models import ListQuery, Memory, Scope
from mcp_memory.search.passages import passages
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import LongTermStore
from tests.contract.conftest_long_term import embed, memory

pytestmark = pytest.mark.anyio

NewUser = Callable[[], str]

# Four paragraphs of distinct words, each ~400 characters: the splitter cuts at the blank lines.
TOPICS = (
    ("garden", "tomato seedlings compost watering trellis mulch greenhouse aphids pruning basil"),
    ("boat", "sailboat mainsail jib rigging anchor harbor mooring tiller keel spinnaker"),
    ("kitchen", "sourdough starter flour hydration proofing oven crust levain banneton scoring"),
    ("telescope", "telescope eyepiece aperture nebula galaxy refractor dobsonian astrophotography mount"),
)


def paragraph(words: str) -> str:
    sentence = f"Notes about {words}."
    return " ".join([sentence] * (400 // len(sentence) + 1))


LONG_CONTENT = "\n\n".join(paragraph(words) for _, words in TOPICS)


def long_memory(user: str, memory_id: str = "long", content: str = LONG_CONTENT, **fields: object) -> Memory:
    """A memory of several passages with a vector for each, as the service writes it."""
    spans = passages(content)
    vectors = [embed(content[start:end]) for start, end in spans]
    base = memory(user, memory_id, content, **fields)
    return base.model_copy(update={"embedding": vectors[0], "passage_embeddings": vectors})


def later_passage(content: str = LONG_CONTENT) -> tuple[int, int]:
    """The span of the telescope paragraph: not the memory's first passage."""
    spans = passages(content)
    found = [s for s in spans if "telescope" in content[s.start : s.end]]
    assert found and found[0] != spans[0], "the test content must put the telescope after the first passage"
    return found[0].start, found[0].end


def later_passage_vector() -> list[float]:
    """The query vector of the telescope paragraph (later_passage)."""
    start, end = later_passage()
    return embed(LONG_CONTENT[start:end])


async def seed(store: LongTermStore, user: str) -> Memory:
    long = long_memory(user)
    await store.put(
        [
            long,
            memory(user, "short-1", "we talked about the weather and the trains today", minutes=1),
            memory(user, "short-2", "a reminder to call the dentist on monday", minutes=2),
        ]
    )
    return long


def search(text: str, **fields: object) -> SearchQuery:
    return SearchQuery.model_validate({"text": text, "limit": 10, **fields})


def test_the_test_content_is_several_passages() -> None:
    assert len(passages(LONG_CONTENT)) >= 3
    later_passage()


# -- storing, reading back, listing, export --------------------------------------------------------------


async def test_get_returns_the_memory_with_its_passage_vectors(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    long = await seed(long_term_store, user)

    got = await long_term_store.get(user, "long")

    assert got.content == LONG_CONTENT
    assert got.passage_embeddings is not None and long.passage_embeddings is not None
    assert len(got.passage_embeddings) == len(long.passage_embeddings)
    for stored, given in zip(got.passage_embeddings, long.passage_embeddings, strict=True):
        assert stored == pytest.approx(given, abs=1e-6)
    assert got.embedding == pytest.approx(long.passage_embeddings[0], abs=1e-6)


async def test_list_recent_and_export_show_a_long_memory_once(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(long_term_store, user)

    listed = await long_term_store.list_memories(ListQuery(user_id=user, limit=50))
    recent = await long_term_store.recent(user, "t1", limit=50)
    exported = await long_term_store.memories_of(user)

    for memories in (listed, recent, exported):
        assert sorted(m.id for m in memories) == ["long", "short-1", "short-2"]
        assert next(m for m in memories if m.id == "long").content == LONG_CONTENT


async def test_passages_add_no_stored_bytes_beyond_the_content(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put([long_memory(user)])

    assert await long_term_store.stored_bytes(user) == len(LONG_CONTENT.encode())


async def test_forget_counts_memories_not_passages(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed(long_term_store, user)

    assert await long_term_store.forget(Scope(user_id=user, memory_id="long"), dry_run=True) == {"turn": 1}
    assert await long_term_store.forget(Scope(user_id=user, thread_id="t1"), dry_run=True) == {"turn": 3}
    assert await long_term_store.forget(Scope(user_id=user, memory_id="long")) == {"turn": 1}
    assert sorted(m.id for m in await long_term_store.memories_of(user)) == ["short-1", "short-2"]
    assert await long_term_store.stored_bytes(user) == sum(
        len(m.content.encode()) for m in await long_term_store.memories_of(user)
    )


# -- search -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
async def test_a_long_memory_is_found_once_by_a_passage_that_is_not_its_first(
    search_store: LongTermStore, new_user: NewUser, mode: str
) -> None:
    user = new_user()
    await seed(search_store, user)
    start, end = later_passage()
    question = "telescope eyepiece aperture nebula galaxy"

    hits = await search_store.search(user, search(question, mode=mode), embed(LONG_CONTENT[start:end]))

    assert [h.memory.id for h in hits].count("long") == 1
    assert hits[0].memory.id == "long"
    assert hits[0].passage == (start, end)
    assert "telescope" in hits[0].memory.content[start:end]
    assert hits[0].memory.content == LONG_CONTENT


async def test_the_best_passage_is_the_one_reported(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed(search_store, user)
    spans = passages(LONG_CONTENT)
    first = spans[0]

    hits = await search_store.search(
        user, search("tomato seedlings", mode="vector"), embed(LONG_CONTENT[first.start : first.end])
    )

    assert hits[0].memory.id == "long"
    assert hits[0].passage == (first.start, first.end)
    if hits[0].cosine is not None:
        assert hits[0].cosine == pytest.approx(1.0, abs=1e-3)


async def test_search_filters_still_apply_to_long_memories(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(search_store, user)
    vector = later_passage_vector()

    other_thread = await search_store.search(user, search("telescope", thread_id="t2"), vector)
    facts_only = await search_store.search(user, search("telescope", types=["fact"]), vector)
    phrase = await search_store.search(user, search('"not in it"', phrases=["not in it"]), vector)

    assert "long" not in [h.memory.id for h in [*other_thread, *facts_only, *phrase]]


async def test_a_superseded_long_memory_is_not_found_by_its_passages(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(search_store, user)
    stored = await search_store.get(user, "long")  # with its vectors, as learning supersedes
    await search_store.put(
        [stored.model_copy(update={"superseded_by": "short-1", "supersede_reason": "duplicate"})]
    )
    start, end = later_passage()

    hits = await search_store.search(
        user, search("telescope nebula", mode="vector"), embed(LONG_CONTENT[start:end])
    )

    assert "long" not in [h.memory.id for h in hits]


async def test_a_long_memory_written_back_keeps_its_passages(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(search_store, user)
    stored = await search_store.get(user, "long")
    await search_store.put([stored.model_copy(update={"metadata": {"pinned": True}})])
    start, end = later_passage()

    hits = await search_store.search(
        user, search("telescope nebula", mode="vector"), embed(LONG_CONTENT[start:end])
    )

    assert hits[0].memory.id == "long" and hits[0].memory.metadata == {"pinned": True}
    assert hits[0].passage == (start, end)


async def test_a_forgotten_long_memory_is_never_found_again(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(search_store, user)
    vector = later_passage_vector()

    await search_store.forget(Scope(user_id=user, memory_id="long"))

    for mode in ("vector", "hybrid", "text"):
        hits = await search_store.search(user, search("telescope nebula galaxy", mode=mode), vector)
        assert "long" not in [h.memory.id for h in hits], mode
        assert all("telescope" not in h.memory.content for h in hits), mode
