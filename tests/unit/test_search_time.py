"""Time in queries: "yesterday", "last week", "in March" narrow search_memory to when memories were made,
resolved against now or against as_of; explicit since/until win over the query's words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mcp import Client

from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio


async def replayed(client: Client) -> dict[str, str]:
    """Three turns about the garden, said 20 days, 3 days and 1 day ago (in that order)."""
    now = datetime.now(UTC)
    ids = {}
    for days, content in [
        (20, "We planted tomatoes in the garden"),
        (3, "The garden needs water"),
        (1, "Garden fence fixed"),
    ]:
        when = (now - timedelta(days=days)).replace(microsecond=0).isoformat()
        out = await call(
            client, "add_turn", thread_id="garden", role="user", content=content, created_at=when
        )
        ids[content] = out["id"]
    return ids


async def test_yesterday_narrows_to_that_day(client: Client) -> None:
    ids = await replayed(client)
    found = await call(client, "search_memory", query="what happened in the garden yesterday")
    assert [hit["id"] for hit in found["results"]] == [ids["Garden fence fixed"]]
    assert found["time_filter"]["phrase"] == "yesterday"
    unfiltered = await call(client, "search_memory", query="what happened in the garden")
    assert len(unfiltered["results"]) == 3 and unfiltered.get("time_filter") is None


async def test_days_ago_and_explicit_bounds(client: Client) -> None:
    ids = await replayed(client)
    found = await call(client, "search_memory", query="garden 3 days ago")
    assert [hit["id"] for hit in found["results"]] == [ids["The garden needs water"]]
    since = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    explicit = await call(client, "search_memory", query="garden 3 days ago", since=since)
    assert len(explicit["results"]) == 3 and explicit.get("time_filter") is None  # since/until win


async def test_time_words_resolve_against_as_of(client: Client) -> None:
    ids = await replayed(client)
    as_of = (datetime.now(UTC) - timedelta(days=19)).isoformat()
    found = await call(client, "search_memory", query="garden yesterday", as_of=as_of)
    assert [hit["id"] for hit in found["results"]] == [ids["We planted tomatoes in the garden"]]
