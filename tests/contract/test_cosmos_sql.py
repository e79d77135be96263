"""The Cosmos DB search SQL, checked as text against the documented syntax.

The local Cosmos-protocol server cannot run VectorDistance, FullTextScore, FullTextContainsAny or
ORDER BY RANK, so what the store sends for search is verified here, and run for real by
test_cosmos_live.py against an Azure account. Documented forms (cited in storage/cosmos/queries.py):
- FullTextScore(<path>, <term1>, <term2>, ...)          https://learn.microsoft.com/azure/cosmos-db/nosql/query/fulltextscore
- FullTextContainsAny(<path>, <term1>, ...)             https://learn.microsoft.com/azure/cosmos-db/nosql/query/fulltextcontainsany
- ORDER BY VectorDistance(<path>, <vector>)              https://learn.microsoft.com/azure/cosmos-db/nosql/query/vectordistance
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from mcp_memory.config import CosmosSettings
from mcp_memory.models import EmbeddingSpec, Owner
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.setup import (
    full_text_policy,
    indexing_policy,
    policy_differences,
    vector_embedding_policy,
)

VECTOR = [0.1, 0.2, 0.3]
ALL = ["turn", "summary", "fact", "user_summary"]


def query(**fields: object) -> SearchQuery:
    return SearchQuery.model_validate({"text": "bicycle chain repair", **fields})


def build(
    q: SearchQuery, vector: list[float] | None = VECTOR, types: list[str] = ALL, user: str = "alice"
) -> sql.CosmosQuery:
    plan = sql.search_plan(q, vector)
    # A hybrid search sends its text side and its vector side: here the text side's query.
    return sql.search(user, q, vector, types, "text" if plan == "hybrid" else plan)


def params(built: sql.CosmosQuery) -> dict[str, object]:
    return {p["name"]: p["value"] for p in built.parameters}


def assert_parameters_match(built: sql.CosmosQuery) -> None:
    """Every @name in the SQL is supplied, and nothing supplied goes unused."""
    used = set(re.findall(r"@\w+", built.sql))
    assert used == set(params(built)), built.sql


def test_hybrid_sends_its_two_sides_as_two_queries_never_rank_rrf() -> None:
    q = query(text_weight=2.0, vector_weight=0.5)
    text = sql.search("alice", q, VECTOR, ALL, "text")
    near = sql.search("alice", q, VECTOR, ALL, "vector")

    assert re.fullmatch(
        r"SELECT TOP @limit c\.id, .+ FROM c WHERE .+ ORDER BY RANK "
        r"FullTextScore\(c\.index_text, @term0, @term1, @term2\)",
        text.sql,
    ), text.sql
    assert [params(text)[f"@term{i}"] for i in range(3)] == ["bicycle", "chain", "repair"]
    assert "FullTextScore" not in text.sql.split(" FROM ")[0]  # never projected: documented as invalid
    assert "ORDER BY VectorDistance(c.embedding, @vector)" in near.sql and params(near)["@vector"] == VECTOR
    assert "RRF" not in text.sql + near.sql
    with pytest.raises(ValueError, match="hybrid"):
        sql.search("alice", q, VECTOR, ALL, "hybrid")
    assert_parameters_match(text)
    assert_parameters_match(near)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_search_returns_each_hit_with_its_vector(mode: str) -> None:
    # The service scores every hit by its cosine to the query: with the vector in the one response,
    # it needs no point read per hit.
    assert ", c.embedding" in build(query(mode=mode)).sql.split(" FROM ")[0]


def test_vector_only_orders_by_vector_distance_and_projects_it_as_score() -> None:
    built = build(query(mode="vector"))

    assert "VectorDistance(c.embedding, @vector) AS score FROM c" in built.sql
    assert built.sql.endswith("ORDER BY VectorDistance(c.embedding, @vector)")
    assert "RANK" not in built.sql and "FullText" not in built.sql
    assert_parameters_match(built)


def test_text_only_filters_with_contains_any_and_ranks_with_full_text_score() -> None:
    built = build(query(mode="text"), vector=None)

    assert "FullTextContainsAny(c.index_text, @term0, @term1, @term2)" in built.sql.split(" ORDER BY ")[0]
    assert built.sql.endswith("ORDER BY RANK FullTextScore(c.index_text, @term0, @term1, @term2)")
    assert "@vector" not in built.sql
    assert_parameters_match(built)


def test_caller_text_travels_only_as_parameters() -> None:
    hostile = "robert'); DELETE c --\" OR 1=1"
    built = build(query(text=hostile, phrases=[hostile], thread_id="t'1"))

    for fragment in ("robert", "DELETE", "1=1", "t'1", '"'):
        assert fragment not in built.sql.split(" FROM c ")[1], fragment
    assert params(built)["@phrase0"] == hostile.lower()
    assert_parameters_match(built)


def test_keywords_are_capped_at_thirty() -> None:
    built = build(query(text=" ".join(f"word{i}" for i in range(45))))

    terms = [name for name in params(built) if name.startswith("@term")]
    assert len(terms) == 30  # FullTextScore rejects 31 or more
    assert "@term29" in built.sql and "@term30" not in built.sql


@pytest.mark.parametrize(
    ("fields", "vector", "plan"),
    [
        ({"text": "what is the"}, VECTOR, "vector"),  # all stopwords: vector-only
        ({"text": "what is the"}, None, "none"),
        ({"text": "what is the", "mode": "text"}, VECTOR, "none"),
        ({"text": '"it is"', "phrases": ["it is"], "mode": "text"}, None, "phrases"),
        ({"text": "bicycle", "mode": "vector"}, None, "none"),
        ({"text": "bicycle"}, None, "text"),  # hybrid without a query vector
        ({"text": "bicycle", "text_weight": 0.0}, VECTOR, "vector"),
        ({"text": "bicycle", "vector_weight": 0.0}, VECTOR, "text"),
        ({"text": "bicycle"}, VECTOR, "hybrid"),
    ],
)
def test_search_plan(fields: dict[str, object], vector: list[float] | None, plan: str) -> None:
    assert sql.search_plan(query(**fields), vector) == plan


def test_phrases_filter_lowercased_content_verbatim() -> None:
    built = build(query(phrases=["New Chain", "Back Wheel"]))

    assert "CONTAINS(LOWER(c.content), @phrase0) AND CONTAINS(LOWER(c.content), @phrase1)" in built.sql
    assert (params(built)["@phrase0"], params(built)["@phrase1"]) == ("new chain", "back wheel")


def test_phrase_only_text_search_is_newest_first() -> None:
    built = build(query(text='"it is"', phrases=["it is"], mode="text"), vector=None)

    assert built.sql.endswith("ORDER BY c.created_at DESC")
    assert_parameters_match(built)


def test_filters_and_superseded_exclusion() -> None:
    since, until = datetime(2024, 1, 2, tzinfo=UTC), datetime(2024, 3, 4, 5, 6, 7, 8, tzinfo=UTC)
    built = build(query(types=["fact"], since=since, until=until), types=["fact"])

    where = built.sql.split(" WHERE ")[1].split(" ORDER BY ")[0]
    assert "c.user_id = @user_id" in where
    assert "ARRAY_CONTAINS(@types, c.type)" in where
    assert sql.LIVE in where
    assert "c.created_at >= @since AND c.created_at <= @until" in where
    assert (params(built)["@since"], params(built)["@until"]) == (
        "2024-01-02T00:00:00.000000Z",
        "2024-03-04T05:06:07.000008Z",
    )
    assert params(built)["@types"] == ["fact"]


def test_thread_search_is_single_partition_and_filters_both_key_levels() -> None:
    in_thread = build(query(thread_id="t1"))
    across = build(query())

    assert in_thread.partition_key == ["alice", "t1"]
    assert "c.user_id = @user_id AND c.thread_id = @thread_id" in in_thread.sql
    assert across.partition_key is None  # routed by the /user_id prefix in WHERE
    assert "c.user_id = @user_id" in across.sql and "@thread_id" not in across.sql


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
def test_a_search_of_several_threads_filters_them_with_array_contains(mode: str) -> None:
    searches = [
        build(query(mode=mode, threads=("p.a", "p.b"))),
        sql.passage_search("alice", query(mode=mode, threads=("p.a", "p.b")), VECTOR, ALL),
        sql.search_memories("alice", query(mode=mode, threads=("p.a", "p.b")), ["m1"], ALL),
    ]

    for built in searches:
        assert "c.user_id = @user_id AND ARRAY_CONTAINS(@threads, c.thread_id)" in built.sql
        assert params(built)["@threads"] == ["p.a", "p.b"]
        assert built.partition_key is None  # routed by the /user_id prefix, over the user's partitions
        assert_parameters_match(built)


def test_one_thread_of_threads_is_a_single_partition_search() -> None:
    one = build(query(threads=("p.a",)))
    assert one.partition_key == ["alice", "p.a"]
    assert "c.thread_id = @thread_id" in one.sql and "@threads" not in one.sql

    # With thread_id too, the threads of both: its own, or none when the set leaves it out.
    both = build(query(thread_id="p.a", threads=("p.a", "p.b")))
    assert both.partition_key == ["alice", "p.a"] and "@threads" not in both.sql
    outside = build(query(thread_id="p.c", threads=("p.a", "p.b")))
    assert outside.partition_key == ["alice", "p.c"]
    assert "ARRAY_CONTAINS(@threads, c.thread_id)" in outside.sql
    assert_parameters_match(outside)


@pytest.mark.parametrize(
    "built",
    [
        sql.recent("alice", "t1", ["turn"], 5),
        sql.by_id("alice", "m1", ALL),
        sql.existing("alice", ["m1", "m2"]),
        sql.scope("alice"),
        sql.scope("alice", thread_id="t1"),
        sql.scope("alice", memory_id="m1"),
        sql.thread_entries("alice"),
        sql.thread_turn_stats("alice", "t1"),
        sql.thread_last_memory("alice", "t1", ["summary"]),
    ],
    ids=lambda b: b.sql[:40],
)
def test_every_query_filters_the_partition_key_in_where(built: sql.CosmosQuery) -> None:
    assert "c.user_id = @user_id" in built.sql
    assert params(built)["@user_id"] == "alice"
    if "@thread_id" in built.sql:
        assert built.partition_key == ["alice", "t1"]
        assert "c.thread_id = @thread_id" in built.sql
    else:
        assert built.partition_key is None
    assert_parameters_match(built)


def test_recent_excludes_superseded_and_get_does_not() -> None:
    assert sql.LIVE in sql.recent("alice", "t1", ["turn"], 5).sql
    assert "superseded" not in sql.by_id("alice", "m1", ALL).sql


# -- container policies ---------------------------------------------------------------------------------

SPEC = EmbeddingSpec(model="text-embedding-3-small", dimension=1536)


def container_properties(settings: CosmosSettings) -> dict[str, object]:
    return {
        "partitionKey": {"paths": ["/user_id", "/thread_id"], "kind": "MultiHash", "version": 2},
        "indexingPolicy": indexing_policy(settings),
        "vectorEmbeddingPolicy": vector_embedding_policy(SPEC),
        "fullTextPolicy": full_text_policy(),
        "defaultTtl": -1,
    }


def test_policies_follow_the_documented_shape() -> None:
    settings = CosmosSettings(vector_index="diskANN", vector_index_shard_key="/user_id")
    policy = indexing_policy(settings)

    assert vector_embedding_policy(SPEC) == {
        "vectorEmbeddings": [
            {"path": "/embedding", "dataType": "float32", "distanceFunction": "cosine", "dimensions": 1536}
        ]
    }
    assert policy["vectorIndexes"] == [
        {"path": "/embedding", "type": "diskANN", "vectorIndexShardKey": ["/user_id"]}
    ]
    assert {"path": "/embedding/*"} in policy["excludedPaths"]
    assert policy["includedPaths"] == [{"path": "/*"}]  # keeps /created_at/? range-indexed
    assert policy["fullTextIndexes"] == [{"path": "/index_text"}]
    assert full_text_policy()["fullTextPaths"] == [{"path": "/index_text", "language": "en-US"}]


def test_matching_container_has_no_differences() -> None:
    settings = CosmosSettings()
    assert policy_differences(container_properties(settings), settings, SPEC) == []


def test_every_difference_is_named() -> None:
    settings = CosmosSettings(vector_index="diskANN", turn_ttl_seconds=3600)
    stored = container_properties(CosmosSettings())
    stored["partitionKey"] = {"paths": ["/user_id"], "kind": "Hash"}
    stored["vectorEmbeddingPolicy"] = vector_embedding_policy(EmbeddingSpec(model="m", dimension=384))
    stored["fullTextPolicy"] = {"defaultLanguage": "en-US", "fullTextPaths": []}
    stored["defaultTtl"] = None

    diffs = policy_differences(stored, settings, SPEC)

    assert any("partition key" in d for d in diffs)
    assert any("dimensions is 384, needs 1536" in d for d in diffs)
    assert any("vector index type is quantizedFlat, needs diskANN" in d for d in diffs)
    assert any("full-text policy" in d for d in diffs)
    assert any("time-to-live" in d for d in diffs)
    assert len(diffs) == 5


def test_a_space_search_stays_inside_the_spaces_partition_key_prefix() -> None:
    # A space's memories are keyed "@" + its name where a user's are keyed by their id: the same first
    # level of the hierarchical partition key, so a space's search is routed to its prefix alone.
    space = Owner("ann", "team", "reader")
    across = build(query(), user=space)
    in_thread = build(query(thread_id="t1"), user=space)

    assert params(across)["@user_id"] == "@team"
    assert "c.user_id = @user_id" in across.sql and across.partition_key is None
    assert in_thread.partition_key == ["@team", "t1"]
    assert_parameters_match(across)


# -- passages (issue 36): a long memory's passages after its first are items of type "passage" ------------


def test_passage_search_is_a_vector_query_over_passage_items_with_the_searchs_filters() -> None:
    since = datetime(2024, 1, 2, tzinfo=UTC)
    built = sql.passage_search(
        "alice", query(thread_id="t1", limit=7, since=since, phrases=["chain"]), VECTOR, ALL
    )

    assert re.fullmatch(
        r"SELECT TOP @limit c\.memory_id, c\.passage_version, c\.span, VectorDistance\(c\.embedding, @vector\)"
        r" AS score FROM c WHERE .+ ORDER BY VectorDistance\(c\.embedding, @vector\)",
        built.sql,
    ), built.sql
    where = built.sql.split(" WHERE ")[1].split(" ORDER BY ")[0]
    assert "c.type = @passage AND ARRAY_CONTAINS(@types, c.memory_type)" in where
    assert sql.LIVE in where and "c.created_at >= @since" in where
    assert "@phrase" not in built.sql  # passage items hold no text: phrases are checked on the memories
    assert params(built)["@passage"] == "passage"
    assert params(built)["@limit"] == 7 * 3  # one memory may hold several of the nearest passages
    assert built.partition_key == ["alice", "t1"]
    assert_parameters_match(built)


def test_passage_search_as_of_reads_the_copied_supersession() -> None:
    as_of = datetime(2024, 2, 1, tzinfo=UTC)
    built = sql.passage_search("alice", query(as_of=as_of), VECTOR, ALL)

    assert f"({sql.LIVE} OR c.superseded_at > @as_of)" in built.sql
    assert "c.created_at <= @as_of" in built.sql
    assert_parameters_match(built)


def test_the_memories_passages_name_are_read_with_every_filter_phrases_included() -> None:
    built = sql.search_memories("alice", query(phrases=["New Chain"], types=["turn"]), ["m1", "m2"], ["turn"])

    where = built.sql.split(" WHERE ")[1]
    assert "ARRAY_CONTAINS(@types, c.type)" in where and sql.LIVE in where
    assert "CONTAINS(LOWER(c.content), @phrase0)" in where
    assert "ARRAY_CONTAINS(@ids, c.id)" in where
    assert params(built)["@ids"] == ["m1", "m2"] and params(built)["@phrase0"] == "new chain"
    assert ", c.embedding FROM c" in built.sql
    assert_parameters_match(built)


def test_the_full_text_query_of_memory_items_is_unchanged_by_passages() -> None:
    # The full-text query runs over memory items only: passage items have another type and no
    # index_text, so a store without long memories ranks exactly as before.
    built = build(query())

    assert "ARRAY_CONTAINS(@types, c.type)" in built.sql and params(built)["@types"] == ALL
    assert "c.passage_spans, c.passage_version" in built.sql.split(" FROM ")[0]


def test_forgetting_a_memory_takes_its_passage_items_and_export_leaves_them_out() -> None:
    assert "(c.id = @id OR c.memory_id = @id)" in sql.scope("alice", memory_id="m1").sql
    exported = sql.user_documents("alice")
    assert "c.type != @passage" in exported.sql and params(exported)["@passage"] == "passage"
    assert_parameters_match(exported)


def test_get_reads_a_memorys_passages_in_its_own_partition() -> None:
    built = sql.passages_of("alice", "t1", "m1", "abc")

    assert built.partition_key == ["alice", "t1"]
    assert "c.memory_id = @memory_id AND c.passage_version = @version AND c.type = @passage" in built.sql
    assert_parameters_match(built)


def test_passage_embeddings_share_the_containers_vector_policy() -> None:
    # Passage items keep their vector at /embedding: the one vector policy and index serve both kinds.
    policy = indexing_policy(CosmosSettings())
    assert [v["path"] for v in vector_embedding_policy(SPEC)["vectorEmbeddings"]] == ["/embedding"]
    assert {"path": "/passage_spans/*"} in policy["excludedPaths"]
