"""Learning with no LLM configured, through MCP sampling: the connected client's own model answers.

Through `mcp.Client(server, sampling_callback=...)`: inside a tool call on every protocol era (the
SDK's Sample resolver), and in the background after add_turn on handshake-era connections, whose
standalone channel lets the server ask while the client stays connected.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_memory.config import LearningSettings, Settings
from mcp_memory.learning import Learning
from mcp_memory.mcp.server import build_server
from tests.helpers import HANG_SECONDS
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio
BUDGET = "The budget for the Hawaii trip is $10,000"


class ClientModel:
    """A sampling callback with scripted answers; records what it was asked."""

    def __init__(self, *answers: str | types.ErrorData) -> None:
        self.answers = list(answers)
        self.asked: list[types.CreateMessageRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        self.asked.append(params)
        answer = self.answers.pop(0) if self.answers else json.dumps({"facts": []})
        if isinstance(answer, types.ErrorData):
            return answer
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer), model="client-model"
        )


def facts(*texts: str, kind: str = "semantic") -> str:
    return json.dumps(
        {"facts": [{"text": t, "type": kind, "confidence": 0.9, "source": ["T1"]} for t in texts]}
    )


def learning_settings(settings: Settings, **options: Any) -> Settings:
    values = {"extract_every_turns": 2, "reconcile_every_extractions": 0, **options}
    return settings.model_copy(update={"learning": LearningSettings(**values)})


def learning_of(server: Any) -> Learning:
    found = server.host.service.learning
    assert isinstance(found, Learning)
    return found


async def settle(server: Any) -> None:
    with anyio.fail_after(HANG_SECONDS):
        await learning_of(server).worker.drain()


async def active_facts(server: Any) -> list[str]:
    return [
        m.content
        for m in await learning_of(server).long_term.list_active("tester", types=("fact",), limit=50)
    ]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_extract_memories_samples_the_client_in_the_call(fast_settings: Settings, mode: str) -> None:
    server = build_server(learning_settings(fast_settings, extract_every_turns=0))
    model = ClientModel(facts(BUDGET))
    async with Client(server, sampling_callback=model, mode=mode) as client:  # type: ignore[arg-type]
        await call(client, "add_turn", thread_id="trip", role="user", content="Hawaii budget is $10,000")
        report = await call(client, "extract_memories", thread_id="trip")
        assert report["model"] == "sampling" and report["turns_read"] == 1
        assert [(f["content"], f["action"], f["fact_type"]) for f in report["facts"]] == [
            (BUDGET, "created", "semantic")
        ]
        assert await active_facts(server) == [BUDGET]
        [asked] = model.asked
        assert "extract long-term memories" in (asked.system_prompt or "")
        assert "Hawaii budget is $10,000" in asked.messages[0].content.text  # type: ignore[union-attr]
        # Nothing pending any more: a second call asks nobody.
        again = await call(client, "extract_memories", thread_id="trip")
        assert again["facts"] == [] and len(model.asked) == 1


async def test_background_extraction_samples_a_handshake_era_client(fast_settings: Settings) -> None:
    server = build_server(learning_settings(fast_settings))
    model = ClientModel(facts(BUDGET), facts("The user flies to Hawaii on May 3", kind="episodic"))
    async with Client(server, sampling_callback=model, mode="legacy") as client:
        await call(client, "add_turn", thread_id="trip", role="user", content="Hawaii budget is $10,000")
        await call(client, "add_turn", thread_id="trip", role="assistant", content="Noted.")
        await settle(server)
        assert await active_facts(server) == [BUDGET]
        await call(client, "add_turn", thread_id="trip", role="user", content="We fly on May 3")
        await call(client, "add_turn", thread_id="trip", role="assistant", content="Great.")
        await settle(server)
        assert set(await active_facts(server)) == {BUDGET, "The user flies to Hawaii on May 3"}
        assert len(model.asked) == 2


async def test_a_modern_client_is_asked_only_inside_a_tool_call(fast_settings: Settings) -> None:
    server = build_server(learning_settings(fast_settings))
    model = ClientModel(facts(BUDGET))
    async with Client(server, sampling_callback=model) as client:  # 2026-07-28: no back-channel
        await call(client, "add_turn", thread_id="trip", role="user", content="Hawaii budget is $10,000")
        await call(client, "add_turn", thread_id="trip", role="assistant", content="Noted.")
        await settle(server)
        assert model.asked == [] and await active_facts(server) == []  # pending, not lost
        report = await call(client, "extract_memories", thread_id="trip")
        assert report["turns_read"] == 2 and await active_facts(server) == [BUDGET]


async def test_reconcile_through_sampling_supersedes_the_older_fact(fast_settings: Settings) -> None:
    server = build_server(learning_settings(fast_settings, near_duplicate_similarity=0.999))
    model = ClientModel(json.dumps({"groups": [{"kind": "contradiction", "ids": ["F1", "F2"]}]}))
    async with Client(server, sampling_callback=model) as client:
        old = await call(client, "remember", content=BUDGET)
        new = await call(client, "remember", content="The budget for the Hawaii trip is now $15,000")
        report = await call(client, "reconcile_memories")
        assert report["model"] == "sampling" and report["contradicted"] == [old["id"]]
        found = await call(client, "search_memory", query="Hawaii trip budget", types=["fact"])
        assert [r["id"] for r in found["results"]] == [new["id"]]
        assert "F1" in model.asked[0].messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_malformed_sampling_answer_stores_nothing(fast_settings: Settings, mode: str) -> None:
    server = build_server(learning_settings(fast_settings, extract_every_turns=0))
    model = ClientModel("I'd rather not answer in JSON.")
    async with Client(server, sampling_callback=model, mode=mode) as client:  # type: ignore[arg-type]
        await call(client, "add_turn", thread_id="t", role="user", content="Hawaii budget is $10,000")
        message = await call_error(client, "extract_memories", thread_id="t")
        assert "not the JSON asked for" in message and "nothing was stored" in message
        assert await active_facts(server) == []
        await call(client, "add_turn", thread_id="t", role="user", content="still working")


async def test_a_refused_sampling_request_stores_nothing(fast_settings: Settings) -> None:
    server = build_server(learning_settings(fast_settings, extract_every_turns=0))
    model = ClientModel(types.ErrorData(code=-1, message="User rejected sampling request"))
    async with Client(server, sampling_callback=model, mode="legacy") as client:
        await call(client, "add_turn", thread_id="t", role="user", content="Hawaii budget is $10,000")
        # The SDK answers a failed in-call sampling with a protocol error carrying the client's reason.
        with pytest.raises(MCPError, match="User rejected sampling request"):
            await client.call_tool("extract_memories", {"thread_id": "t"})
        assert await active_facts(server) == []
        await call(client, "add_turn", thread_id="t", role="user", content="still working")


async def test_background_sampling_failure_is_skipped_and_retried(fast_settings: Settings) -> None:
    server = build_server(learning_settings(fast_settings))
    model = ClientModel(types.ErrorData(code=-1, message="rejected"), "no json here", facts(BUDGET))
    async with Client(server, sampling_callback=model, mode="legacy") as client:
        for content in ("Hawaii budget is $10,000", "ok", "anything else?", "no", "bye", "bye"):
            await call(client, "add_turn", thread_id="t", role="user", content=content)
            await settle(server)
        assert await active_facts(server) == [BUDGET]
        assert len(model.asked) == 3
        third = model.asked[2].messages[0].content.text  # type: ignore[union-attr]
        assert "Hawaii budget" in third  # the failed batches' turns were still pending
