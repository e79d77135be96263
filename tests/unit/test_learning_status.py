"""memory://learning/status against the local OpenAI-compatible stub, through a real MCP client: a failing
model shows as a failure with its reason (and the thread's pending turns), a reconciliation as the last
reconciliation, and the budget says what is left."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.learning import Learning
from mcp_memory.mcp.server import MemoryServer, build_server
from tests.fakes.openai_stub import OpenAIStub
from tests.helpers import HANG_SECONDS
from tests.integration.test_learning_openai import llm_settings
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio


async def status(client: Client, server: MemoryServer) -> dict[str, Any]:
    learning = server.host.service.learning
    assert isinstance(learning, Learning)
    with anyio.fail_after(HANG_SECONDS):
        await learning.worker.drain()
    result = await client.read_resource("memory://learning/status")
    loaded: dict[str, Any] = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    return loaded


async def test_a_failing_model_shows_as_a_failure_with_its_reason(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    server = build_server(llm_settings(fast_settings, openai_stub))
    async with Client(server) as client:
        openai_stub.set_mode("500")
        await call(client, "add_turn", thread_id="t", role="user", content="I am vegetarian")
        await call(client, "add_turn", thread_id="t", role="assistant", content="Noted")
        seen = await status(client, server)
        assert seen["model"] == "llm" and seen["model_name"] == "stub-chat"
        [failure] = seen["failures"]
        assert failure["work"] == "extraction" and failure["thread_id"] == "t"
        assert "stub-chat" in failure["reason"] and failure["at"]
        [waiting] = seen["waiting"]
        assert waiting["reason"] == f"model failed: {failure['reason']}"
        assert waiting["pending_turns"] == 2
        budget = seen["budget"]
        assert budget["used"] == 1 and budget["remaining"] == budget["limit"] - 1
        assert budget["background_remaining"] == budget["background_limit"] - 1 and budget["resets_at"]
        assert seen["last_extraction"] is None and seen["last_reconciliation"] is None


async def test_a_reconciliation_shows_as_the_last_reconciliation(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    # A strict near-duplicate threshold keeps both budgets as separate facts until reconciliation.
    server = build_server(llm_settings(fast_settings, openai_stub, near_duplicate_similarity=0.999))
    async with Client(server) as client:
        await call(client, "remember", content="The budget for the Hawaii trip is $10,000")
        await call(client, "remember", content="The budget for the Hawaii trip is now $15,000")
        openai_stub.script(
            json.dumps({"groups": [{"kind": "contradiction", "ids": ["F2", "F1"]}]}),
            "The user is planning a Hawaii trip with a budget of $15,000.",
        )
        await call(client, "reconcile_memories")
        last = (await status(client, server))["last_reconciliation"]
        assert last["model"] == "stub-chat" and last["facts_reviewed"] == 2
        assert (last["merged"], last["contradicted"]) == (0, 1) and last["at"]


async def test_a_failed_background_reconciliation_is_shown(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    settings = llm_settings(
        fast_settings, openai_stub, reconcile_every_extractions=1, near_duplicate_similarity=0.999
    )
    server = build_server(settings)
    async with Client(server) as client:
        await call(client, "remember", content="The user lives in Lisbon")
        facts = {"facts": [{"text": "The user is vegetarian", "type": "preference", "source": ["T1"]}]}
        openai_stub.script(json.dumps(facts), "this is not the JSON that was asked for")
        await call(client, "add_turn", thread_id="t", role="user", content="I am vegetarian")
        await call(client, "add_turn", thread_id="t", role="assistant", content="Noted")
        seen = await status(client, server)
        assert seen["last_extraction"]["thread_id"] == "t" and seen["last_extraction"]["facts"] == 1
        [failure] = seen["failures"]
        assert failure["work"] == "reconciliation" and failure["thread_id"] is None
        assert "JSON" in failure["reason"]
        assert seen["last_reconciliation"] is None and seen["waiting"] == []
