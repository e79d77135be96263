"""The knowledge graph through a real MCP client in process: what the reference does not cover (bad
input refused whole, paging and token budgets, observations as memories, forget, quotas, two clients at
once, hiding the tools) and the conversation exports of ChatGPT and Claude."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio

GRAPH_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}


def person(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


async def graph_of(client: Client) -> dict[str, Any]:
    return await call(client, "read_graph")


async def test_bad_input_is_refused_whole_with_its_reason(client: Client) -> None:
    await call(client, "create_entities", entities=[person("Ann", "likes tea")])
    before = await graph_of(client)
    refusals = [
        (
            "create_entities",
            {"entities": [person("Bo"), person("Big", *(f"obs {i}" for i in range(10_000)))]},
            "10,000 items in one call; the limit is 1,000",
        ),
        (
            "add_observations",
            {"observations": [{"entityName": "Ann", "contents": [f"o{i}" for i in range(1001)]}]},
            "the limit is 1,000",
        ),
        ("create_entities", {"entities": [person("Bo"), person("Bad\x07name")]}, "control character"),
        (
            "create_entities",
            {"entities": [person("Bo"), person("x" * 1001)]},
            "1,001 characters; the limit is 1,000",
        ),
        ("create_entities", {"entities": [person("Bo"), person("   ")]}, "name is empty"),
        ("create_entities", {"entities": [person("Bo", "bell\x07")]}, "control character"),
        (
            "create_relations",
            {"relations": [{"from": "Ann", "to": "B\nb", "relationType": "knows"}]},
            "control",
        ),
        (
            "add_observations",
            {
                "observations": [
                    {"entityName": "Ann", "contents": ["new"]},
                    {"entityName": "Ghost", "contents": ["x"]},
                ]
            },
            "Entity with name Ghost not found",
        ),
    ]
    for tool, arguments, reason in refusals:
        assert reason in await call_error(client, tool, **arguments), tool
    assert await graph_of(client) == before
    found = await call(client, "search_memory", query="obs new", mode="text", types=["observation"])
    assert found["results"] == []  # no observation memory was left behind either


async def test_a_relation_to_itself_or_to_no_entity_is_kept_as_the_reference_keeps_it(client: Client) -> None:
    relations = [
        {"from": "Ann", "to": "Ann", "relationType": "is"},
        {"from": "Ann", "to": "Nobody", "relationType": "waits for"},
    ]
    assert (await call(client, "create_relations", relations=relations))["relations"] == relations
    assert (await graph_of(client))["relations"] == relations


async def test_paging_visits_every_entity_once_and_max_tokens_bounds_a_page(client: Client) -> None:
    await call(
        client,
        "create_entities",
        entities=[person(f"P{i:02}", f"note {i} " + "word " * 30) for i in range(25)],
    )
    await call(client, "create_relations", relations=[{"from": "P00", "to": "P24", "relationType": "knows"}])
    whole = await graph_of(client)
    assert "nextCursor" not in whole and len(whole["entities"]) == 25
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = await call(client, "read_graph", limit=10, **({"cursor": cursor} if cursor else {}))
        seen += [e["name"] for e in page["entities"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert seen == [e["name"] for e in whole["entities"]]
    small = await call(client, "read_graph", max_tokens=200)
    assert 1 <= len(small["entities"]) < 25 and "nextCursor" in small
    assert len(json.dumps(small["entities"])) < len(json.dumps(whole["entities"])) / 4
    found = await call(client, "search_nodes", query="note", limit=5)
    assert len(found["entities"]) == 5 and "nextCursor" in found
    rest = await call(client, "search_nodes", query="note", limit=50, cursor=found["nextCursor"])
    assert [e["name"] for e in found["entities"] + rest["entities"]][:25] == [f"P{i:02}" for i in range(25)]
    assert "cursor" in await call_error(client, "read_graph", cursor="not-a-cursor")


async def test_observations_are_memories_with_history_that_forget_reaches(client: Client) -> None:
    await call(client, "create_entities", entities=[person("Ann", "plays the cello")])
    hits = (await call(client, "search_memory", query="cello", mode="text"))["results"]
    assert [(h["type"], h["content"]) for h in hits] == [("observation", "plays the cello")]
    memory_id = hits[0]["id"]
    history = await call(client, "memory_history", memory_id=memory_id)
    assert [r["cause"] for r in history["revisions"]] == ["graph"]
    receipt = await call(client, "forget", memory_id=memory_id)
    assert receipt["long_term"]["memories"] == 1
    assert (await graph_of(client))["entities"] == [person("Ann")]
    await call(client, "add_observations", observations=[{"entityName": "Ann", "contents": ["sings"]}])
    everything = await call(client, "forget", everything=True)
    assert any(k.startswith("knowledge graph") and v >= 2 for k, v in everything["stores"].items())
    assert await graph_of(client) == {"entities": [], "relations": []}


async def test_deleting_an_entity_forgets_its_observation_memories(client: Client) -> None:
    await call(
        client, "create_entities", entities=[person("Ann", "owns a red kayak"), person("Bo", "owns a bike")]
    )
    await call(client, "delete_entities", entityNames=["Ann"])
    found = await call(client, "search_memory", query="owns kayak bike", mode="text")
    assert [h["content"] for h in found["results"]] == ["owns a bike"]
    await call(
        client, "delete_observations", deletions=[{"entityName": "Bo", "observations": ["owns a bike"]}]
    )
    assert (await call(client, "search_memory", query="owns bike", mode="text"))["results"] == []


async def test_two_clients_writing_at_once_lose_nothing(fast_settings: Settings) -> None:
    server = build_server(fast_settings)
    async with Client(server) as first, Client(server) as second:
        await call(first, "create_entities", entities=[person("Hub")])

        async def write(client: Client, who: str) -> None:
            for i in range(15):
                await call(client, "create_entities", entities=[person(f"N{i}", f"seen by {who}")])
                await call(
                    client,
                    "add_observations",
                    observations=[{"entityName": "Hub", "contents": [f"{who} {i}"]}],
                )
                await call(
                    client,
                    "create_relations",
                    relations=[{"from": "Hub", "to": f"N{i}", "relationType": "has"}],
                )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, first, "one")
            tg.start_soon(write, second, "two")
        graph = await graph_of(first)
    names = [e["name"] for e in graph["entities"]]
    assert sorted(names) == sorted(["Hub", *(f"N{i}" for i in range(15))]) and len(set(names)) == 16
    hub = next(e for e in graph["entities"] if e["name"] == "Hub")
    assert sorted(hub["observations"]) == sorted(f"{w} {i}" for w in ("one", "two") for i in range(15))
    assert len(graph["relations"]) == 15


async def test_a_quota_refuses_the_whole_call(fast_settings: Settings) -> None:
    limited = fast_settings.model_copy(
        update={"security": fast_settings.security.model_copy(update={"max_stored_bytes": 2000})}
    )
    async with Client(build_server(limited)) as client:
        message = await call_error(
            client, "create_entities", entities=[person("Big", "x" * 1500, "y" * 1500)]
        )
        assert "storage quota reached" in message
        assert await graph_of(client) == {"entities": [], "relations": []}


async def test_the_graph_tools_can_be_hidden(fast_settings: Settings) -> None:
    hidden = fast_settings.model_copy(
        update={"graph": fast_settings.graph.model_copy(update={"tools": False})}
    )
    async with Client(build_server(hidden)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        resources = {r.uri for r in (await client.list_resources()).resources}
    assert not tools & GRAPH_TOOLS and "add_turn" in tools
    assert "memory://knowledge-graph" not in resources


async def test_an_entity_view_gives_each_observation_its_time(client: Client) -> None:
    await call(client, "create_entities", entities=[person("Ann", "first"), person("Bo")])
    await call(client, "add_observations", observations=[{"entityName": "Ann", "contents": ["second"]}])
    await call(client, "create_relations", relations=[{"from": "Ann", "to": "Bo", "relationType": "knows"}])
    view = json.loads((await client.read_resource("memory://knowledge-graph/entities/Ann")).contents[0].text)  # type: ignore[union-attr]
    assert [o["content"] for o in view["observations"]] == ["first", "second"]
    assert view["observations"][0]["created_at"] < view["observations"][1]["created_at"]
    assert view["relations"] == [{"from": "Ann", "to": "Bo", "relationType": "knows"}]


# ---- ChatGPT and Claude exports ------------------------------------------------------------------

CHATGPT = [
    {
        "title": "Trip to Lisbon",
        "create_time": 1700000000.0,
        "conversation_id": "c0ffee00-1111-2222-3333-444455556666",
        "current_node": "n4",
        "mapping": {
            "root": {"id": "root", "message": None, "parent": None, "children": ["n1"]},
            "n1": {
                "id": "n1",
                "parent": "root",
                "children": ["n2"],
                "message": {
                    "id": "n1",
                    "author": {"role": "system"},
                    "create_time": None,
                    "content": {"content_type": "text", "parts": [""]},
                    "metadata": {"is_visually_hidden_from_conversation": True},
                },
            },
            "n2": {
                "id": "n2",
                "parent": "n1",
                "children": ["n3", "n3b"],
                "message": {
                    "id": "n2",
                    "author": {"role": "user"},
                    "create_time": 1700000010.5,
                    "content": {"content_type": "text", "parts": ["Where should I eat in Lisbon?"]},
                    "metadata": {},
                },
            },
            "n3b": {
                "id": "n3b",
                "parent": "n2",
                "children": [],
                "message": {
                    "id": "n3b",
                    "author": {"role": "assistant"},
                    "create_time": 1700000015.0,
                    "content": {"content_type": "text", "parts": ["An answer the user regenerated"]},
                    "metadata": {},
                },
            },
            "n3": {
                "id": "n3",
                "parent": "n2",
                "children": ["n4"],
                "message": {
                    "id": "n3",
                    "author": {"role": "assistant"},
                    "create_time": 1700000020.0,
                    "content": {"content_type": "text", "parts": ["Try Cervejaria Ramiro for seafood."]},
                    "metadata": {},
                },
            },
            "n4": {
                "id": "n4",
                "parent": "n3",
                "children": [],
                "message": {
                    "id": "n4",
                    "author": {"role": "user"},
                    "create_time": 1700000030.0,
                    "content": {
                        "content_type": "multimodal_text",
                        "parts": [{"asset_pointer": "file-1"}, "Booked it!"],
                    },
                    "metadata": {},
                },
            },
        },
    }
]

CLAUDE = [
    {
        "uuid": "0d1e2f30-aaaa-bbbb-cccc-123456789abc",
        "name": "Garden plans",
        "created_at": "2024-03-01T09:00:00.000000Z",
        "chat_messages": [
            {
                "uuid": "m1",
                "sender": "human",
                "text": "I want to plant tomatoes.",
                "created_at": "2024-03-01T09:00:01Z",
            },
            {
                "uuid": "m2",
                "sender": "assistant",
                "text": "",
                "content": [{"type": "text", "text": "Start them indoors in March."}],
                "created_at": "2024-03-01T09:00:05Z",
            },
        ],
    }
]


async def test_chatgpt_and_claude_exports_become_threads_at_their_times(
    fast_settings: Settings, tmp_path: Path
) -> None:
    async with open_service(fast_settings) as service:
        first = await service.import_conversations("me", json.dumps(CHATGPT), "chatgpt")
        assert (first.conversations, first.messages, first.imported, first.skipped) == (1, 3, 3, 0)
        again = await service.import_conversations("me", json.dumps(CHATGPT), "chatgpt")
        assert (again.imported, again.skipped) == (0, 3)  # idempotent
        claude = await service.import_conversations("me", json.dumps(CLAUDE), "claude")
        assert claude.imported == 2
        thread = "chatgpt-c0ffee00-1111-2222-3333-444455556666"
        turns = await service.stores.long_term.recent("me", thread, limit=10)
        assert [(t.role, t.content) for t in turns] == [
            ("user", "Where should I eat in Lisbon?"),
            ("assistant", "Try Cervejaria Ramiro for seafood."),
            ("user", "Booked it!"),
        ]
        assert turns[0].created_at.timestamp() == pytest.approx(1700000010.5)
        working = await service.get_working_memory("me", thread)
        assert working.data == {"title": "Trip to Lisbon", "source": "chatgpt"}
        garden = await service.stores.long_term.recent(
            "me", "claude-0d1e2f30-aaaa-bbbb-cccc-123456789abc", limit=10
        )
        assert [t.content for t in garden] == ["I want to plant tomatoes.", "Start them indoors in March."]
        assert garden[0].created_at.isoformat() == "2024-03-01T09:00:01+00:00"
        with pytest.raises(Exception, match="list of conversations"):
            await service.import_conversations("me", json.dumps({"not": "a list"}), "claude")


async def test_our_export_carries_the_graph_to_another_user(fast_settings: Settings) -> None:
    async with open_service(fast_settings) as service:
        assert service.graph is not None
        await service.graph.create_entities("ann", [person("Ann", "likes tea"), person("Bo")])
        await service.graph.create_relations("ann", [{"from": "Ann", "to": "Bo", "relationType": "knows"}])
        await service.add_turn("ann", "t1", "user", "Bo says hi")
        export = await service.export_memories("ann")
        assert export.counts["entity"] == 2 and export.counts["relation"] == 1
        kinds = [json.loads(line)["kind"] for line in export.jsonl.splitlines()]
        assert kinds.count("graph") == 1 and '"type":"observation"' not in export.jsonl.replace(" ", "")
        await service.import_memories("cy", export.jsonl)
        await service.import_memories("cy", export.jsonl)  # twice stores it once
        assert await service.graph.read_graph("cy") == await service.graph.read_graph("ann")
        found = await service.search(
            SearchQuery.of("cy", "tea", mode="text", types=["observation"], settings=service.settings)
        )
        assert [h.content for h in found.results] == ["likes tea"]


async def test_search_nodes_adds_what_the_local_model_finds_by_meaning_after_the_substring_matches(
    settings: Settings,
) -> None:
    async with open_service(settings) as service:  # the real local embedder
        assert service.graph is not None
        await service.graph.create_entities(
            "u",
            [
                person("Ada", "writes Python at work", "has a cat named Miso"),
                person("Bob", "plays the violin in an orchestra"),
                {"name": "Pet shop", "entityType": "place", "observations": ["sells fish food"]},
            ],
        )
        found = await service.graph.search_nodes("u", "pet")
        assert [e.name for e in found.entities] == ["Pet shop", "Ada"]  # substring first, then meaning
        assert [e.name for e in (await service.graph.search_nodes("u", "musician")).entities] == ["Bob"]
        assert (await service.graph.search_nodes("u", "quantum chromodynamics")).entities == []
