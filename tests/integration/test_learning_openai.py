"""Learning against the local OpenAI-compatible stub (scripted, deterministic answers): extraction,
dedup, reconciliation, the profile, and failures (malformed answers, timeouts, 429s) that store
nothing and crash nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import SecretStr

from mcp_memory.config import LearningSettings, LLMSettings, Settings
from mcp_memory.learning import Learning
from mcp_memory.mcp.server import build_server
from mcp_memory.models import Memory, summary_id
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.fakes.openai_stub import OpenAIStub
from tests.helpers import HANG_SECONDS
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio
# The stub answers at once; a loaded machine may still take a while to get to it. Only a test of a hung
# request sets a short timeout (HUNG_SECONDS), so that it need not wait long for the request to give up.
ANSWER_SECONDS = 10.0
HUNG_SECONDS = 1.0
USER = "tester"
BUDGET = "The budget for the Hawaii trip is $10,000"


def facts_answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


def fact(
    text: str, kind: str = "semantic", confidence: float = 0.9, source: list[str] | None = None
) -> dict[str, Any]:
    return {"text": text, "type": kind, "confidence": confidence, "source": source or ["T1"]}


def llm_settings(
    settings: Settings, stub: OpenAIStub, timeout_seconds: float = ANSWER_SECONDS, **learning: Any
) -> Settings:
    llm = LLMSettings(
        provider="openai",
        model="stub-chat",
        base_url=stub.base_url,
        api_key=SecretStr("sk-test-not-a-secret"),
        timeout_seconds=timeout_seconds,
        max_retries=0,
    )
    options = {"extract_every_turns": 2, "reconcile_every_extractions": 0, **learning}
    return settings.model_copy(update={"llm": llm, "learning": LearningSettings(**options)})


@pytest.fixture
async def service(fast_settings: Settings, openai_stub: OpenAIStub) -> AsyncIterator[MemoryService]:
    async with open_service(llm_settings(fast_settings, openai_stub)) as opened:
        yield opened


def learning_of(service: MemoryService) -> Learning:
    assert isinstance(service.learning, Learning)
    return service.learning


async def facts_of(service: MemoryService) -> list[Memory]:
    return await learning_of(service).long_term.list_active(USER, types=("fact",), limit=100)


async def settle(service: MemoryService) -> None:
    with anyio.fail_after(HANG_SECONDS):
        await learning_of(service).worker.drain()


async def talk(service: MemoryService, thread: str, *lines: str) -> list[str]:
    ids = []
    for i, line in enumerate(lines):
        role = "user" if i % 2 == 0 else "assistant"
        ids.append((await service.add_turn(USER, thread, role, line)).turn.id)
    return ids


async def test_extraction_stores_contextual_typed_facts(
    service: MemoryService, openai_stub: OpenAIStub
) -> None:
    openai_stub.script(
        facts_answer(
            fact(BUDGET, "semantic", 0.95, ["T1"]),
            fact("The user prefers window seats on flights", "preference", 0.8, ["T1", "T2"]),
            fact("The user might like snorkelling", "preference", 0.3, ["T2"]),  # under min_confidence
        )
    )
    ids = await talk(
        service, "trip", "For Hawaii, our budget is $10,000. I always take a window seat.", "Noted!"
    )
    await settle(service)
    stored = {f.content: f for f in await facts_of(service)}
    assert set(stored) == {BUDGET, "The user prefers window seats on flights"}
    budget = stored[BUDGET]
    assert budget.type == "fact" and budget.thread_id == "trip"
    assert budget.metadata["fact_type"] == "semantic" and budget.metadata["confidence"] == 0.95
    assert budget.metadata["source_turn_ids"] == [ids[0]]
    assert stored["The user prefers window seats on flights"].metadata["source_turn_ids"] == ids
    assert (await service.get_memory(USER, budget.id)).embedding is not None  # its own vector
    found = await service.search(
        SearchQuery.of(USER, "Hawaii budget", types=["fact"], settings=service.settings)
    )
    assert found.results[0].id == budget.id
    [request] = openai_stub.chat_requests()
    assert request["response_format"] == {"type": "json_object"}
    assert "[T1]" in str(request["messages"]) and "window seat" in str(request["messages"])
    [revision] = await learning_of(service).revisions.history(USER, budget.id)
    assert (
        revision.cause == "extraction"
        and revision.action == "create"
        and "our budget" in (revision.source_text or "")
    )


async def test_only_new_turns_are_extracted_and_extraction_never_repeats(
    service: MemoryService, openai_stub: OpenAIStub
) -> None:
    openai_stub.script(facts_answer(fact(BUDGET)), facts_answer())
    await talk(service, "trip", "Budget is $10,000 for Hawaii", "ok")
    await settle(service)
    await talk(service, "trip", "Also, we fly on May 3", "great")
    await settle(service)
    first, second = openai_stub.chat_requests()
    assert "Budget is $10,000" in str(first["messages"])
    assert "Budget is $10,000" not in str(second["messages"]) and "May 3" in str(second["messages"])


async def test_exact_and_near_duplicates_do_not_multiply(
    service: MemoryService, openai_stub: OpenAIStub
) -> None:
    openai_stub.script(
        facts_answer(fact(BUDGET), fact(BUDGET.upper()), fact(BUDGET + ".")),
        facts_answer(fact("  " + BUDGET + ".  ")),
    )
    await talk(service, "trip", "Hawaii budget: $10,000", "noted")
    await settle(service)
    await talk(service, "trip", "Again: the Hawaii budget is $10,000", "yes")
    await settle(service)
    [stored] = await facts_of(service)
    assert stored.content == BUDGET + "."  # the near duplicate updated it with the newest wording
    history = await learning_of(service).revisions.history(USER, stored.id)
    assert [r.action for r in history] == ["create", "update"]  # the exact duplicates wrote nothing
    assert len(openai_stub.chat_requests()) == 2  # one call per extraction, none for deduplication


async def test_summary_triggers_extraction_and_is_revisioned(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    settings = llm_settings(fast_settings, openai_stub, extract_every_turns=0)
    async with open_service(settings) as service:
        openai_stub.reply_with(
            lambda body: (
                facts_answer(fact(BUDGET))
                if body.get("response_format")
                else "The user set the Hawaii budget to $10,000."
            )
        )
        await talk(service, "trip", "The Hawaii budget is $10,000", "Got it", "Flights next", "ok")
        await service.summarize_thread(USER, "trip", keep_recent=1)
        await settle(service)
        assert [f.content for f in await facts_of(service)] == [BUDGET]
        history = await learning_of(service).revisions.history(USER, summary_id(USER, "trip"))
        assert [(r.action, r.cause) for r in history] == [("create", "summary")]


async def test_contradiction_supersedes_the_older_fact(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    # A strict near-duplicate threshold keeps both budgets as separate facts until reconciliation.
    server = build_server(llm_settings(fast_settings, openai_stub, near_duplicate_similarity=0.999))
    async with Client(server) as client:
        old = await call(client, "remember", content=BUDGET)
        new = await call(client, "remember", content="The budget for the Hawaii trip is now $15,000")
        openai_stub.script(
            json.dumps({"groups": [{"kind": "contradiction", "ids": ["F2", "F1"]}]}),
            "The user is planning a Hawaii trip with a budget of $15,000.",
        )
        report = await call(client, "reconcile_memories")
        assert report["contradicted"] == [old["id"]] and report["kept"] == [new["id"]]
        assert report["profile_updated"] is True
        found = await call(client, "search_memory", query="Hawaii trip budget", types=["fact"])
        assert [r["id"] for r in found["results"]] == [new["id"]]
        history = await call(client, "memory_history", memory_id=old["id"])
        assert (
            history["memory"]["superseded_by"] == new["id"]
            and history["memory"]["supersede_reason"] == "contradict"
        )
        assert [(r["action"], r["cause"]) for r in history["revisions"]] == [
            ("create", "user_edit"),
            ("supersede", "reconcile"),
        ]
        profile = (await client.read_resource("memory://profile")).contents[0].text  # type: ignore[union-attr]
        assert profile == "The user is planning a Hawaii trip with a budget of $15,000."
        # Rolling the loser back makes it current again, as a revision of its own.
        rolled = await call(
            client, "rollback_memory", memory_id=old["id"], revision_id=history["revisions"][0]["id"]
        )
        assert rolled.get("superseded_by") is None  # left out when null


async def test_duplicates_merge_into_the_newest(fast_settings: Settings, openai_stub: OpenAIStub) -> None:
    server = build_server(llm_settings(fast_settings, openai_stub, near_duplicate_similarity=0.999))
    async with Client(server) as client:
        a = await call(client, "remember", content="The user is vegetarian")
        b = await call(client, "remember", content="The user eats no meat", type="preference")
        openai_stub.script(
            json.dumps(
                {
                    "groups": [
                        {
                            "kind": "duplicate",
                            "ids": ["F1", "F2"],
                            "merged": "The user is vegetarian (no meat)",
                        }
                    ]
                }
            ),
            "The user is vegetarian.",
        )
        report = await call(client, "reconcile_memories")
        assert report["merged"] == [a["id"]] and report["kept"] == [b["id"]]
        [current] = (await call(client, "search_memory", query="vegetarian meat", types=["fact"]))["results"]
        assert current["id"] == b["id"] and current["content"] == "The user is vegetarian (no meat)"


@pytest.mark.parametrize("failure", ["malformed", "timeout", "429", "500", "empty", "prose", "wrong-shape"])
async def test_llm_failures_store_nothing_and_crash_nothing(
    fast_settings: Settings, openai_stub: OpenAIStub, failure: str
) -> None:
    seconds = HUNG_SECONDS if failure == "timeout" else ANSWER_SECONDS
    async with open_service(llm_settings(fast_settings, openai_stub, seconds)) as service:
        if failure == "prose":
            openai_stub.script("Here are the facts: the budget is $10,000.")
        elif failure == "wrong-shape":
            openai_stub.script(json.dumps({"facts": "the budget is $10,000"}))
        else:
            openai_stub.set_mode(failure, times=1)  # type: ignore[arg-type]
        await talk(service, "trip", "The Hawaii budget is $10,000", "ok")
        await settle(service)
        openai_stub.release_hung()
        assert await facts_of(service) == []
        assert len(openai_stub.chat_requests()) == 1
        # Nothing crashed, and the failed batch's turns stay pending: the next extraction reads them.
        openai_stub.script(facts_answer(fact(BUDGET, source=["T1"])))
        await talk(service, "trip", "Anything else?", "no")
        await settle(service)
        assert [f.content for f in await facts_of(service)] == [BUDGET]
        assert "The Hawaii budget is $10,000" in str(openai_stub.chat_requests()[-1]["messages"])


async def test_add_turn_returns_while_extraction_is_still_running(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    settings = llm_settings(fast_settings, openai_stub)
    settings.llm.timeout_seconds = 60.0  # an LLM that hangs far longer than any add_turn may take
    async with open_service(settings) as service:
        openai_stub.set_mode("timeout", times=1)  # the extraction request hangs until released
        with anyio.fail_after(15):  # a deadlock guard: an inline extraction would hang here for 60s
            await talk(service, "trip", "The Hawaii budget is $10,000", "ok")
            while not openai_stub.chat_requests():  # noqa: ASYNC110 - the stub lives in another thread
                await anyio.sleep(0.01)  # polling the stub's record, not waiting on behaviour
            # The extraction these turns triggered is in flight, and the service keeps answering.
            await talk(service, "trip", "and another turn", "fine")
        assert await facts_of(service) == []
        openai_stub.script(facts_answer(fact(BUDGET)))
        openai_stub.release_hung()
        await settle(service)


async def test_malformed_answer_to_the_tool_is_a_clear_error(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    async with Client(
        build_server(llm_settings(fast_settings, openai_stub, extract_every_turns=0))
    ) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="My budget is $10,000")
        openai_stub.script("not json at all")
        message = await call_error(client, "extract_memories", thread_id="t")
        assert "not the JSON asked for" in message and "nothing was stored" in message
        openai_stub.set_mode("429", times=1)
        assert "429" in await call_error(client, "extract_memories", thread_id="t")
        openai_stub.script(facts_answer(fact("The user's budget is $10,000")))
        report = await call(client, "extract_memories", thread_id="t")
        assert [f["content"] for f in report["facts"]] == ["The user's budget is $10,000"]
        assert report["model"] == "stub-chat" and report["turns_read"] == 1


async def test_hourly_budget_bounds_background_calls(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    async with open_service(llm_settings(fast_settings, openai_stub, max_llm_calls_per_hour=1)) as service:
        openai_stub.reply_with(lambda body: facts_answer())
        await talk(service, "a", "one", "two", "three", "four", "five", "six")
        await settle(service)
        assert len(openai_stub.chat_requests()) == 1


async def test_a_lane_that_fell_behind_catches_up_on_every_turn(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    settings = llm_settings(fast_settings, openai_stub, max_turns_per_extraction=2)
    settings.llm.timeout_seconds = 60.0
    async with open_service(settings) as service:
        openai_stub.set_mode("timeout", times=1)  # the first extraction hangs while turns pile up
        lines = [f"message number {i} about topic {i}" for i in range(8)]
        await talk(service, "t", *lines)
        openai_stub.reply_with(lambda body: facts_answer())
        openai_stub.release_hung()
        await settle(service)
        asked = " ".join(str(r["messages"]) for r in openai_stub.chat_requests()[1:])
        assert all(line in asked for line in lines)  # in batches of two, oldest first


async def test_entities_and_relations_extracted_with_the_facts_go_into_the_graph(
    service: MemoryService, openai_stub: OpenAIStub
) -> None:
    answer = json.loads(facts_answer(fact("The user's sister Ana lives in Lisbon", "semantic", 0.9, ["T1"])))
    answer["entities"] = [
        {"name": "Ana", "type": "person"},
        {"name": "Lisbon", "type": "city"},
        {"name": "bad\x07name", "type": "person"},  # skipped alone
    ]
    answer["relations"] = [{"from": "Ana", "to": "Lisbon", "type": "lives in"}, {"from": "Ana"}]
    openai_stub.script(json.dumps(answer))
    await talk(service, "family", "My sister Ana lives in Lisbon now.", "Nice!")
    await settle(service)
    assert service.graph is not None
    graph = await service.graph.read_graph(USER)
    assert [(e.name, e.entityType) for e in graph.entities] == [("Ana", "person"), ("Lisbon", "city")]
    assert [(r.source, r.to, r.relationType) for r in graph.relations] == [("Ana", "Lisbon", "lives in")]
    ana = await service.graph.entity(USER, "Ana")
    [stored] = await facts_of(service)
    turns = await service.stores.long_term.recent(USER, "family", limit=5)
    assert stored.id in ana.linked_memories and turns[0].id in ana.linked_memories
