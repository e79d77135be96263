"""Log messages to 2025-protocol clients (mcp/middleware/client_log.py), through a real MCP client in process:
`logging/setLevel` filters the `notifications/message` a session receives, per session; an unknown level
is -32602 Invalid params; the messages never carry memory text; 2026 clients see no client logging."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory.config import Settings
from mcp_memory.mcp.middleware.client_log import LEVELS
from mcp_memory.mcp.server import MemoryServer, build_server
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage.base import LateVectors
from tests.fakes.openai_stub import OpenAIStub
from tests.helpers import HANG_SECONDS
from tests.integration.test_late_vectors import HeldEmbedder
from tests.services.mcp_client import call

# Client logging is deprecated in the 2026 protocol, and the SDK says so on each use; these tests use it.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

# Memory text the tests write: no log message may contain any of it.
SECRETS = ("Maui", "10,000", "Kauai", "condo", "snorkel")
TURNS = ("Our budget for Maui is 10,000 dollars", "Kauai has the better condo", "We want to snorkel")


class Received:
    """The log notifications one client session received, in order."""

    def __init__(self) -> None:
        self.messages: list[types.LoggingMessageNotificationParams] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.messages.append(params)

    def levels(self) -> list[str]:
        return [m.level for m in self.messages]

    def events(self) -> list[tuple[str, str]]:
        return [(m.level, m.data["event"]) for m in self.messages]

    def assert_no_memory_text(self) -> None:
        dumped = json.dumps([m.model_dump(mode="json") for m in self.messages])
        for text in SECRETS:
            assert text not in dumped, f"a log message carries memory text ({text!r}): {dumped}"


def at_or_above(level: str, events: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [e for e in events if LEVELS.index(e[0]) >= LEVELS.index(level)]


def legacy(server: MemoryServer, received: Received) -> Client:
    """A 2025-protocol client (the initialize handshake) with a log callback."""
    return Client(server, mode="legacy", logging_callback=received, raise_exceptions=False)


@pytest.fixture
def remote_settings(fast_settings: Settings, openai_stub: OpenAIStub) -> Settings:
    """Embeddings from the OpenAI-compatible stub (so the test can make the provider fail) and a small
    stored-bytes quota (so a long turn is refused)."""
    embedding = openai_stub.embedding_settings()
    security = fast_settings.security.model_copy(update={"max_stored_bytes": 2_000})
    return fast_settings.model_copy(update={"embedding": embedding, "security": security})


async def one_of_each(client: Client, stub: OpenAIStub) -> None:
    """Calls that make one message of each kind: debug per call, info (a summary), warning (the quota
    refuses a write), error (the embedding provider fails)."""
    for content in TURNS:
        await call(client, "add_turn", thread_id="trip", role="user", content=content)
    summary = await call(client, "summarize_thread", thread_id="trip", keep_recent=1)
    assert summary["summarized_count"] == 2
    refused = await client.call_tool(
        "add_turn", {"thread_id": "trip", "role": "user", "content": "Maui " * 500}
    )
    assert refused.is_error and "storage quota" in refused.content[0].text  # type: ignore[union-attr]
    stub.set_mode("500")
    failed = await client.call_tool("add_turn", {"thread_id": "trip", "role": "user", "content": "snorkel"})
    stub.set_mode("ok")
    assert failed.is_error and "embedding provider" in failed.content[0].text  # type: ignore[union-attr]


EVERY_EVENT = [
    ("debug", "tool_call"),
    ("debug", "tool_call"),
    ("debug", "tool_call"),
    ("debug", "tool_call"),
    ("info", "summarized"),
    ("debug", "tool_call"),
    ("warning", "limit_refused"),
    ("debug", "tool_call"),
    ("error", "backend_unavailable"),
]


@pytest.mark.parametrize("level", ["debug", "info", "warning", "error", "critical"])
async def test_a_2025_client_receives_only_messages_at_or_above_its_level(
    remote_settings: Settings, openai_stub: OpenAIStub, level: types.LoggingLevel
) -> None:
    received = Received()
    async with legacy(build_server(remote_settings), received) as client:
        assert client.server_capabilities.logging is not None  # declared to 2025 clients
        assert await client.set_logging_level(level) == types.EmptyResult()
        await one_of_each(client, openai_stub)
    assert received.events() == at_or_above(level, EVERY_EVENT)
    received.assert_no_memory_text()


async def test_the_messages_say_what_happened_in_counts_and_ids(
    remote_settings: Settings, openai_stub: OpenAIStub
) -> None:
    received = Received()
    async with legacy(build_server(remote_settings), received) as client:
        await client.set_logging_level("info")
        await one_of_each(client, openai_stub)
    summarized, refused, failed = (m.data for m in received.messages)
    assert summarized == {
        "event": "summarized",
        "thread_id": "trip",
        "summarized_count": 2,
        "kept_count": 1,
        "tokens_before": summarized["tokens_before"],
        "tokens_after": summarized["tokens_after"],
    }
    assert summarized["tokens_after"] < summarized["tokens_before"]
    assert refused["tool"] == "add_turn" and "storage quota reached" in refused["message"]
    assert failed["tool"] == "add_turn" and "embedding provider" in failed["message"]
    assert {m.logger for m in received.messages} == {"mcp-memory"}


async def test_a_session_that_sets_no_level_receives_nothing_and_each_keeps_its_own(
    fast_settings: Settings,
) -> None:
    server = build_server(fast_settings)
    chatty, quiet, strict = Received(), Received(), Received()
    async with legacy(server, chatty) as a, legacy(server, quiet) as b, legacy(server, strict) as c:
        await a.set_logging_level("debug")
        await c.set_logging_level("error")
        for client, thread in ((a, "a"), (b, "b"), (c, "c")):
            for content in TURNS:
                await call(client, "add_turn", thread_id=thread, role="user", content=content)
            await call(client, "summarize_thread", thread_id=thread, keep_recent=1)
        # A level set later applies from then on, to that session only.
        await b.set_logging_level("info")
        await call(b, "summarize_thread", thread_id="b", keep_recent=0)
    assert chatty.events() == [("debug", "tool_call")] * 4 + [("info", "summarized")]
    assert [m.data["tool"] for m in chatty.messages[:4]] == ["add_turn"] * 3 + ["summarize_thread"]
    assert quiet.events() == [("info", "summarized")]
    assert strict.messages == []


async def test_an_unknown_level_is_invalid_params_and_keeps_the_level_set(fast_settings: Settings) -> None:
    received = Received()
    async with legacy(build_server(fast_settings), received) as client:
        await client.set_logging_level("info")
        # The SDK's client validates the level; a raw request sends what a careless client would.
        level: Any = "verbose"  # not a LoggingLevel: model_construct skips the validation
        bad = types.SetLevelRequest(params=types.SetLevelRequestParams.model_construct(level=level))
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(bad, types.EmptyResult)
        assert refused.value.error.code == types.INVALID_PARAMS
        assert "unknown log level 'verbose'" in refused.value.error.message
        assert (
            "debug, info, notice, warning, error, critical, alert, emergency" in refused.value.error.message
        )
        for content in TURNS:
            await call(client, "add_turn", thread_id="t", role="user", content=content)
        await call(client, "summarize_thread", thread_id="t", keep_recent=1)
    assert received.events() == [("info", "summarized")]  # still info: the bad request changed nothing


async def test_a_turn_that_passes_the_threshold_reports_its_summary(fast_settings: Settings) -> None:
    settings = fast_settings
    received = Received()
    async with legacy(build_server(settings), received) as client:
        await client.set_logging_level("info")
        summarized = False
        for n in range(40):
            added = await call(
                client,
                "add_turn",
                thread_id="long",
                role="user",
                content=f"turn {n} " + "word " * 60,
                context_window=1000,
            )
            summarized = added["summarized"]
            if summarized:
                break
    assert summarized, "the thread never passed its threshold"
    [message] = received.messages
    assert message.level == "info"
    assert set(message.data) == {"event", "thread_id", "trigger", "message_count", "token_count"}
    assert message.data["event"] == "summarized" and message.data["thread_id"] == "long"
    assert message.data["trigger"] == "threshold"
    assert message.data["token_count"] < 700  # the summary made room under the threshold (70% of 1,000)


async def test_a_long_embedding_backlog_is_a_warning(fast_settings: Settings) -> None:
    server = build_server(fast_settings)
    received = Received()
    async with legacy(server, received) as client:
        await client.set_logging_level("warning")
        service = server.host.service
        assert isinstance(service.stores.long_term, LateVectors)
        held = HeldEmbedder(service.embedder)
        async with VectorWriter.running(held, service.stores.long_term, backlog=4) as writer:
            service.vectors = writer
            await call(client, "add_turn", thread_id="t", role="user", content="one")  # 1 of 4 waiting
            await call(client, "add_turn", thread_id="t", role="user", content="two")  # 2 of 4: warn
            held.release.set()
            with anyio.fail_after(HANG_SECONDS):
                await writer.settled(fast_settings.user_id)
            await call(client, "add_turn", thread_id="t", role="user", content="three")  # 1 of 4 again
            held.release.set()
    assert [m.data for m in received.messages] == [{"event": "embedding_backlog", "waiting": 2, "backlog": 4}]


async def test_2026_clients_keep_no_client_logging(fast_settings: Settings) -> None:
    """Client logging is deprecated in the 2026-07-28 protocol: no capability, no setLevel, no messages,
    even for a client that opts in per request."""
    server = build_server(fast_settings)
    received = Received()
    async with Client(server, logging_callback=received, log_level="debug") as modern:
        assert modern.server_capabilities.logging is None
        with pytest.raises(MCPError) as refused:
            await modern.set_logging_level("debug")
        assert refused.value.error.code == types.METHOD_NOT_FOUND
        for content in TURNS:
            await call(modern, "add_turn", thread_id="t", role="user", content=content)
        await call(modern, "summarize_thread", thread_id="t", keep_recent=1)
    assert received.messages == []
