"""What search finds, with the real local embedding model: keyword and paraphrased queries, and hybrid
against each single mode on a small labelled set carried here."""

from __future__ import annotations

import pytest

from mcp_memory.search.query import SearchQuery
from mcp_memory.service.memory_service import MemoryService

pytestmark = pytest.mark.anyio

USER = "tester"

# (thread, text) per memory; queries name the index of the memory they should find.
MEMORIES = [
    ("trip", "I'm planning a trip to Hawaii with my sister Maya in March."),
    ("trip", "Our budget for the whole trip is $10,000."),
    ("trip", "I'm vegetarian, so restaurants need meat-free options."),
    ("trip", "We fly out of Seattle on March 14."),
    ("trip", "Maya wants to go snorkeling at Molokini crater."),
    ("work", "The deploy target for the billing service is eu-west-1."),
    ("work", "Our on-call rotation changes every Monday at 9am."),
    ("work", "The database migration to Postgres 16 is scheduled for April."),
    ("work", "Ravi is the tech lead for the payments team."),
    ("work", "Friday deploys are forbidden after the outage last year."),
    ("home", "My dog Biscuit is a three-year-old golden retriever."),
    ("home", "The kitchen renovation quote came in at 23,500 euros."),
    ("home", "I have a peanut allergy, so please keep that in mind."),
    ("home", "I run 5 km every morning before work."),
    ("home", "My daughter starts piano lessons on Thursdays."),
    ("misc", "I prefer answers that are short and include code examples."),
    ("misc", "My favourite author is Ursula K. Le Guin."),
    ("misc", "I'm learning Japanese and can read hiragana already."),
]

QUERIES = [
    # keyword-style
    ("eu-west-1", 5),
    ("Molokini", 4),
    ("Postgres migration", 7),
    ("Biscuit", 10),
    ("peanut", 12),
    ("Le Guin", 16),
    # paraphrases: few or no shared words
    ("how much money can we spend on the vacation", 1),
    ("what foods does the user avoid eating", 2),
    ("which airport are we departing from", 3),
    ("what kind of pet do I have", 10),
    ("who leads the engineering team for payments", 8),
    ("how much will redoing the kitchen cost", 11),
    ("what exercise do I do daily", 13),
    ("which language am I studying", 17),
    ("when are we not allowed to ship releases", 9),
    ("what style of reply do I like", 15),
]


@pytest.fixture
async def indexed(model_service: MemoryService) -> tuple[MemoryService, list[str]]:
    ids = []
    for thread, text in MEMORIES:
        out = await model_service.add_turn(USER, thread, "user", text, None, 100_000)
        ids.append(out.turn.id)
    if model_service.vectors is not None:  # ranked once embedded: a search waits at most vector_wait_ms
        await model_service.vectors.settled(USER)
    return model_service, ids


async def _mrr(service: MemoryService, ids: list[str], mode: str) -> tuple[float, int]:
    reciprocal, top1 = 0.0, 0
    for query, expected in QUERIES:
        found = [
            h.id
            for h in (
                await service.search(
                    SearchQuery.of(USER, query, mode=mode, limit=10, settings=service.settings)
                )
            ).results
        ]
        if ids[expected] in found:
            rank = found.index(ids[expected]) + 1
            reciprocal += 1 / rank
            top1 += rank == 1
    return reciprocal / len(QUERIES), top1


async def test_keyword_queries_find_the_right_turn_first(indexed: tuple[MemoryService, list[str]]) -> None:
    service, ids = indexed
    for query, expected in QUERIES[:6]:
        found = (
            await service.search(SearchQuery.of(USER, query, limit=3, settings=service.settings))
        ).results
        assert found[0].id == ids[expected], query


async def test_paraphrased_queries_find_the_right_turn_first(
    indexed: tuple[MemoryService, list[str]],
) -> None:
    service, ids = indexed
    misses = []
    for query, expected in QUERIES[6:]:
        found = (
            await service.search(SearchQuery.of(USER, query, limit=3, settings=service.settings))
        ).results
        if found[0].id != ids[expected]:
            misses.append(query)
    # A small model on one-line memories: allow at most one of ten to land second or lower.
    assert len(misses) <= 1, misses


async def test_hybrid_beats_or_equals_each_single_mode(indexed: tuple[MemoryService, list[str]]) -> None:
    service, ids = indexed
    hybrid, hybrid_top1 = await _mrr(service, ids, "hybrid")
    text, text_top1 = await _mrr(service, ids, "text")
    vector, vector_top1 = await _mrr(service, ids, "vector")
    assert hybrid >= text and hybrid >= vector, (hybrid, text, vector)
    assert hybrid_top1 >= max(text_top1, vector_top1), (hybrid_top1, text_top1, vector_top1)
    assert text < 1.0, "the set must have queries keywords alone cannot answer"


async def test_search_spans_threads_unless_one_is_named(indexed: tuple[MemoryService, list[str]]) -> None:
    service, _ = indexed
    everywhere = {
        h.thread_id
        for h in (
            await service.search(
                SearchQuery.of(USER, "plans and schedule", limit=18, settings=service.settings)
            )
        ).results
    }
    assert len(everywhere) > 1
    only_home = (
        await service.search(
            SearchQuery.of(USER, "plans and schedule", thread_id="home", limit=18, settings=service.settings)
        )
    ).results
    assert only_home and {h.thread_id for h in only_home} == {"home"}


async def test_another_users_memories_are_never_found(indexed: tuple[MemoryService, list[str]]) -> None:
    service, _ = indexed
    assert (
        await service.search(SearchQuery.of("someone-else", "Hawaii trip budget", settings=service.settings))
    ).results == []
