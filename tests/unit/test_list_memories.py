"""list_memories and memory://facts through a real MCP client connected in process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import MemoryServer, build_server
from mcp_memory.models import Memory
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio

LISTED_FIELDS = {"id", "type", "thread_id", "role", "content", "created_at", "kind", "token_count"}


@pytest.fixture
def server(fast_settings: Settings) -> MemoryServer:
    return build_server(fast_settings)


@pytest.fixture
async def connected(server: MemoryServer) -> AsyncIterator[Client]:
    async with Client(server, raise_exceptions=False) as c:
        yield c


async def turns(client: Client, n: int, thread_id: str = "t1", start: int = 0) -> list[str]:
    return [
        (await call(client, "add_turn", thread_id=thread_id, role="user", content=f"message {i}"))["id"]
        for i in range(start, start + n)
    ]


async def listed(client: Client, **arguments: Any) -> list[str]:
    return [m["id"] for m in (await call(client, "list_memories", **arguments))["memories"]]


async def test_list_memories_is_a_read_only_tool_with_described_arguments(connected: Client) -> None:
    tools = {t.name: t for t in (await connected.list_tools()).tools}
    tool = tools["list_memories"]
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert tool.output_schema is not None and tool.description
    properties = tool.input_schema["properties"]
    expected = {"types", "thread_id", "kind", "since", "until", "include_superseded", "order", "limit"}
    assert expected | {"cursor", "as_of", "space", "full_content"} == set(properties)
    assert all(properties[name].get("description") for name in properties)
    assert not tool.input_schema.get("required")


@pytest.mark.parametrize("order", ["newest", "oldest"])
async def test_cursor_pages_cover_every_memory_once_while_turns_are_added(
    connected: Client, order: str
) -> None:
    existing = await turns(connected, 7)
    seen: list[str] = []
    added: list[str] = []
    cursor = None
    while True:
        page = await call(connected, "list_memories", order=order, limit=3, cursor=cursor)
        assert len(page["memories"]) <= 3
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str)
        added += await turns(connected, 2, start=100 + len(added))

    assert len(seen) == len(set(seen))
    if order == "newest":
        assert seen == existing[::-1]
    else:
        assert seen[: len(existing)] == existing and set(seen[len(existing) :]) <= set(added)
        assert seen[len(existing) :]  # what was added meanwhile comes at the end


async def test_a_listed_memory_has_the_contract_fields(connected: Client) -> None:
    (turn,) = await turns(connected, 1)
    fact = await call(connected, "remember", content="The user is vegetarian", type="preference")

    page = await call(connected, "list_memories")

    assert page.get("next_cursor") is None
    first, second = page["memories"]
    assert set(first) >= LISTED_FIELDS
    assert (first["id"], first["type"], first["kind"]) == (fact["id"], "fact", "preference")
    assert first.get("superseded_by") is None and first["token_count"] > 0
    assert (second["id"], second["role"], second["content"]) == (turn, "user", "message 0")
    assert second["thread_id"] == "t1" and second.get("kind") is None


async def test_filters_each_narrow(connected: Client) -> None:
    a = await turns(connected, 2, thread_id="a")
    b = await turns(connected, 1, thread_id="b")
    pref = (await call(connected, "remember", content="Likes green tea", type="preference"))["id"]
    sem = (await call(connected, "remember", content="Lives in Lisbon", thread_id="a"))["id"]
    everything = [sem, pref, *b, *a[::-1]]

    assert await listed(connected) == everything
    assert await listed(connected, types=["fact"]) == [sem, pref]
    assert await listed(connected, types=["turn"]) == [*b, *a[::-1]]
    assert await listed(connected, thread_id="a") == [sem, *a[::-1]]
    assert await listed(connected, kind="preference") == [pref]
    assert await listed(connected, kind="semantic") == [sem]
    page = await call(connected, "list_memories", order="oldest")
    middle = next(m["created_at"] for m in page["memories"] if m["id"] == b[0])
    assert await listed(connected, since=middle) == [sem, pref, *b]
    assert await listed(connected, until=middle) == [*b, *a[::-1]]
    assert await listed(connected, until="2000-01-01") == []


async def test_superseded_facts_and_as_of(connected: Client, server: MemoryServer) -> None:
    store = server.host.service.stores.long_term
    old_time = datetime(2025, 1, 1, tzinfo=UTC)
    moved = datetime(2025, 6, 1, tzinfo=UTC)
    facts = {"fact_type": "semantic"}
    await store.put(
        [
            Memory(
                id="fact_porto",
                user_id="tester",
                type="fact",
                content="Lives in Porto",
                metadata=facts,
                created_at=old_time,
                superseded_by="fact_lisbon",
                supersede_reason="contradict",
                superseded_at=moved,
            ),
            Memory(
                id="fact_lisbon",
                user_id="tester",
                type="fact",
                content="Lives in Lisbon",
                metadata=facts,
                created_at=moved,
            ),
        ]
    )

    assert await listed(connected, types=["fact"]) == ["fact_lisbon"]
    both = await call(connected, "list_memories", types=["fact"], include_superseded=True)
    assert [(m["id"], m.get("superseded_by")) for m in both["memories"]] == [
        ("fact_lisbon", None),
        ("fact_porto", "fact_lisbon"),
    ]
    before = await call(connected, "list_memories", as_of="2025-03-01T00:00:00Z")
    assert [m["id"] for m in before["memories"]] == ["fact_porto"]
    assert before["memories"][0].get("superseded_by") is None  # as it stood then: current
    assert await listed(connected, as_of=(moved + timedelta(days=1)).isoformat()) == ["fact_lisbon"]
    assert await listed(connected, as_of="2024-12-31") == []


async def test_bad_arguments_are_clear_errors_that_change_nothing(connected: Client) -> None:
    await turns(connected, 3)
    before = await call(connected, "list_memories")
    newest_cursor = (await call(connected, "list_memories", limit=1))["next_cursor"]

    for arguments, named in [
        ({"limit": 0}, "limit"),
        ({"limit": -1}, "limit"),
        ({"limit": 101}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "eyJ2IjoxfQ"}, "cursor"),  # base64 JSON, but no key in it
        (
            {"cursor": "eyJ2IjogMSwgIm9yZGVyIjogIm5ld2VzdCIsICJpZCI6ICJ4In0"},
            "cursor",
        ),  # an order and an id, but no time
        ({"cursor": newest_cursor, "order": "oldest"}, "cursor"),
        ({"since": "yesterday"}, "since"),
        ({"until": "31/01/2026"}, "until"),
        ({"as_of": "last week"}, "as_of"),
        ({"since": "2026-02-01", "until": "2026-01-01"}, "since"),
        ({"kind": "opinion"}, "kind"),
        ({"order": "random"}, "order"),
        ({"types": ["note"]}, "types"),
        ({"thread_id": "no spaces allowed"}, "thread_id"),
    ]:
        message = await call_error(connected, "list_memories", **arguments)
        assert named in message, (arguments, message)

    assert await call(connected, "list_memories") == before


async def test_a_cursor_for_the_other_order_names_the_orders(connected: Client) -> None:
    await turns(connected, 2)
    cursor = (await call(connected, "list_memories", limit=1, order="oldest"))["next_cursor"]

    message = await call_error(connected, "list_memories", cursor=cursor)

    assert "oldest" in message and "newest" in message


async def _facts(client: Client) -> tuple[str, str | None]:
    result = await client.read_resource("memory://facts")
    content = result.contents[0]
    return content.text, content.mime_type  # type: ignore[union-attr]


async def test_facts_resource_is_one_line_per_active_fact_newest_first(connected: Client) -> None:
    assert "memory://facts" in {str(r.uri) for r in (await connected.list_resources()).resources}
    empty, mime = await _facts(connected)
    assert mime == "text/plain" and "no facts" in empty.lower()

    tea = await call(connected, "remember", content="Likes green tea", type="preference")
    await turns(connected, 1)  # turns are not facts
    city = await call(connected, "remember", content="Lives in\nLisbon")
    text, _ = await _facts(connected)

    day = datetime.now(UTC).date().isoformat()
    assert text.splitlines() == [
        f"- Lives in Lisbon (semantic, since {day}, id {city['id']})",
        f"- Likes green tea (preference, since {day}, id {tea['id']})",
    ]


async def test_list_memories_result_is_json_serializable_page(connected: Client) -> None:
    await turns(connected, 2)
    result = await connected.call_tool("list_memories", {"limit": 1})
    assert not result.is_error
    text = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert set(text) == {"memories", "next_cursor"} and len(text["memories"]) == 1
