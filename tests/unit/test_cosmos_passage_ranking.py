"""How the Cosmos DB store ranks memories by their best passage (storage/cosmos/passages.py): pure
functions over the rows its queries return, so what the local Cosmos server cannot run (VectorDistance)
is still checked here; the queries themselves are checked in tests/contract/test_cosmos_sql.py."""

from __future__ import annotations

from typing import Any

from mcp_memory.storage.cosmos.passages import best_passages, passage_by_terms, vector_ranking

CONTENT = "garden tomato basil " * 10 + "\n\n" + "telescope nebula galaxy " * 10
SPANS = [[0, 199], [201, len(CONTENT)]]


def long_doc(memory_id: str = "long", version: str = "v1", **fields: Any) -> dict[str, Any]:
    return {"id": memory_id, "content": CONTENT, "passage_spans": SPANS, "passage_version": version, **fields}


def short_doc(memory_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": memory_id, "content": f"short memory {memory_id}", **fields}


def row(memory_id: str, score: float, span: list[int], version: str = "v1") -> dict[str, Any]:
    return {"memory_id": memory_id, "passage_version": version, "span": span, "score": score}


def test_each_memory_keeps_its_best_passage_of_its_current_content() -> None:
    memories = {"long": long_doc(), "other": long_doc("other", version="v2")}
    rows = [
        row("long", 0.4, [5, 9]),
        row("long", 0.8, SPANS[1]),
        row("other", 0.9, [1, 2], version="v1"),  # cut from an older content: never used
        row("gone", 0.95, [1, 2]),  # its memory did not pass the filters (or is forgotten)
    ]

    assert best_passages(rows, memories) == {"long": ((201, len(CONTENT)), 0.8)}


def test_a_memory_ranks_by_the_nearer_of_its_own_vector_and_its_passages() -> None:
    own = [long_doc(score=0.5), short_doc("short", score=0.7), long_doc("first-best", score=0.9)]
    memories = {d["id"]: d for d in own}
    best = {"long": ((201, len(CONTENT)), 0.95), "first-best": ((201, len(CONTENT)), 0.2)}

    ranked = vector_ranking(own, best, memories)

    assert [(d["id"], span, cosine) for d, span, cosine in ranked] == [
        ("long", (201, len(CONTENT)), 0.95),  # its later passage beat its first
        ("first-best", (0, 199), 0.9),  # its own vector is its first passage
        ("short", None, 0.7),  # one passage: no span
    ]


def test_a_memory_found_only_by_a_passage_is_ranked_too() -> None:
    memories = {"long": long_doc()}

    ranked = vector_ranking([], {"long": ((201, len(CONTENT)), 0.6)}, memories)

    assert [(d["id"], cosine) for d, _, cosine in ranked] == [("long", 0.6)]


def test_a_long_memory_found_by_its_words_points_at_the_passage_holding_them() -> None:
    assert passage_by_terms(long_doc(), ["galaxy", "telescope"]) == (201, len(CONTENT))
    assert passage_by_terms(short_doc("s"), ["galaxy"]) is None
