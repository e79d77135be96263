"""completion/complete through a real in-process MCP client: the caller's own thread and memory ids,
prefix-matched, for the resource templates and the recall prompt that name them."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_types import CompleteResult, PromptReference, ResourceTemplateReference

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio

THREAD = ResourceTemplateReference(uri="memory://threads/{thread_id}")
SUMMARY = ResourceTemplateReference(uri="memory://threads/{thread_id}/summary")
MEMORY = ResourceTemplateReference(uri="memory://memories/{memory_id}")
RECALL = PromptReference(name="recall")


async def complete(
    client: Client, ref: ResourceTemplateReference | PromptReference, name: str, value: str
) -> CompleteResult:
    return await client.complete(ref, {"name": name, "value": value})


async def test_the_server_offers_completions(client: Client) -> None:
    assert client.server_capabilities.completions is not None


async def test_thread_ids_complete_by_prefix_newest_first(client: Client) -> None:
    for thread in ("trip-hawaii", "trip-lisbon", "work"):
        await call(client, "add_turn", thread_id=thread, role="user", content=f"about {thread}")
    for ref in (THREAD, SUMMARY, RECALL):
        found = (await complete(client, ref, "thread_id", "trip")).completion
        assert found.values == ["trip-lisbon", "trip-hawaii"], ref
        assert (found.total, found.has_more) == (2, False)
    everything = (await complete(client, THREAD, "thread_id", "")).completion
    assert everything.values == ["work", "trip-lisbon", "trip-hawaii"] and everything.total == 3
    assert (await complete(client, THREAD, "thread_id", "nothing-like-it")).completion.values == []


async def test_at_most_a_hundred_values_with_the_total(client: Client) -> None:
    for i in range(103):
        await call(
            client, "remember", content=f"Fact number {i} is about item {i * 7919}", thread_id=f"t{i:03d}"
        )
    threads = (await complete(client, THREAD, "thread_id", "t")).completion
    assert len(threads.values) == 100 and threads.total == 103 and threads.has_more is True
    facts = (await complete(client, MEMORY, "memory_id", "fact_")).completion
    assert len(facts.values) == 100 and facts.has_more is True
    assert facts.total is None or facts.total >= 103  # counting them all is the heavy read it avoids


async def test_memory_ids_complete_by_prefix(client: Client) -> None:
    turn = await call(client, "add_turn", thread_id="m", role="user", content="remember me")
    fact = await call(client, "remember", content="The user likes green tea")
    turns = (await complete(client, MEMORY, "memory_id", "turn_")).completion
    assert turns.values == [turn["id"]] and (turns.total, turns.has_more) == (1, False)
    assert (await complete(client, MEMORY, "memory_id", fact["id"][:8])).completion.values == [fact["id"]]
    assert (await complete(client, MEMORY, "memory_id", "")).completion.values == sorted(
        [turn["id"], fact["id"]]
    )
    assert (await complete(client, MEMORY, "memory_id", "x" * 300)).completion.values == []


async def test_unknown_arguments_complete_to_nothing(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="hello")
    for ref, name in (
        (RECALL, "query"),
        (THREAD, "memory_id"),
        (MEMORY, "thread_id"),
        (PromptReference(name="no_such_prompt"), "thread_id"),
        (ResourceTemplateReference(uri="memory://elsewhere/{thread_id}"), "thread_id"),
    ):
        found = (await complete(client, ref, name, "")).completion
        assert found.values == [] and not found.has_more, (ref, name)


async def test_another_users_threads_and_memories_are_never_offered(fast_settings: Settings) -> None:
    # Two users of one data file: two servers, as two processes with different MCP_MEMORY_USER_ID would be.
    ann = build_server(fast_settings.model_copy(update={"user_id": "ann"}))
    bob = build_server(fast_settings.model_copy(update={"user_id": "bob"}))
    async with Client(ann) as ann_client, Client(bob) as bob_client:
        await call(ann_client, "add_turn", thread_id="shared-name", role="user", content="ann's secret plan")
        await call(ann_client, "add_turn", thread_id="ann-only", role="user", content="more of ann")
        secret = await call(ann_client, "remember", content="Ann's locker code is 4711")
        await call(bob_client, "add_turn", thread_id="shared-name", role="user", content="bob's own words")

        bobs = (await complete(bob_client, THREAD, "thread_id", "")).completion
        assert bobs.values == ["shared-name"] and bobs.total == 1
        assert (await complete(bob_client, RECALL, "thread_id", "ann")).completion.values == []
        bob_ids = (await complete(bob_client, MEMORY, "memory_id", "")).completion.values
        assert len(bob_ids) == 1 and secret["id"] not in bob_ids
        assert (await complete(bob_client, MEMORY, "memory_id", secret["id"])).completion.values == []

        anns = (await complete(ann_client, THREAD, "thread_id", "")).completion
        assert set(anns.values) == {"shared-name", "ann-only"}
        assert secret["id"] in (await complete(ann_client, MEMORY, "memory_id", "fact_")).completion.values
