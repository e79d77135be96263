"""timeline (issue 48): what happened, in what order. Exchanges (a user's turn with its reply) oldest
first, sessions split on pauses, ids that open the memory, a budget that holds for the whole answer,
pages that cover the range once, and a query that picks the exchanges about a topic."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import Memory, short_id
from mcp_memory.service import timeline
from mcp_memory.service.timeline import exchanges_of
from tests.services.mcp_client import call, call_error, stored

pytestmark = pytest.mark.anyio

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
TOPICS = [
    "the login page redesign",
    "the billing migration to Stripe",
    "flaky CI on the payments service",
    "the Postgres upgrade to version 16",
    "onboarding emails for new teams",
]


def turn(memory_id: str, role: str, minutes: float, thread: str = "t", content: str = "text") -> Memory:
    return Memory(
        id=memory_id,
        user_id="u",
        thread_id=thread,
        role=role,  # type: ignore[arg-type]
        type="turn",
        content=content,
        created_at=START + timedelta(minutes=minutes),
    )


def test_exchanges_pair_each_turn_with_what_followed_it_in_its_own_thread() -> None:
    exchanges = exchanges_of(
        [
            turn("r0", "assistant", 0),  # a reply with no turn before it: an exchange of its own
            turn("u1", "user", 1),
            turn("x1", "user", 1.5, thread="other"),
            turn("a1", "assistant", 2),
            turn("t1", "tool", 2.5),
            turn("y1", "assistant", 3, thread="other"),
            turn("u2", "user", 4),
        ]
    )
    shapes = [(e.turn and e.turn.id, [r.id for r in e.replies]) for e in exchanges]
    assert shapes == [(None, ["r0"]), ("u1", ["a1", "t1"]), ("x1", ["y1"]), ("u2", [])]
    assert exchanges[1].reply is not None and exchanges[1].reply.id == "a1"


def test_sessions_split_on_a_pause_of_hours_and_are_numbered_in_time_order() -> None:
    exchanges = exchanges_of(
        [
            turn("u1", "user", 0),
            turn("a1", "assistant", 1),
            turn("u2", "user", 30),  # half an hour later: the same session
            turn("x1", "user", 40, thread="other"),  # another thread: its own session
            turn("u3", "user", 60 * 24),  # the next day
        ]
    )
    assert [e.session for e in exchanges] == [1, 1, 2, 3]


def test_a_short_id_keeps_the_type_and_twelve_hex_digits() -> None:
    assert short_id("turn_" + "0123456789abcdef" * 2) == "turn_0123456789ab"
    assert short_id("summary:u:t") == "summary:u:t"  # other ids whole


async def add_conversation(client: Client) -> list[str]:
    """Five sessions a day apart, each of four exchanges on one topic; the ids in order."""
    ids = []
    for day, topic in enumerate(TOPICS):
        for step in range(4):
            at = START + timedelta(days=day, minutes=step * 3)
            for role, words in (
                ("user", f"Step {step} of {topic}: what should we do about it next? More detail follows."),
                ("assistant", f"Sure. For {topic}, step {step} means checking the logs first. Then more."),
            ):
                out = await call(
                    client, "add_turn", thread_id="proj", role=role, content=words, created_at=at.isoformat()
                )
                ids.append(out["id"])
                at += timedelta(minutes=1)
    return ids


def full_times(items: list[dict[str, Any]]) -> list[str]:
    """Each line's date and time, the date carried from the line that gave it."""
    day, times = "", []
    for item in items:
        if len(item["at"]) > 5:
            day = item["at"][:10]
        times.append(f"{day} {item['at'][-5:]}")
    return times


@pytest.fixture
def tokenizer(tmp_path: Path) -> TokenCounter:
    return TokenCounter.load("o200k_base", cache_dir=tmp_path / "tiktoken")


async def test_the_outline_lists_every_exchange_oldest_first_with_ids_that_open_it(client: Client) -> None:
    ids = await add_conversation(client)
    out = await call(client, "timeline", thread_id="proj")
    assert (out["in_range"], out["listed"], out["left_out"], out["sessions"]) == (20, 20, 0, 5)
    assert "next_cursor" not in out
    items = out["items"]
    assert [item["id"] for item in items] == [short_id(i) for i in ids[0::2]]
    assert [item["reply_id"] for item in items] == [short_id(i) for i in ids[1::2]]
    # Read as a log: a session's number and a day's date on their first line only.
    assert [item.get("session") for item in items] == [s for d in range(5) for s in (d + 1, None, None, None)]
    assert [item["at"] for item in items[:5]] == [
        "2024-03-01 09:00",
        "09:03",
        "09:06",
        "09:09",
        "2024-03-02 09:00",
    ]
    assert "thread_id" not in items[0]
    assert items[4]["said"].startswith("Step 0 of the billing migration to Stripe")
    assert not items[4]["reply"].startswith("Sure"), "the reply's gist skips its filler"
    opened = await stored(client, items[4]["id"])  # a short id opens the memory whole
    assert opened["id"] == ids[8] and opened["content"].startswith("Step 0 of the billing")


async def test_pages_cover_the_range_once_in_order_and_each_answer_keeps_the_budget(
    client: Client, tokenizer: TokenCounter
) -> None:
    await add_conversation(client)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        arguments: dict[str, Any] = {"thread_id": "proj", "max_tokens": 400}
        if cursor:
            arguments["cursor"] = cursor
        result = await client.call_tool("timeline", arguments)
        assert not result.is_error, result.content
        text = result.content[0].text  # type: ignore[union-attr]
        assert tokenizer.count(text) <= 400, text
        out = json.loads(text)
        seen += [item["id"] for item in out["items"]]
        assert out["left_out"] == 20 - len(seen)
        pages += 1
        cursor = out.get("next_cursor")
        if cursor is None:
            break
    assert pages > 1 and len(seen) == len(set(seen)) == 20
    whole = await call(client, "timeline", thread_id="proj")
    assert seen == [item["id"] for item in whole["items"]]


async def test_a_query_lists_the_exchanges_about_its_topic_in_time_order(client: Client) -> None:
    await add_conversation(client)
    out = await call(client, "timeline", thread_id="proj", query="billing migration Stripe", max_tokens=600)
    about = [item for item in out["items"] if "billing" in item["said"]]
    assert len(about) == 4 and all(item.get("matched") for item in about)
    assert out["matched"] >= 4
    times = full_times(out["items"])
    assert times == sorted(times)
    assert out["listed"] < out["in_range"] == 20


async def test_since_and_until_bound_the_range(client: Client) -> None:
    await add_conversation(client)
    out = await call(
        client, "timeline", thread_id="proj", since="2024-03-02T00:00:00Z", until="2024-03-03T23:59:00Z"
    )
    assert out["in_range"] == 8 and {at[:10] for at in full_times(out["items"])} == {
        "2024-03-02",
        "2024-03-03",
    }


async def test_bad_arguments_are_named_and_nothing_changes(client: Client) -> None:
    await add_conversation(client)
    assert "max_tokens" in await call_error(client, "timeline", thread_id="proj", max_tokens=10)
    assert "cursor" in await call_error(client, "timeline", thread_id="proj", cursor="not-a-cursor")
    first = await call(client, "timeline", thread_id="proj", max_tokens=400)
    message = await call_error(
        client, "timeline", thread_id="other", max_tokens=400, cursor=first["next_cursor"]
    )
    assert "other arguments" in message
    with pytest.raises(MCPError, match="no memory with id 'turn_000000000000'"):
        await client.read_resource("memory://memories/turn_000000000000")


async def test_the_thread_timeline_resource_is_the_outline(client: Client) -> None:
    await add_conversation(client)
    [content] = (await client.read_resource("memory://threads/proj/timeline")).contents
    out = json.loads(content.text)  # type: ignore[union-attr]
    assert out["in_range"] == 20 and len(out["items"]) == 20


async def test_a_project_timeline_holds_its_sessions_only_each_line_naming_its_thread(client: Client) -> None:
    for thread, day in (("api-1a2b3c4d.s1", 0), ("api-1a2b3c4d.s2", 1), ("web-00000000.s1", 0)):
        for role in ("user", "assistant"):
            at = (START + timedelta(days=day, minutes=1 if role == "assistant" else 0)).isoformat()
            await call(
                client, "add_turn", thread_id=thread, role=role, content=f"{role} in {thread}", created_at=at
            )
    out = await call(client, "timeline", project="api-1a2b3c4d")
    assert out["in_range"] == 2 and out["sessions"] == 2
    assert [item["thread_id"] for item in out["items"]] == ["api-1a2b3c4d.s1", "api-1a2b3c4d.s2"]


async def test_a_range_larger_than_one_read_keeps_its_newest_and_says_so(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    await add_conversation(client)
    monkeypatch.setattr(timeline, "MAX_SCAN", 10)
    monkeypatch.setattr(timeline, "SCAN_PAGE", 4)
    out = await call(client, "timeline", thread_id="proj")
    assert out["older_unread"] is True and out["in_range"] == 5
    assert full_times(out["items"])[-1].startswith("2024-03-05")
