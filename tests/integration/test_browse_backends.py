"""Browsing, budgets and time through a real MCP client, on each production combination of stores:
the embedded default, working memory on a real Redis with long term on SQLite, and long term on the
local Cosmos-protocol server (which has no hybrid search: search runs on the first two only; list,
created_at and bad values run on all three)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_memory.config import LongTermSettings, Settings
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.mcp.server import build_server
from tests.contract.conftest_long_term import local_cosmos_settings
from tests.services.cosmos_server import CosmosServer
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio


async def connected(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[tuple[str, Client]]:
    update: dict[str, Any] = {}
    if request.param == "redis+sqlite":
        update["working"] = request.getfixturevalue("redis_working_settings")
    if request.param == "cosmos":
        server: CosmosServer = request.getfixturevalue("cosmos_server")
        update["long_term"] = LongTermSettings(backend="cosmos", cosmos=local_cosmos_settings(server))
    async with Client(build_server(settings.model_copy(update=update)), raise_exceptions=False) as client:
        yield request.param, client


@pytest.fixture(params=["sqlite", "redis+sqlite", "cosmos"])
async def backend(
    request: pytest.FixtureRequest, fast_settings: Settings
) -> AsyncIterator[tuple[str, Client]]:
    async for found in connected(request, fast_settings):
        yield found


# The local Cosmos-protocol server cannot run hybrid search (tests/contract/test_cosmos_sql.py checks its SQL).
@pytest.fixture(params=["sqlite", "redis+sqlite"])
async def searchable(
    request: pytest.FixtureRequest, fast_settings: Settings
) -> AsyncIterator[tuple[str, Client]]:
    async for found in connected(request, fast_settings):
        yield found


def ago(days: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days)).replace(microsecond=0).isoformat()


async def test_pages_cover_every_memory_once_while_writes_happen(backend: tuple[str, Client]) -> None:
    _, client = backend
    first = [
        (await call(client, "add_turn", thread_id="t", role="user", content=f"note {i}"))["id"]
        for i in range(7)
    ]
    for order in ("newest", "oldest"):
        seen: list[str] = []
        cursor = None
        while True:
            arguments: dict[str, Any] = {"types": ["turn"], "limit": 3, "order": order}
            if cursor:
                arguments["cursor"] = cursor
            page = await call(client, "list_memories", **arguments)
            seen += [m["id"] for m in page["memories"]]
            await call(
                client, "add_turn", thread_id="other", role="user", content=f"written while paging {order}"
            )
            cursor = page.get("next_cursor")  # left out on the last page
            if cursor is None:
                break
        assert [i for i in seen if i in first] == (first[::-1] if order == "newest" else first)
        assert len(seen) == len(set(seen))  # nothing twice


async def test_created_at_places_turns_in_time_and_since_until_narrow_the_list(
    backend: tuple[str, Client],
) -> None:
    _, client = backend
    old = await call(
        client, "add_turn", thread_id="past", role="user", content="the old plan", created_at=ago(30)
    )
    new = await call(
        client, "add_turn", thread_id="past", role="user", content="the new plan", created_at=ago(2)
    )
    said = (await call(client, "get_working_memory", thread_id="past"))["messages"]
    when = {m["id"]: m["created_at"] for m in said}
    assert when[old["id"]] < when[new["id"]]
    recent = await call(client, "list_memories", types=["turn"], since=ago(10))
    assert [m["id"] for m in recent["memories"]] == [new["id"]]
    then = await call(client, "list_memories", types=["turn"], as_of=ago(20))
    assert [m["id"] for m in then["memories"]] == [old["id"]]


async def test_bad_values_are_clear_errors_that_change_nothing(backend: tuple[str, Client]) -> None:
    _, client = backend
    await call(client, "add_turn", thread_id="t", role="user", content="kept as it is")
    before = await call(client, "get_working_memory", thread_id="t")
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert "created_at" in await call_error(
        client, "add_turn", thread_id="t", role="user", content="x", created_at=future
    )
    assert "created_at" in await call_error(
        client, "add_turn", thread_id="t", role="user", content="x", created_at="soon"
    )
    assert "cursor" in await call_error(client, "list_memories", cursor="not-a-cursor")
    assert "limit" in await call_error(client, "list_memories", limit=0)
    assert "as_of" in await call_error(client, "list_memories", as_of="the other day")
    assert await call(client, "get_working_memory", thread_id="t") == before


async def test_budgets_floors_and_time_words_in_search(
    searchable: tuple[str, Client], tmp_path: Path
) -> None:
    _, client = searchable
    tokenizer = TokenCounter.load(cache_dir=tmp_path / "tiktoken")  # the server's (the default encoding)
    long = " ".join(f"Line {i} of the packing list for the trip." for i in range(80))
    await call(client, "add_turn", thread_id="trip", role="user", content=long, created_at=ago(1))
    await call(
        client,
        "add_turn",
        thread_id="trip",
        role="user",
        content="Packing list: passport",
        created_at=ago(0.5),
    )
    await call(
        client, "add_turn", thread_id="old", role="user", content="An old packing list", created_at=ago(40)
    )
    for budget in (10, 40, 120):
        found = await call(client, "search_memory", query="packing list", max_tokens=budget)
        # What a hit shows is its content, or a long memory's passage (token_count is the whole memory's).
        shown = [hit["content"] if "content" in hit else hit["passage"]["text"] for hit in found["results"]]
        assert sum(tokenizer.count(text) for text in shown) <= budget
    floored = await call(client, "search_memory", query="packing list", min_score=0.2)
    assert all(hit["score"] >= 0.2 for hit in floored["results"])
    recent = await call(client, "search_memory", query="packing list from last week", mode="text")
    assert recent["time_filter"]["phrase"] == "last week" or recent["time_filter"]["phrase"].endswith(
        "last week"
    )
    everything = await call(client, "search_memory", query="packing list", mode="text")
    assert len(everything["results"]) == 3
    narrowed = await call(client, "search_memory", query="packing list in the past 3 days", mode="text")
    assert {hit["thread_id"] for hit in narrowed["results"]} == {"trip"}
