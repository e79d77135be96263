"""Why a search hit matched (`matched_by`): the rule on a hit's signals, the service's results, and what a
real MCP client sees in process."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_memory.models import Hit, Memory, SearchMode
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.relevance import MEANING_FLOOR, HitSignals, matched_by
from mcp_memory.service.results import search_hits
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("overlap", "cosine", "mode", "expected"),
    [
        (0.5, None, "text", "text"),
        (0.0, None, "text", "text"),  # a text search found it by its words, even a stemmed or phrase match
        (1.0, 0.99, "vector", "meaning"),  # the text ranking took no part, whatever words are shared
        (0.0, 0.1, "vector", "meaning"),
        (0.5, MEANING_FLOOR, "hybrid", "both"),
        (1.0, 0.95, "hybrid", "both"),
        (0.5, MEANING_FLOOR - 0.01, "hybrid", "text"),
        (0.0, 0.9, "hybrid", "meaning"),
        (0.0, 0.05, "hybrid", "meaning"),  # holding none of the query's words, only the vectors found it
    ],
)
def test_the_rule(overlap: float, cosine: float | None, mode: SearchMode, expected: str) -> None:
    assert matched_by(HitSignals(rank=1, overlap=overlap, cosine=cosine), mode) == expected


def words(text: str) -> int:
    return len(text.split())


def test_every_result_carries_the_reason_of_its_own_signals() -> None:
    hits = [
        Hit(memory=Memory(id=f"m{i}", user_id="u", content=f"memory {i}", token_count=2), score=0.0)
        for i in range(3)
    ]
    signals = [HitSignals(1, 1.0, 0.9), HitSignals(2, 1.0, 0.1), HitSignals(3, 0.0, 0.6)]
    found = search_hits(hits, signals, words, SearchQuery(text="memory"))
    assert [h.matched_by for h in found] == ["both", "text", "meaning"]
    by_vector = search_hits(hits, signals, words, SearchQuery(text="memory", mode="vector"))
    assert [h.matched_by for h in by_vector] == ["meaning"] * 3
    budgeted = search_hits(hits, signals, words, SearchQuery(text="memory", max_tokens=4))
    assert [h.matched_by for h in budgeted] == ["both", "text"]  # kept through the token budget


async def test_a_real_client_sees_why_each_hit_matched(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="I like green tea in the morning")
    await call(client, "add_turn", thread_id="t", role="user", content="The deploy target is eu-west")
    await call(client, "add_turn", thread_id="t", role="user", content="My cat is named Pixel")

    hybrid = await call(client, "search_memory", query="green tea", limit=10)
    reasons = {hit["content"]: hit["matched_by"] for hit in hybrid["results"]}
    assert len(reasons) == 3 and set(reasons.values()) <= {"text", "meaning", "both"}
    assert reasons["I like green tea in the morning"] in ("text", "both")
    assert reasons["My cat is named Pixel"] == "meaning"  # none of the query's words: the vectors found it

    text = await call(client, "search_memory", query="green tea", mode="text")
    assert text["results"][0]["content"] == "I like green tea in the morning"
    assert {hit["matched_by"] for hit in text["results"]} == {"text"}

    vector = await call(client, "search_memory", query="green tea", mode="vector")
    assert {hit["matched_by"] for hit in vector["results"]} == {"meaning"}
