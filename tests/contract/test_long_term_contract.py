"""The LongTermStore contract: every backend must pass it.

Two fixtures (tests/contract/conftest_long_term.py) decide where each test runs:
- `long_term_store`: SQLite and the local Cosmos-protocol server (@vercel/cosmosdb-server). Writes, get,
  recent, list_threads, forget, soft delete, idempotency.
- `search_store`: ranked search (text, vector, hybrid, phrases, filters). SQLite only here, because the
  local Cosmos server has no VectorDistance / FullTextScore / RANK RRF: these tests do not run against it
  rather than pass vacuously. For Cosmos they run against a real Azure account in test_cosmos_live.py
  (skipped, saying so, without COSMOS_ENDPOINT), and the SQL they send is checked in test_cosmos_sql.py.

The learning methods follow the same split: find_by_hash and list_active run on every backend,
similar (a VectorDistance query on Cosmos DB) on `search_store`; its SQL is checked in test_cosmos_sql.py.

Users are unique per test (`new_user`), so the suite also runs on a shared live database.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from mcp_memory.errors import EmbeddingMismatchError, NotFoundError
from mcp_memory.models import Memory, Scope, content_hash
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import LongTermStore
from tests.contract.conftest_long_term import DIMENSION, T0, embed, memory

pytestmark = pytest.mark.anyio

NewUser = Callable[[], str]


def conversation(user_id: str, thread_id: str = "t1", n: int = 5, start: int = 0) -> list[Memory]:
    return [
        memory(
            user_id,
            f"{thread_id}-turn-{i}",
            f"message number {i} in {thread_id}",
            thread_id=thread_id,
            minutes=start + i,
        )
        for i in range(n)
    ]


# -- put / get ------------------------------------------------------------------------------------------


async def test_get_returns_what_put_stored(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    stored = memory(user, "m1", "I moved to Lisbon in March", metadata={"source": "chat"}, minutes=3)
    await long_term_store.put([stored])

    got = await long_term_store.get(user, "m1")

    assert got.model_dump(exclude={"embedding"}) == stored.model_dump(exclude={"embedding"})
    assert got.embedding == pytest.approx(stored.embedding, abs=1e-6)
    assert len(got.embedding or []) == DIMENSION


async def test_put_is_idempotent(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    turn = memory(user, "m1", "hello there")
    await long_term_store.put([turn])
    await long_term_store.put([turn])

    assert [m.id for m in await long_term_store.recent(user, "t1", limit=10)] == ["m1"]
    assert await long_term_store.forget(Scope(user_id=user, everything=True), dry_run=True) == {"turn": 1}


async def test_put_replaces_by_id(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await long_term_store.put([memory(user, "s1", "first summary", type="summary")])
    await long_term_store.put([memory(user, "s1", "rewritten summary", type="summary", minutes=5)])

    assert (await long_term_store.get(user, "s1")).content == "rewritten summary"
    assert await long_term_store.forget(Scope(user_id=user, everything=True), dry_run=True) == {"summary": 1}


async def test_a_fact_can_move_from_its_thread_to_the_user(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put([memory(user, "f1", "prefers tea", type="fact", thread_id="t1")])
    await long_term_store.put([memory(user, "f1", "prefers tea", type="fact", thread_id=None)])

    assert (await long_term_store.get(user, "f1")).thread_id is None
    assert await long_term_store.forget(Scope(user_id=user, everything=True), dry_run=True) == {"fact": 1}


async def test_get_unknown_memory_raises_not_found(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await long_term_store.put([memory(user, "m1", "hello")])

    with pytest.raises(NotFoundError):
        await long_term_store.get(user, "nope")
    with pytest.raises(NotFoundError):  # another user's memory is not found either
        await long_term_store.get(new_user(), "m1")


async def test_user_level_memory_has_no_thread(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await long_term_store.put(
        [
            memory(user, "f1", "allergic to peanuts", type="fact", thread_id=None),
            memory(user, "profile", "a cyclist living in Lisbon", type="user_summary", thread_id=None),
        ]
    )

    assert (await long_term_store.get(user, "f1")).thread_id is None
    assert (await long_term_store.get(user, "profile")).type == "user_summary"
    assert await long_term_store.list_threads(user) == []


async def test_vector_of_another_dimension_is_refused(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    wrong = memory(new_user(), "m1", "hello").model_copy(update={"embedding": [0.5] * (DIMENSION + 1)})

    with pytest.raises(EmbeddingMismatchError):
        await long_term_store.put([wrong])


# -- recent / soft delete -------------------------------------------------------------------------------


async def test_recent_returns_the_newest_oldest_first(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    turns = conversation(user, n=6)
    await long_term_store.put(list(reversed(turns)))  # write order must not matter

    recent = await long_term_store.recent(user, "t1", limit=3)

    assert [m.id for m in recent] == ["t1-turn-3", "t1-turn-4", "t1-turn-5"]


async def test_recent_keeps_to_its_thread_and_types(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put(
        [
            *conversation(user, "t1", n=2),
            *conversation(user, "t2", n=2, start=10),
            memory(user, "s1", "summary of t1", type="summary", minutes=30),
            memory(user, "f1", "a fact", type="fact", thread_id=None, minutes=31),
        ]
    )

    assert [m.id for m in await long_term_store.recent(user, "t1", limit=10)] == ["t1-turn-0", "t1-turn-1"]
    with_summary = await long_term_store.recent(user, "t1", limit=2, types=("turn", "summary"))
    assert [m.id for m in with_summary] == ["t1-turn-1", "s1"]
    assert await long_term_store.recent(new_user(), "t1", limit=10) == []


async def test_superseded_memories_leave_recent_but_not_get(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    turns = conversation(user, n=3)
    old = turns[1].model_copy(
        update={
            "superseded_by": "t1-turn-2",
            "supersede_reason": "corrected",
            "superseded_at": T0 + timedelta(hours=1),
        }
    )
    await long_term_store.put([turns[0], old, turns[2]])

    assert [m.id for m in await long_term_store.recent(user, "t1", limit=10)] == ["t1-turn-0", "t1-turn-2"]
    got = await long_term_store.get(user, "t1-turn-1")
    assert (got.superseded_by, got.supersede_reason) == ("t1-turn-2", "corrected")
    assert got.superseded_at == T0 + timedelta(hours=1)


# -- list_threads ---------------------------------------------------------------------------------------


async def test_list_threads_counts_turns_newest_first(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put(
        [
            *conversation(user, "older", n=2),
            *conversation(user, "newer", n=3, start=10),
            memory(user, "s-older", "summary", type="summary", thread_id="older", minutes=5),
            memory(user, "f1", "user fact", type="fact", thread_id=None, minutes=60),
        ]
    )
    await long_term_store.put(conversation(new_user(), "elsewhere", n=4))

    threads = await long_term_store.list_threads(user)

    assert [(t.thread_id, t.message_count) for t in threads] == [("newer", 3), ("older", 2)]
    assert threads[0].updated_at == T0 + timedelta(minutes=12)
    assert threads[1].updated_at == T0 + timedelta(minutes=5)  # its summary is its newest memory


# -- forget ---------------------------------------------------------------------------------------------


async def test_forget_one_memory(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await long_term_store.put(conversation(user, n=3))

    assert await long_term_store.forget(Scope(user_id=user, memory_id="t1-turn-1")) == {"turn": 1}

    with pytest.raises(NotFoundError):
        await long_term_store.get(user, "t1-turn-1")
    assert [m.id for m in await long_term_store.recent(user, "t1", limit=10)] == ["t1-turn-0", "t1-turn-2"]
    assert await long_term_store.forget(Scope(user_id=user, memory_id="t1-turn-1")) == {}


async def test_forget_a_thread(long_term_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await long_term_store.put(
        [
            *conversation(user, "t1", n=3),
            memory(user, "s1", "summary", type="summary", thread_id="t1", minutes=9),
            *conversation(user, "t2", n=2, start=20),
            memory(user, "f1", "user fact", type="fact", thread_id=None),
        ]
    )

    assert await long_term_store.forget(Scope(user_id=user, thread_id="t1")) == {"turn": 3, "summary": 1}

    assert [t.thread_id for t in await long_term_store.list_threads(user)] == ["t2"]
    assert await long_term_store.recent(user, "t1", limit=10, types=("turn", "summary")) == []
    assert (await long_term_store.get(user, "f1")).content == "user fact"


async def test_forget_everything_of_a_user_leaves_nothing(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user, other = new_user(), new_user()
    await long_term_store.put(
        [
            *conversation(user, "t1", n=2),
            memory(user, "s1", "summary", type="summary"),
            memory(user, "f1", "fact", type="fact", thread_id=None),
            memory(user, "p1", "profile", type="user_summary", thread_id=None),
        ]
    )
    await long_term_store.put(conversation(other, "t1", n=1))

    counts = await long_term_store.forget(Scope(user_id=user, everything=True))

    assert counts == {"turn": 2, "summary": 1, "fact": 1, "user_summary": 1}
    assert await long_term_store.forget(Scope(user_id=user, everything=True), dry_run=True) == {}
    assert await long_term_store.list_threads(user) == []
    for memory_id in ("t1-turn-0", "s1", "f1", "p1"):
        with pytest.raises(NotFoundError):
            await long_term_store.get(user, memory_id)
    assert [t.thread_id for t in await long_term_store.list_threads(other)] == ["t1"]


async def test_forget_dry_run_counts_without_deleting(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put([*conversation(user, n=2), memory(user, "s1", "summary", type="summary")])

    assert await long_term_store.forget(Scope(user_id=user, thread_id="t1"), dry_run=True) == {
        "turn": 2,
        "summary": 1,
    }

    assert len(await long_term_store.recent(user, "t1", limit=10, types=("turn", "summary"))) == 3


async def test_forget_counts_superseded_memories_too(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    old = memory(user, "f-old", "lives in Porto", type="fact", superseded_by="f-new")
    await long_term_store.put([old, memory(user, "f-new", "lives in Lisbon", type="fact")])

    assert await long_term_store.forget(Scope(user_id=user, thread_id="t1")) == {"fact": 2}
    with pytest.raises(NotFoundError):
        await long_term_store.get(user, "f-old")


async def test_text_search_of_stopwords_only_finds_nothing(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put([memory(user, "m1", "what is the plan for this week")])

    assert await long_term_store.search(user, SearchQuery(text="what is the", mode="text"), None) == []


# -- search (search_store: SQLite here, live Azure in test_cosmos_live.py) -------------------------------


async def seed_search(store: LongTermStore, user: str) -> None:
    await store.put(
        [
            memory(user, "bike", "I ride my bicycle to work every morning", minutes=1),
            memory(user, "tea", "my favourite drink is green tea", type="fact", thread_id=None, minutes=2),
            memory(user, "trip", "we planned a trip to Japan in April", thread_id="t2", minutes=3),
            memory(user, "repair", "the bicycle needs a new chain", type="summary", minutes=4),
            memory(user, "cat", "the cat sleeps on the sofa", minutes=5),
        ]
    )


def search_query(text: str, **fields: object) -> SearchQuery:
    return SearchQuery.model_validate({"text": text, **fields})


async def test_text_search_ranks_matching_memories(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed_search(search_store, user)

    hits = await search_store.search(user, search_query("bicycle chain", mode="text"), None)

    assert [h.memory.id for h in hits] == ["repair", "bike"]
    assert hits[0].score >= hits[1].score


async def test_vector_search_finds_the_nearest(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed_search(search_store, user)

    hits = await search_store.search(user, search_query("", mode="vector", limit=2), embed("green tea drink"))

    assert hits[0].memory.id == "tea"
    assert len(hits) == 2


async def test_hybrid_search_puts_what_both_agree_on_first(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed_search(search_store, user)
    text = "Japan trip in April"

    hits = await search_store.search(user, search_query(text, limit=3), embed(text))

    assert hits[0].memory.id == "trip"


async def test_quoted_phrase_must_match_verbatim(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed_search(search_store, user)
    text = '"new chain" bicycle'

    hits = await search_store.search(user, search_query(text, phrases=["New Chain"]), embed(text))

    assert [h.memory.id for h in hits] == ["repair"]


async def test_search_skips_superseded_memories(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await search_store.put(
        [
            memory(user, "old", "lives in Porto near the river", type="fact", superseded_by="new"),
            memory(user, "new", "lives in Lisbon near the river", type="fact"),
        ]
    )
    text = "lives near the river"

    for mode in ("text", "vector", "hybrid"):
        hits = await search_store.search(user, search_query(text, mode=mode), embed(text))
        assert [h.memory.id for h in hits] == ["new"], mode


async def test_search_filters_thread_type_and_time(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed_search(search_store, user)
    text = "bicycle trip tea cat"
    vector = embed(text)

    async def ids(**fields: object) -> set[str]:
        return {h.memory.id for h in await search_store.search(user, search_query(text, **fields), vector)}

    assert await ids(thread_id="t2") == {"trip"}
    assert await ids(types=["fact"]) == {"tea"}
    assert await ids(types=["turn", "summary"]) == {"bike", "trip", "repair", "cat"}
    assert await ids(since=T0 + timedelta(minutes=3), until=T0 + timedelta(minutes=4)) == {"trip", "repair"}
    assert await ids(thread_id="t1", types=["turn"], until=T0 + timedelta(minutes=1)) == {"bike"}


async def test_stopword_query_falls_back_to_vector(search_store: LongTermStore, new_user: NewUser) -> None:
    user = new_user()
    await seed_search(search_store, user)

    hits = await search_store.search(user, search_query("what is it", limit=1), embed("green tea drink"))

    assert [h.memory.id for h in hits] == ["tea"]


async def test_long_queries_are_cut_to_thirty_keywords(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed_search(search_store, user)
    text = "bicycle " + " ".join(f"word{i}" for i in range(40))  # FullTextScore rejects 31+ terms

    hits = await search_store.search(user, search_query(text, mode="text"), None)

    assert {h.memory.id for h in hits} == {"bike", "repair"}


async def test_search_sees_only_the_users_memories(search_store: LongTermStore, new_user: NewUser) -> None:
    user, other = new_user(), new_user()
    await seed_search(search_store, user)
    text = "bicycle"

    assert await search_store.search(other, search_query(text), embed(text)) == []


async def test_text_search_reaches_past_better_matches_it_must_not_return(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    # Hundreds of closer matches that belong to another user, are superseded or are of another
    # type rank above the user's own: a search must still return the user's, all of them.
    user, other = new_user(), new_user()
    crowd = [memory(other, f"o{i}", "bicycle bicycle bicycle") for i in range(300)]
    crowd += [memory(user, f"s{i}", "bicycle bicycle", superseded_by="x") for i in range(200)]
    crowd += [memory(user, f"f{i}", "bicycle bicycle", type="fact", thread_id=None) for i in range(200)]
    await search_store.put(crowd)
    await seed_search(search_store, user)

    hits = await search_store.search(
        user, search_query("bicycle", mode="text", types=["turn", "summary"]), None
    )

    assert [h.memory.id for h in hits] == ["repair", "bike"]


# -- search limited to a set of threads (SearchQuery.threads): a project's sessions, never another's -----

PROJECT = ("proj.a", "proj.b")  # coding-agent sessions are threads named <project>.<session>
ASKED = "deploy script staging server"


async def seed_threads(store: LongTermStore, user: str) -> None:
    """Two threads of the project, one of another project and a thread-less fact, both of which match the
    question best (they are its very words), and a memory of the other project superseded since T0+10."""
    await store.put(
        [
            memory(user, "a1", "the deploy script failed on staging", thread_id="proj.a", minutes=1),
            memory(user, "b1", "the staging server deploy needs a new key", thread_id="proj.b", minutes=2),
            memory(user, "b2", "fixed the staging deploy", type="summary", thread_id="proj.b", minutes=3),
            memory(user, "c1", ASKED, thread_id="other.c", minutes=4),
            memory(user, "f1", ASKED, type="fact", thread_id=None, minutes=5),
            memory(
                user,
                "c0",
                ASKED,
                thread_id="other.c",
                minutes=0,
                superseded_by="c1",
                superseded_at=T0 + timedelta(minutes=10),
            ),
        ]
    )


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
async def test_search_keeps_to_the_threads_named(
    search_store: LongTermStore, new_user: NewUser, mode: str
) -> None:
    user = new_user()
    await seed_threads(search_store, user)
    vector = embed(ASKED)

    async def ids(**fields: object) -> list[str]:
        query = search_query(ASKED, mode=mode, **fields)
        return [h.memory.id for h in await search_store.search(user, query, vector)]

    assert (await ids())[0] in {"c1", "f1"}  # unrestricted, another project's words rank first
    assert set(await ids(threads=PROJECT)) == {"a1", "b1", "b2"}
    assert set(await ids(threads=("proj.b",))) == {"b1", "b2"}
    assert await ids(threads=()) == []
    assert await ids(threads=("no.such",)) == []
    # As of a moment: a memory superseded since, current then, still keeps to its own thread.
    assert "c0" in await ids(as_of=T0 + timedelta(minutes=6))
    assert set(await ids(threads=PROJECT, as_of=T0 + timedelta(minutes=6))) == {"a1", "b1", "b2"}


async def test_threads_combine_with_types_time_and_thread(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed_threads(search_store, user)
    vector = embed(ASKED)

    async def ids(**fields: object) -> set[str]:
        query = search_query(ASKED, threads=PROJECT, **fields)
        return {h.memory.id for h in await search_store.search(user, query, vector)}

    assert await ids(types=["turn"]) == {"a1", "b1"}
    assert await ids(types=["summary", "fact"]) == {"b2"}
    assert await ids(since=T0 + timedelta(minutes=2)) == {"b1", "b2"}
    assert await ids(until=T0 + timedelta(minutes=2)) == {"a1", "b1"}
    two_to_four = {"since": T0 + timedelta(minutes=2), "until": T0 + timedelta(minutes=4)}
    assert await ids(types=["turn"], **two_to_four) == {"b1"}
    assert await ids(thread_id="proj.a") == {"a1"}  # both: the threads each names
    assert await ids(thread_id="other.c") == set()


async def test_a_phrase_search_keeps_to_the_threads_named(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    # A quoted phrase alone needs no ranking functions, so this runs on the local Cosmos server too.
    user = new_user()
    await seed_threads(long_term_store, user)

    async def ids(**fields: object) -> set[str]:
        query = search_query("", mode="text", phrases=["staging"], **fields)
        return {h.memory.id for h in await long_term_store.search(user, query, None)}

    assert await ids() == {"a1", "b1", "b2", "c1", "f1"}
    assert await ids(threads=PROJECT) == {"a1", "b1", "b2"}
    assert await ids(threads=PROJECT, types=["turn"]) == {"a1", "b1"}
    assert await ids(threads=("proj.b",), since=T0 + timedelta(minutes=3)) == {"b2"}
    assert await ids(threads=()) == set()


# -- learning: find_by_hash and list_active on every backend, similar on search_store ----------


async def test_find_by_hash_returns_active_memories_of_those_types(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put(
        [
            memory(user, "f1", "Prefers green tea", type="fact", thread_id=None, minutes=1),
            memory(user, "f2", "prefers  GREEN tea", type="fact", thread_id="t2", minutes=2),
            memory(user, "f-old", "prefers green tea", type="fact", superseded_by="f1", minutes=0),
            memory(user, "turn", "prefers green tea", minutes=3),
            memory(user, "other", "prefers black coffee", type="fact", minutes=4),
        ]
    )
    await long_term_store.put([memory(new_user(), "theirs", "prefers green tea", type="fact")])
    wanted = content_hash("prefers green tea")

    found = await long_term_store.find_by_hash(user, wanted, types=("fact",))

    assert [m.id for m in found] == ["f1", "f2"]  # normalized content matches; oldest first
    assert {m.id for m in await long_term_store.find_by_hash(user, wanted, types=("fact", "turn"))} == {
        "f1",
        "f2",
        "turn",
    }
    assert await long_term_store.find_by_hash(user, content_hash("unknown"), types=("fact",)) == []


async def test_list_active_is_newest_change_first_across_threads(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put(
        [
            memory(user, "f1", "lives in Lisbon", type="fact", thread_id=None, minutes=1),
            memory(user, "f2", "rides a bicycle", type="fact", thread_id="t1", minutes=2),
            # created first, changed last: its updated_at orders it
            memory(user, "f3", "budget is $15,000", type="fact", thread_id="t2", minutes=0).model_copy(
                update={"updated_at": T0 + timedelta(minutes=9)}
            ),
            memory(user, "f-old", "lives in Porto", type="fact", superseded_by="f1", minutes=5),
            memory(user, "s1", "summary of t1", type="summary", minutes=6),
            memory(user, "turn", "hello", minutes=7),
        ]
    )
    await long_term_store.put([memory(new_user(), "theirs", "a fact", type="fact", minutes=8)])

    facts = await long_term_store.list_active(user, types=("fact",), limit=10)
    assert [m.id for m in facts] == ["f3", "f2", "f1"]
    assert facts[0].updated_at == T0 + timedelta(minutes=9)
    assert [m.id for m in await long_term_store.list_active(user, types=("fact",), limit=2)] == ["f3", "f2"]
    mixed = await long_term_store.list_active(user, types=("fact", "summary", "turn"), limit=10)
    assert [m.id for m in mixed] == ["f3", "turn", "s1", "f2", "f1"]


async def test_list_active_changed_since_keeps_only_later_changes(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await long_term_store.put(
        [
            memory(user, "f1", "old fact", type="fact", thread_id=None, minutes=1),
            memory(user, "f2", "new fact", type="fact", thread_id=None, minutes=5),
            memory(user, "f3", "old, then edited", type="fact", thread_id=None, minutes=0).model_copy(
                update={"updated_at": T0 + timedelta(minutes=6)}
            ),
        ]
    )

    changed = await long_term_store.list_active(
        user, types=("fact",), limit=10, changed_since=T0 + timedelta(minutes=1)
    )

    assert [m.id for m in changed] == ["f3", "f2"]  # strictly after: f1 (at the bound) is left out


async def test_similar_returns_cosine_similarity_above_the_floor(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed_search(search_store, user)
    await search_store.put(
        [memory(user, "tea-old", "my favourite drink is green tea", type="fact", superseded_by="tea")]
    )
    vector = embed("my favourite drink is green tea")

    hits = await search_store.similar(user, vector, types=("fact", "summary"), min_similarity=0.0, limit=5)

    assert hits[0].memory.id == "tea"  # the superseded twin is not returned
    assert "tea-old" not in {h.memory.id for h in hits}
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)  # the same text: cosine similarity 1
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.memory.type for h in hits} <= {"fact", "summary"}
    strict = await search_store.similar(user, vector, types=("fact", "summary"), min_similarity=0.99, limit=5)
    assert [h.memory.id for h in strict] == ["tea"]
    assert await search_store.similar(new_user(), vector, types=("fact",), min_similarity=0.0, limit=5) == []
