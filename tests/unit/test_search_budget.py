"""Retrieval that fits a budget and a floor: max_tokens, each hit's token_count, snippets, min_score.

Through a real MCP client in process (the hashing embedder keeps it fast), plus the budget rule itself
as a property: whatever the contents, what comes back never counts more than the budget.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.service.results import within_budget
from mcp_memory.views import SearchHit
from tests.services.mcp_client import call, call_error, stored

pytestmark = pytest.mark.anyio

LONG = " ".join(f"Filler sentence number {i} about nothing much." for i in range(120))
NEEDLE = LONG + " The passport is in the blue drawer of the hall cabinet. " + LONG


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    return TokenCounter.load(cache_dir=tmp_path_factory.mktemp("tiktoken"))


async def filled(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="My passport number ends in 42")
    await call(client, "add_turn", thread_id="t", role="user", content=NEEDLE)
    for i in range(6):
        await call(
            client, "add_turn", thread_id="t", role="user", content=f"Passport renewal note {i}: bring photos"
        )


async def test_every_hit_carries_its_token_count(client: Client, tokenizer: TokenCounter) -> None:
    await filled(client)
    found = await call(client, "search_memory", query="passport")
    assert found["results"]
    for hit in found["results"]:
        whole = (await stored(client, hit["id"]))["content"]
        assert hit["token_count"] == tokenizer.count(whole) and "snippet" not in hit
        assert hit.get("content", whole) == whole  # whole, or (a long memory) the part that matched


@pytest.mark.parametrize("budget", [20, 60, 150, 400])
async def test_results_never_exceed_the_budget(client: Client, tokenizer: TokenCounter, budget: int) -> None:
    await filled(client)
    everything = await call(client, "search_memory", query="passport drawer", limit=8)
    found = await call(client, "search_memory", query="passport drawer", limit=8, max_tokens=budget)
    shown = [hit["content"] if "content" in hit else hit["passage"]["text"] for hit in found["results"]]
    assert sum(tokenizer.count(text) for text in shown) <= budget
    order = [hit["id"] for hit in everything["results"]]
    assert [hit["id"] for hit in found["results"]] == [
        i for i in order if i in {h["id"] for h in found["results"]}
    ]


async def test_a_long_memory_comes_back_as_a_snippet_of_the_match(client: Client) -> None:
    await filled(client)
    found = await call(client, "search_memory", query="blue drawer", limit=3, max_tokens=90)
    [long] = [hit for hit in found["results"] if hit.get("snippet")]
    # Whole sentences, starting with the one that matched.
    assert long["content"].startswith("The passport is in the blue drawer") and "…" not in long["content"]
    whole = await client.read_resource(f"memory://memories/{long['id']}")
    assert json.loads(whole.contents[0].text)["content"] == NEEDLE  # type: ignore[union-attr]


async def test_min_score_keeps_hits_at_least_that_likely_and_scores_run_best_first(client: Client) -> None:
    await filled(client)
    everything = await call(client, "search_memory", query="passport", limit=8)
    scores = [hit["score"] for hit in everything["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    floor = scores[len(scores) // 2]
    kept = await call(client, "search_memory", query="passport", limit=8, min_score=floor)
    assert [hit["id"] for hit in kept["results"]] == [
        h["id"] for h in everything["results"] if h["score"] >= floor
    ]
    assert (await call(client, "search_memory", query="passport", min_score=1.0))["results"] == [] or all(
        h["score"] == 1.0
        for h in (await call(client, "search_memory", query="passport", min_score=1.0))["results"]
    )


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"min_score": -0.1}, "min_score"),
        ({"min_score": 1.5}, "min_score"),
        ({"as_of": "last tuesday-ish"}, "as_of"),
    ],
)
async def test_bad_budgets_and_floors_are_clear_errors(
    client: Client, arguments: dict[str, object], named: str
) -> None:
    await filled(client)
    message = await call_error(client, "search_memory", query="passport", **arguments)
    assert named in message


async def test_recall_fits_its_budget(client: Client, tokenizer: TokenCounter) -> None:
    await filled(client)
    whole = await client.get_prompt("recall", {"query": "where is the passport drawer"})
    small = await client.get_prompt("recall", {"query": "where is the passport drawer", "max_tokens": "12"})
    text = small.messages[-1].content.text  # type: ignore[union-attr]
    assert len(text) < len(whole.messages[-1].content.text)  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="max_tokens"):
        await client.get_prompt("recall", {"query": "passport", "max_tokens": "-1"})


def hits_of(contents: list[str]) -> list[SearchHit]:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    return [
        SearchHit(
            id=f"turn_{n:032x}",
            type="turn",
            thread_id="t",
            role="user",
            content=content,
            created_at=now,
            score=0.5,
            token_count=len(content.split()),
            matched_by="text",
        )
        for n, content in enumerate(contents)
    ]


@settings(max_examples=60, deadline=None)
@given(
    contents=st.lists(
        st.text(alphabet=st.sampled_from("abc xyz passport.\n"), min_size=0, max_size=400), max_size=8
    ),
    budget=st.integers(min_value=1, max_value=300),
)
def test_what_fits_never_exceeds_the_budget(contents: list[str], budget: int) -> None:
    count = lambda text: len(text.split())  # noqa: E731 - any monotone counter will do
    hits = hits_of(contents)
    fitted = within_budget(hits, budget, count, ["passport"])
    assert sum(count(hit.content) for hit in fitted) <= budget
    order = [hit.id for hit in hits]
    assert [order.index(hit.id) for hit in fitted] == sorted(order.index(hit.id) for hit in fitted)
    assert all(
        hit.snippet == (hit.content != original.content.strip())
        for hit, original in ((h, next(o for o in hits if o.id == h.id)) for h in fitted)
    )


def test_a_long_memory_is_cut_to_whole_sentences_around_the_match() -> None:
    words = " ".join(f"Filler w{i} here." for i in range(200)) + " The passport is in the drawer. " + LONG
    count = lambda text: len(text.split())  # noqa: E731
    (cut,) = within_budget(hits_of([words]), 90, count, ["passport"])
    assert "The passport is in the drawer." in cut.content and cut.snippet and count(cut.content) <= 90
    assert cut.content.endswith(".") and cut.content[0].isupper() and "…" not in cut.content
