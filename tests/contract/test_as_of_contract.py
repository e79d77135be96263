"""Search as of a moment (SearchQuery.as_of): memory as it stood then.

Nothing created after as_of is found; a fact superseded after as_of is found as it was then (current:
created at or before as_of, superseded after it), and one superseded before is not. SQLite runs it for
real (`search_store`) in every mode and fusion; for Cosmos DB the local server cannot run search
queries, so the SQL the store sends is checked as text, like test_cosmos_sql.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest

from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.cosmos import queries as sql
from tests.contract.conftest_long_term import T0, embed, memory

pytestmark = pytest.mark.anyio

NewUser = Callable[[], str]
MOVED = T0 + timedelta(days=30)  # when the user moved from Porto to Lisbon
BEFORE, AFTER = MOVED - timedelta(days=1), MOVED + timedelta(days=1)
SEARCHES = [
    {"mode": "text"},
    {"mode": "vector"},
    {"mode": "hybrid", "fusion": "score"},
    {"mode": "hybrid", "fusion": "rrf"},
]


async def seed(store: LongTermStore, user: str) -> None:
    await store.put(
        [
            memory(
                user,
                "porto",
                "the user lives in Porto",
                type="fact",
                thread_id=None,
                minutes=0,
                superseded_by="lisbon",
                supersede_reason="contradict",
                superseded_at=MOVED,
            ),
            memory(
                user, "lisbon", "the user lives in Lisbon", type="fact", thread_id=None, minutes=30 * 24 * 60
            ),
            memory(
                user,
                "braga",
                "the user lives in Braga",
                type="fact",
                thread_id=None,
                minutes=-60,
                superseded_by="porto",
                superseded_at=T0 - timedelta(minutes=1),
            ),
            memory(user, "turn", "where does the user live these days", minutes=5),
            memory(user, "later", "the user lives happily", minutes=40 * 24 * 60),
        ]
    )


def search(as_of: object, **fields: object) -> SearchQuery:
    return SearchQuery.model_validate(
        {"text": "where does the user live", "as_of": as_of, "limit": 10, **fields}
    )


def vector_for(fields: dict[str, object]) -> list[float] | None:
    return None if fields["mode"] == "text" else embed("where does the user live")


@pytest.mark.parametrize("fields", SEARCHES, ids=lambda f: "-".join(map(str, f.values())))
async def test_as_of_before_a_supersession_finds_the_fact_current_then(
    search_store: LongTermStore, new_user: NewUser, fields: dict[str, object]
) -> None:
    user = new_user()
    await seed(search_store, user)

    found = {
        h.memory.id for h in await search_store.search(user, search(BEFORE, **fields), vector_for(fields))
    }

    assert "porto" in found  # superseded since, current then
    assert "lisbon" not in found and "later" not in found  # not yet created
    assert "braga" not in found  # superseded before as_of


@pytest.mark.parametrize("fields", SEARCHES, ids=lambda f: "-".join(map(str, f.values())))
async def test_as_of_after_a_supersession_finds_the_new_fact(
    search_store: LongTermStore, new_user: NewUser, fields: dict[str, object]
) -> None:
    user = new_user()
    await seed(search_store, user)

    found = {
        h.memory.id for h in await search_store.search(user, search(AFTER, **fields), vector_for(fields))
    }

    assert "lisbon" in found
    assert "porto" not in found and "braga" not in found and "later" not in found


async def test_without_as_of_only_current_memories_are_found(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(search_store, user)

    found = {h.memory.id for h in await search_store.search(user, search(None, mode="text"), None)}

    assert found == {"lisbon", "turn", "later"}


async def test_as_of_keeps_the_other_filters_and_ranks_the_old_fact_first(
    search_store: LongTermStore, new_user: NewUser
) -> None:
    user = new_user()
    await seed(search_store, user)
    fields: dict[str, object] = {"mode": "hybrid", "text": "the user lives in Porto"}

    hits = await search_store.search(user, search(BEFORE, **fields), embed("the user lives in Porto"))
    facts = await search_store.search(user, search(BEFORE, **fields, types=["turn"]), embed("Porto"))
    window = await search_store.search(
        user, search(BEFORE, **fields, until=T0 - timedelta(minutes=30)), embed("the user lives in Porto")
    )
    quoted = await search_store.search(
        user, search(BEFORE, **{**fields, "phrases": ["in porto"], "mode": "text"}), None
    )

    assert hits[0].memory.id == "porto"  # its exact words: best text and vector match
    assert hits[0].memory.superseded_by == "lisbon"  # the stored memory, as get() returns it
    assert [h.memory.id for h in facts] == ["turn"]
    assert window == []
    assert [h.memory.id for h in quoted] == ["porto"]


# -- Cosmos DB: the as_of conditions in the SQL search sends ---------------------------------------------


def test_cosmos_search_as_of_adds_created_and_superseded_conditions() -> None:
    for fields in SEARCHES:
        query = search(BEFORE, **fields)
        vector = vector_for(fields)
        plan = sql.search_plan(query, vector)
        for side in ("text", "vector") if plan == "hybrid" else (plan,):  # a hybrid search sends both
            built = sql.search("alice", query, vector, ["fact"], side)
            _assert_as_of(built)


def _assert_as_of(built: sql.CosmosQuery) -> None:
    where = built.sql.split(" WHERE ", 1)[1].split(" ORDER BY ")[0]
    params = {p["name"]: p["value"] for p in built.parameters}

    assert "c.created_at <= @as_of" in where, built.sql
    assert (
        "((NOT IS_DEFINED(c.superseded_by) OR IS_NULL(c.superseded_by)) OR c.superseded_at > @as_of)" in where
    ), built.sql
    assert params["@as_of"] == "2024-05-30T12:00:00.000000Z"
    assert set(re.findall(r"@\w+", built.sql)) == set(params)  # every parameter used, none missing


def test_cosmos_search_without_as_of_reads_only_live_memories() -> None:
    query = search(None, mode="text")
    built = sql.search("alice", query, None, ["fact"], sql.search_plan(query, None))

    where = built.sql.split(" WHERE ", 1)[1]
    assert "@as_of" not in built.sql and "superseded_at" not in where
    assert "(NOT IS_DEFINED(c.superseded_by) OR IS_NULL(c.superseded_by))" in built.sql
