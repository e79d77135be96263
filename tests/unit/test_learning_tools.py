"""The learning tools through a real MCP client, with no LLM and no sampling: explicit memories,
revisions, rollback, forget, the offline profile and the recall prompt's retrieval help."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.models import Scope
from tests.services.mcp_client import call, call_error, stored

pytestmark = pytest.mark.anyio

LEARNING_TOOLS = {
    "remember",
    "update_memory",
    "memory_history",
    "rollback_memory",
    "extract_memories",
    "reconcile_memories",
}


async def test_learning_tools_are_listed_with_annotations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= LEARNING_TOOLS
    assert tools["memory_history"].annotations.read_only_hint is True
    assert tools["rollback_memory"].annotations.destructive_hint is True
    assert not tools["remember"].annotations.read_only_hint  # false, the protocol's default, left out
    assert tools["remember"].annotations.destructive_hint is False
    # The sampled answer is filled by the server, never by the model calling the tool.
    assert set(tools["extract_memories"].input_schema["properties"]) == {"thread_id", "space"}
    assert set(tools["reconcile_memories"].input_schema.get("properties", {})) == {"space"}
    for name in LEARNING_TOOLS:
        assert tools[name].output_schema is not None and tools[name].description, name


async def test_without_a_model_extraction_says_so(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="I am vegetarian")
    message = await call_error(client, "extract_memories", thread_id="t")
    assert "fact extraction is off" in message and "sampling" in message
    assert "fact extraction is off" in await call_error(client, "reconcile_memories")


async def test_remember_does_not_duplicate_and_is_searchable(client: Client) -> None:
    first = await call(client, "remember", content="The user is vegetarian", type="preference")
    assert (
        first["action"] == "created"
        and first["fact_type"] == "preference"
        and first["id"].startswith("fact_")
    )
    again = await call(client, "remember", content="  the user is VEGETARIAN ")
    assert again["action"] == "unchanged" and again["id"] == first["id"]
    near = await call(client, "remember", content="The user is vegetarian!", type="preference")
    assert near["action"] == "updated" and near["id"] == first["id"]
    found = await call(client, "search_memory", query="vegetarian", types=["fact"])
    assert [r["id"] for r in found["results"]] == [first["id"]]
    assert found["results"][0]["content"] == "The user is vegetarian!"


async def test_history_update_and_rollback(client: Client) -> None:
    fact = await call(client, "remember", content="The budget for the Hawaii trip is $10,000")
    await call(
        client, "update_memory", memory_id=fact["id"], content="The budget for the Hawaii trip is $12,000"
    )
    await call(
        client, "update_memory", memory_id=fact["id"], content="The budget for the Hawaii trip is $15,000"
    )
    history = await call(client, "memory_history", memory_id=fact["id"])
    revisions = history["revisions"]
    assert [r["seq"] for r in revisions] == [1, 2, 3]
    assert [r["action"] for r in revisions] == ["create", "update", "update"]
    assert {r["cause"] for r in revisions} == {"user_edit"}
    assert [r["content"][-7:] for r in revisions] == ["$10,000", "$12,000", "$15,000"]
    assert "content" not in history["memory"]  # the current content is the last revision's: said once
    assert (await stored(client, fact["id"]))["content"].endswith("$15,000")

    restored = await call(client, "rollback_memory", memory_id=fact["id"], revision_id=revisions[0]["id"])
    assert restored["content"] == "The budget for the Hawaii trip is $10,000"
    after = (await call(client, "memory_history", memory_id=fact["id"]))["revisions"]
    assert len(after) == 4 and after[-1]["action"] == "restore" and after[-1]["cause"] == "rollback"
    assert after[-1]["labels"]["rolled_back_to"] == revisions[0]["id"]
    found = await call(client, "search_memory", query="Hawaii budget", types=["fact"])
    assert [r["content"] for r in found["results"]] == ["The budget for the Hawaii trip is $10,000"]


async def test_edits_are_refused_clearly(client: Client) -> None:
    turn = await call(client, "add_turn", thread_id="t", role="user", content="I said this")
    assert "verbatim record" in await call_error(client, "update_memory", memory_id=turn["id"], content="x")
    fact = await call(client, "remember", content="The user likes green tea")
    other = await call(client, "remember", content="The deploy target is eu-west")
    rev = (await call(client, "memory_history", memory_id=other["id"]))["revisions"][0]["id"]
    message = await call_error(client, "rollback_memory", memory_id=fact["id"], revision_id=rev)
    assert "belongs to memory" in message
    assert "no memory with id" in await call_error(client, "memory_history", memory_id="fact_nope")
    assert "type 'mood'" in await call_error(client, "remember", content="x y z", type="mood")


async def test_forget_leaves_no_revision_behind(client: Client) -> None:
    fact = await call(client, "remember", content="The user's sister is called Ana", thread_id="family")
    await call(client, "update_memory", memory_id=fact["id"], content="The user's sister is called Anna")
    await call(client, "forget", memory_id=fact["id"])
    assert "no memory with id" in await call_error(client, "memory_history", memory_id=fact["id"])


async def test_forgetting_removes_revisions_from_the_store(fast_settings: Settings) -> None:
    server = build_server(fast_settings)
    async with Client(server) as client:
        learning = server.host.service.learning
        kept = await call(client, "remember", content="The user works at Contoso")
        one = await call(client, "remember", content="The user's sister is called Ana")
        await call(client, "update_memory", memory_id=one["id"], content="The user's sister is called Anna")
        in_thread = await call(client, "remember", content="Deploys go to eu-west first", thread_id="ops")
        await call(client, "forget", memory_id=one["id"])
        assert await learning.revisions.history("tester", one["id"]) == []
        await call(client, "forget", thread_id="ops")
        assert await learning.revisions.history("tester", in_thread["id"]) == []
        assert len(await learning.revisions.history("tester", kept["id"])) == 1
        await call(client, "forget", everything=True)
        await learning.worker.drain()
        assert await learning.revisions.history("tester", kept["id"]) == []
        assert await learning.revisions.forget(Scope(user_id="tester", everything=True), dry_run=True) == 0


async def test_profile_resource_offline(client: Client) -> None:
    assert (await client.read_resource("memory://profile")).contents[0].text == ""  # type: ignore[union-attr]
    await call(client, "remember", content="The user is vegetarian", type="preference")
    await call(client, "remember", content="The user lives in Lisbon")
    profile = (await client.read_resource("memory://profile")).contents[0].text  # type: ignore[union-attr]
    assert "The user is vegetarian" in profile and "The user lives in Lisbon" in profile


async def test_learning_status_says_who_learns_and_what_waits(fast_settings: Settings) -> None:
    settings = fast_settings.model_copy(
        update={"learning": fast_settings.learning.model_copy(update={"extract_every_turns": 2})}
    )
    server = build_server(settings)
    async with Client(server) as client:
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "memory://learning/status" in resources
        await call(client, "add_turn", thread_id="t", role="user", content="I am vegetarian")
        await call(client, "add_turn", thread_id="t", role="assistant", content="Noted")
        await server.host.service.learning.worker.drain()
        status = json.loads((await client.read_resource("memory://learning/status")).contents[0].text)  # type: ignore[union-attr]
        assert status["model"] == "none" and status["model_name"] is None
        assert status["budget"]["limit"] == 120 and status["budget"]["used"] == 0
        [waiting] = status["waiting"]
        assert waiting["thread_id"] == "t" and waiting["reason"].startswith("no model to learn with")
        assert status["last_extraction"] is None and status["queued_jobs"] == 0


@pytest.mark.parametrize("query", ["hi", "thanks!", "ok"])
async def test_recall_skips_small_talk(client: Client, query: str) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="hi, thanks, ok, the budget is 10000")
    prompt = await client.get_prompt("recall", {"query": query})
    assert "(no relevant memories found)" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_recall_finds_a_vague_follow_up_through_the_thread(client: Client) -> None:
    fact = await call(
        client, "remember", content="The budget for the Hawaii trip is $10,000", thread_id="trip"
    )
    await call(client, "add_turn", thread_id="trip", role="user", content="Let's plan the Hawaii trip")
    await call(client, "add_turn", thread_id="trip", role="assistant", content="Sure, what's the budget?")
    text = (
        (await client.get_prompt("recall", {"query": "how much?", "thread_id": "trip"}))
        .messages[0]
        .content.text
    )  # type: ignore[union-attr]
    assert f'id="{fact["id"]}"' in text
    assert (
        "Let's plan the Hawaii trip\n</memory>" not in text
    )  # the context turns themselves are not recalled


async def test_recall_drops_memories_under_the_similarity_floor(client: Client) -> None:
    await call(client, "remember", content="The deploy target is eu-west")
    text = (await client.get_prompt("recall", {"query": "favourite pizza topping"})).messages[0].content.text  # type: ignore[union-attr]
    assert "(no relevant memories found)" in text
    text = (await client.get_prompt("recall", {"query": "deploy target"})).messages[0].content.text  # type: ignore[union-attr]
    assert "The deploy target is eu-west" in text
