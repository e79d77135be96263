"""add_turn(created_at=...): replaying a conversation at the times it was said, through a real MCP client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mcp import Client

from tests.services.mcp_client import call, call_error, stored

pytestmark = pytest.mark.anyio


def at(value: str) -> datetime:
    return datetime.fromisoformat(value)


async def test_a_past_time_is_the_turns_time_everywhere(client: Client) -> None:
    out = await call(
        client, "add_turn", thread_id="trip", role="user", content="Book the Lisbon flat",
        created_at="2024-03-05T09:15:00Z",
    )  # fmt: skip
    said = datetime(2024, 3, 5, 9, 15, tzinfo=UTC)
    assert at((await stored(client, out["id"]))["created_at"]) == said
    wm = await call(client, "get_working_memory", thread_id="trip")
    assert [at(m["created_at"]) for m in wm["messages"]] == [said]
    found = await call(client, "search_memory", query="Lisbon flat")
    assert [at(r["created_at"]) for r in found["results"]] == [said]


async def test_a_time_without_a_zone_is_utc_and_an_offset_is_converted(client: Client) -> None:
    naive = await call(
        client, "add_turn", thread_id="t", role="user", content="a", created_at="2024-03-05T09:15:00"
    )
    offset = await call(
        client, "add_turn", thread_id="t", role="user", content="b", created_at="2024-03-05T11:15:00+01:00"
    )
    assert at((await stored(client, naive["id"]))["created_at"]) == datetime(2024, 3, 5, 9, 15, tzinfo=UTC)
    assert at((await stored(client, offset["id"]))["created_at"]) == datetime(2024, 3, 5, 10, 15, tzinfo=UTC)


async def test_a_future_time_is_refused_and_changes_nothing(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="the first turn")
    before = await call(client, "get_working_memory", thread_id="t")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    message = await call_error(
        client, "add_turn", thread_id="t", role="user", content="from tomorrow", created_at=tomorrow
    )
    assert "created_at" in message and "future" in message
    assert await call(client, "get_working_memory", thread_id="t") == before
    found = await call(client, "search_memory", query="from tomorrow", mode="text")
    assert [r["content"] for r in found["results"]] == []


async def test_a_time_within_the_clock_skew_allowance_is_taken_as_now(client: Client) -> None:
    ahead = datetime.now(UTC) + timedelta(minutes=2)
    out = await call(
        client, "add_turn", thread_id="t", role="user", content="skewed", created_at=ahead.isoformat()
    )
    skewed = at((await stored(client, out["id"]))["created_at"])
    assert skewed < ahead
    later = await call(client, "add_turn", thread_id="t", role="user", content="right after")
    assert at((await stored(client, later["id"]))["created_at"]) >= skewed


@pytest.mark.parametrize("value", ["last Tuesday", "2024-13-45", ""])
async def test_an_unparseable_time_is_refused_and_changes_nothing(client: Client, value: str) -> None:
    message = await call_error(client, "add_turn", thread_id="t", role="user", content="x", created_at=value)
    assert "created_at" in message and "ISO 8601" in message
    wm = await call(client, "get_working_memory", thread_id="t")
    assert wm["messages"] == [] and wm["token_count"] == 0


async def test_a_time_before_the_threads_latest_turn_is_refused(client: Client) -> None:
    await call(
        client, "add_turn", thread_id="t", role="user", content="ten", created_at="2024-03-05T10:00:00Z"
    )
    same = await call(
        client, "add_turn", thread_id="t", role="user", content="also ten", created_at="2024-03-05T10:00:00Z"
    )
    message = await call_error(
        client, "add_turn", thread_id="t", role="user", content="nine", created_at="2024-03-05T09:00:00Z"
    )
    assert "created_at" in message and "latest turn" in message
    wm = await call(client, "get_working_memory", thread_id="t")
    assert [m["content"] for m in wm["messages"]] == ["ten", "also ten"]
    assert wm["messages"][-1]["id"] == same["id"]
    # Another thread has its own order.
    await call(
        client, "add_turn", thread_id="other", role="user", content="nine", created_at="2024-03-05T09:00:00Z"
    )


async def test_replayed_turns_are_found_by_since_and_until_around_their_times(client: Client) -> None:
    replay = [
        ("2024-03-05T09:00:00Z", "user", "Which hotel did we pick in Porto?"),
        ("2024-03-05T09:01:00Z", "assistant", "The hotel by the river in Porto."),
        ("2024-03-12T18:30:00Z", "user", "Porto hotel booked for April."),
    ]
    for when, role, content in replay:
        await call(client, "add_turn", thread_id="porto", role=role, content=content, created_at=when)
    await call(client, "add_turn", thread_id="porto", role="user", content="Porto hotel, said today.")

    march_5 = await call(
        client,
        "search_memory",
        query="Porto hotel",
        since="2024-03-05T00:00:00Z",
        until="2024-03-05T23:59:59Z",
    )
    assert sorted(r["content"] for r in march_5["results"]) == sorted(c for _, _, c in replay[:2])
    from_march_12 = await call(
        client, "search_memory", query="Porto hotel", since="2024-03-12", until="2024-03-13"
    )
    assert [r["content"] for r in from_march_12["results"]] == ["Porto hotel booked for April."]
    wm = await call(client, "get_working_memory", thread_id="porto")
    times = [at(m["created_at"]) for m in wm["messages"]]
    assert times == sorted(times) and len(times) == 4
