"""The one ranking of every backend (search/ranking.py): candidates in, memories best first out."""

from __future__ import annotations

import pytest

from mcp_memory.search.query import SearchQuery
from mcp_memory.search.ranking import Candidate, TextCandidates, VectorCandidates, fuse, rank_score


def query(**fields: object) -> SearchQuery:
    return SearchQuery.model_validate({"text": "telescope nebula", "limit": 10, **fields})


def keys(ranked: list[object]) -> list[object]:
    return [r.key for r in ranked]  # type: ignore[attr-defined]


def test_score_fusion_adds_each_passages_normalized_scores_and_ranks_a_memory_by_its_best() -> None:
    text = TextCandidates([Candidate("words", 0, 10.0), Candidate("both", 1, 5.0)])
    near = VectorCandidates(
        [Candidate("near", 0, 0.9), Candidate("both", 1, 0.7), Candidate("both", 0, 0.8)], floor=0.5
    )

    ranked = fuse(query(), text, near, 10)

    # both: 5/10 + (0.7-0.5)/0.4 = 1.0 on its passage 1 (its passage 0 alone: 0.75); near: 1.0; words: 1.0
    assert sorted(keys(ranked)) == ["both", "near", "words"]  # type: ignore[type-var]
    assert [r.score for r in ranked] == pytest.approx([1.0, 1.0, 1.0])
    both = next(r for r in ranked if r.key == "both")
    assert (both.passage, both.cosine) == (1, 0.7)


def test_the_floor_of_the_cosine_scale_is_the_lowest_cosine_the_store_compared() -> None:
    text = TextCandidates([Candidate("words", 0, 1.0)])
    near = [Candidate("near", 0, 0.6)]

    over_all = fuse(query(), text, VectorCandidates(near, floor=0.2), 10)
    over_found = fuse(query(), text, VectorCandidates(near), 10)

    assert [(r.key, r.score) for r in over_all] == [("near", pytest.approx(1.0)), ("words", 1.0)]
    assert keys(over_found) == ["words", "near"]  # one cosine: no spread, no share from meaning
    assert over_found[1].score == 0.0


def test_a_text_candidate_outside_the_nearest_is_fused_with_its_named_cosine_but_never_ranked_by_rrf() -> (
    None
):
    text = TextCandidates([Candidate("words", 0, 2.0)])
    near = VectorCandidates([Candidate("near", 0, 0.9)], named=[Candidate("words", 0, 0.1)], floor=0.0)

    by_score = fuse(query(), text, near, 10)
    by_rank = fuse(query(fusion="rrf"), text, near, 10)

    assert [(r.key, r.cosine) for r in by_score] == [("words", 0.1), ("near", 0.9)]
    assert [(r.key, r.cosine) for r in by_rank] == [("words", 0.1), ("near", 0.9)]  # tie: text side first
    assert by_rank[0].score == pytest.approx(1 / 61)


def test_rrf_uses_the_querys_k_and_weights() -> None:
    text = TextCandidates([Candidate("a", 0, 3.0), Candidate("b", 0, 2.0)])
    near = VectorCandidates([Candidate("b", 0, 0.9), Candidate("a", 0, 0.8)])

    ranked = fuse(query(fusion="rrf", rrf_k=10, vector_weight=2.0), text, near, 10)

    assert keys(ranked) == ["b", "a"]
    assert ranked[0].score == pytest.approx(1 / 12 + 2 / 11)


def test_the_words_weight_of_the_owners_memory_scales_the_text_side() -> None:
    text = TextCandidates([Candidate("words", 0, 1.0)], weight=0.25)
    near = VectorCandidates([Candidate("near", 0, 0.9), Candidate("far", 0, 0.5)], floor=0.5)

    assert keys(fuse(query(), text, near, 10)) == ["near", "words", "far"]
    assert keys(fuse(query(text_weight=8.0), text, near, 10)) == ["words", "near", "far"]


def test_each_mode_ranks_by_its_own_side() -> None:
    text = TextCandidates([Candidate("words", 0, 1.0)])
    near = VectorCandidates([Candidate("near", 0, 0.9)])

    assert keys(fuse(query(mode="text"), text, None, 10)) == ["words"]
    assert keys(fuse(query(mode="vector"), TextCandidates(), near, 10)) == ["near"]
    assert keys(fuse(query(), TextCandidates(), near, 10)) == ["near"]


def test_a_ranked_only_text_list_scores_by_rank() -> None:
    assert [rank_score(r) for r in (1, 4, 100)] == [1.0, 0.5, 0.1]


def test_the_best_limit_memories() -> None:
    near = VectorCandidates([Candidate(i, 0, 1 - i / 10) for i in range(5)])

    assert keys(fuse(query(), TextCandidates(), near, 3)) == [0, 1, 2]
