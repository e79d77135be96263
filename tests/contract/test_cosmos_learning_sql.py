"""The Cosmos DB SQL of learning, checked as text: the long-term store's find_by_hash, similar
and list_active, and the revision and counter queries of the learning container.

similar() needs VectorDistance, which the local Cosmos-protocol server lacks: its SQL is checked here
against the documented form (https://learn.microsoft.com/azure/cosmos-db/nosql/query/vectordistance:
ORDER BY VectorDistance(<path>, <vector>), most similar first for cosine, projectable as a score) and
run for real by test_cosmos_live.py. Everything else also runs on the local server in the contract suites.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from mcp_memory.models import Memory, Scope
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.counters import COUNTERS_GROUP, counter_id, counter_query, prefix_query
from mcp_memory.storage.cosmos.documents import to_document
from mcp_memory.storage.cosmos.queries import LIVE, CosmosQuery
from mcp_memory.storage.cosmos.revisions import (
    by_revision_id_query,
    history_query,
    last_seq_query,
    older_than_query,
    scope_query,
)

VECTOR = [0.1, 0.2, 0.3]
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def params(built: CosmosQuery) -> dict[str, object]:
    return {p["name"]: p["value"] for p in built.parameters}


def assert_parameters_match(built: CosmosQuery) -> None:
    """Every @name in the SQL is supplied, and nothing supplied goes unused."""
    assert set(re.findall(r"@\w+", built.sql)) == set(params(built)), built.sql


def where(built: CosmosQuery) -> str:
    return built.sql.split(" WHERE ", 1)[1].split(" ORDER BY ")[0]


def test_similar_orders_by_vector_distance_and_projects_it_as_score() -> None:
    built = sql.similar("alice", VECTOR, ["fact"], 3)

    assert re.fullmatch(
        r"SELECT TOP @limit c\.id, .+, VectorDistance\(c\.embedding, @vector\) AS score FROM c WHERE .+"
        r" ORDER BY VectorDistance\(c\.embedding, @vector\)",
        built.sql,
    ), built.sql
    assert " DESC" not in built.sql  # cosine: ascending ORDER BY VectorDistance is most similar first
    assert LIVE in where(built)  # superseded memories are never near duplicates
    assert "c.user_id = @user_id" in where(built)
    assert params(built) == {"@user_id": "alice", "@types": ["fact"], "@limit": 3, "@vector": VECTOR}
    assert built.partition_key is None  # routed by the user prefix: facts live in several threads
    assert_parameters_match(built)


def test_find_by_hash_filters_live_memories_by_hash_and_type() -> None:
    built = sql.by_hash("alice", "abc123", ["fact"])

    assert "c.content_hash = @content_hash" in where(built)
    assert "ARRAY_CONTAINS(@types, c.type)" in where(built)
    assert LIVE in where(built)
    assert built.sql.endswith("ORDER BY c.created_at")
    assert "embedding" not in built.sql.split(" FROM ")[0]  # no vectors read back
    assert_parameters_match(built)


def test_list_active_orders_by_last_change_and_filters_changed_since() -> None:
    built = sql.active("alice", ["fact"], 60, T0)

    assert built.sql.startswith("SELECT TOP @limit ")
    assert built.sql.endswith("ORDER BY c.changed_at DESC")
    assert "c.changed_at > @changed_since" in where(built)
    assert params(built)["@changed_since"] == "2024-05-01T12:00:00.000000Z"
    assert LIVE in where(built)
    assert_parameters_match(built)
    assert "@changed_since" not in sql.active("alice", ["fact"], 60, None).sql


def test_documents_carry_changed_at_as_updated_at_else_created_at() -> None:
    fresh = Memory(id="f1", user_id="alice", type="fact", content="x", created_at=T0)
    edited = fresh.model_copy(update={"updated_at": datetime(2024, 6, 1, tzinfo=UTC)})

    assert to_document(fresh, turn_ttl_seconds=None)["changed_at"] == "2024-05-01T12:00:00.000000Z"
    assert to_document(edited, turn_ttl_seconds=None)["changed_at"] == "2024-06-01T00:00:00.000000Z"


def test_a_memorys_revisions_are_read_from_its_own_partition() -> None:
    for built in (history_query("alice", "fact_1"), last_seq_query("alice", "fact_1")):
        assert built.partition_key == ["alice", "fact_1"]
        assert "c.user_id = @user_id AND c.group_id = @memory_id AND c.type = @type" in where(built)
        assert_parameters_match(built)
    assert history_query("alice", "fact_1").sql.endswith("ORDER BY c.seq")
    assert last_seq_query("alice", "fact_1").sql.startswith("SELECT TOP 1 c.seq ")


def test_revision_lookups_and_forget_scopes_stay_within_the_user() -> None:
    scopes = [
        Scope(user_id="alice", memory_id="fact_1"),
        Scope(user_id="alice", thread_id="t1"),
        Scope(user_id="alice", everything=True),
    ]
    for built in [by_revision_id_query("alice", "rev_1"), *(scope_query(s) for s in scopes)]:
        assert where(built).startswith("c.user_id = @user_id")
        assert params(built)["@user_id"] == "alice"
        assert params(built)["@type"] == "revision"  # never the counters sharing the container
        assert_parameters_match(built)
    assert scope_query(scopes[0]).partition_key == ["alice", "fact_1"]
    assert "c.thread_id = @thread_id" in scope_query(scopes[1]).sql


def test_prune_is_one_cross_partition_query_on_created_at() -> None:
    built = older_than_query(T0)

    assert where(built) == "c.type = @type AND c.created_at < @before"
    assert params(built) == {"@type": "revision", "@before": "2024-05-01T12:00:00.000000Z"}
    assert built.partition_key is None


def test_counters_are_read_within_the_users_counter_partition() -> None:
    one, prefixed = counter_query("alice", "turns:t1"), prefix_query("alice", "turns:")

    for built in (one, prefixed):
        assert built.partition_key == ["alice", COUNTERS_GROUP]
        assert_parameters_match(built)
    assert params(one)["@id"] == counter_id("turns:t1")
    assert "STARTSWITH(c.key, @prefix)" in prefixed.sql
    # Ids are a digest: always valid (no / \ ? #, at most 255 characters) and distinct per key.
    assert re.fullmatch(r"counter:[0-9a-f]{40}", counter_id("a/b?c#d\\" + "x" * 500))
    assert counter_id("a") != counter_id("b")
