"""Per-principal request rate, stored bytes and LLM calls per hour: clear errors, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr

from mcp_memory.config import SecuritySettings, Settings
from mcp_memory.errors import LimitExceededError
from mcp_memory.learning.budget import LlmBudget, ProcessCounters
from mcp_memory.mcp.middleware.rate_limit import RateLimiter
from mcp_memory.mcp.server import build_server
from tests.security.bearer import bearer_client, credential, start_with_tokens
from tests.services.mcp_client import call, call_error
from tests.services.server_process import ServerStarter

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(per_second=2.0, burst=3, clock=clock)
    assert [limiter.take("ann") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("ann") == pytest.approx(0.5)
    assert limiter.take("bob") == 0.0  # per principal
    clock.now += 0.5
    assert limiter.take("ann") == 0.0
    assert limiter.take("ann") > 0


def _limited(settings: Settings, **security: object) -> Settings:
    return settings.model_copy(update={"security": SecuritySettings.model_validate(security)})


async def test_a_principal_past_its_rate_gets_a_clear_error(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    ann, bob = credential("ann"), credential("bob")
    env = {"MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "0.001", "MCP_MEMORY_SECURITY__REQUEST_BURST": "6"}
    server = start_with_tokens(start_server, tmp_path, [ann, bob], **env)
    async with bearer_client(server, ann.token) as client:
        outcomes = []
        for i in range(8):  # the client's own requests (tools/list) spend from the same bucket
            arguments = {"thread_id": "r", "role": "user", "content": f"n{i}"}
            outcomes.append(await client.call_tool("add_turn", arguments))
        refused = [r for r in outcomes if r.is_error]
        assert refused, "the burst of 6 was exceeded without a refusal"
        message = refused[0].content[0].text  # type: ignore[union-attr]
        assert "rate limit reached" in message and "retry in" in message
        with pytest.raises(MCPError, match="rate limit reached"):
            await client.read_resource("memory://threads")
    async with bearer_client(server, bob.token) as client:  # another principal has its own bucket
        found = await call(client, "search_memory", query="n1")
        assert found["results"] == []  # and sees none of ann's turns


async def test_the_local_user_is_not_rate_limited(fast_settings: Settings) -> None:
    settings = _limited(fast_settings, requests_per_second=0.001, request_burst=1)
    async with Client(build_server(settings), raise_exceptions=False) as client:
        for i in range(5):
            await call(client, "add_turn", thread_id="r", role="user", content=f"n{i}")


async def test_the_storage_quota_refuses_a_write_and_stores_nothing(fast_settings: Settings) -> None:
    settings = _limited(fast_settings, max_stored_bytes=100)
    async with Client(build_server(settings), raise_exceptions=False) as client:
        await call(client, "add_turn", thread_id="q", role="user", content="x" * 60)
        message = await call_error(client, "add_turn", thread_id="q", role="user", content="y" * 60)
        assert "storage quota reached" in message and "60 of 100 bytes" in message
        wm = await call(client, "get_working_memory", thread_id="q")
        assert [m["content"] for m in wm["messages"]] == ["x" * 60]
        await call(client, "forget", thread_id="q")
        await call(client, "add_turn", thread_id="q", role="user", content="y" * 60)  # room again


async def test_llm_calls_per_hour_are_counted_per_user_with_a_background_share() -> None:
    clock = Clock()
    budget = LlmBudget(ProcessCounters(), limit=2, background_limit=1, clock=clock)
    await budget.charge("ann", "a summary", background=False)
    await budget.charge("ann", "an extraction", background=True)
    await budget.charge("bob", "an extraction", background=True)
    with pytest.raises(LimitExceededError, match=r"2 model calls per hour .* used up for this user"):
        await budget.charge("ann", "a summary", background=False)
    with pytest.raises(LimitExceededError, match="background learning's share"):
        await budget.charge("bob", "an extraction", background=True)
    await budget.charge("bob", "a summary", background=False)  # the share leaves room for summaries
    usage = await budget.view("ann")
    assert (usage.used, usage.background_used) == (2, 1)  # refused calls are given back
    assert usage.resets_at.timestamp() == 3600.0  # clock hours: the window started at 0
    clock.now = 3600.0
    await budget.charge("ann", "a summary", background=False)


async def test_past_the_llm_quota_summarize_thread_is_refused_and_add_turn_summarizes_offline(
    fast_settings: Settings, openai_stub: object
) -> None:
    base_url = openai_stub.base_url  # type: ignore[attr-defined]
    llm = fast_settings.llm.model_copy(
        update={"provider": "openai", "base_url": base_url, "api_key": SecretStr("k")}
    )
    settings = _limited(fast_settings, llm_calls_per_hour=1).model_copy(update={"llm": llm})
    async with Client(build_server(settings), raise_exceptions=False) as client:
        for i in range(4):
            await call(
                client, "add_turn", thread_id="s", role="user", content=f"Plan item {i} is settled now."
            )
        await call(client, "summarize_thread", thread_id="s", keep_recent=1)  # the hour's one LLM call
        await call(client, "add_turn", thread_id="s", role="user", content="Another settled plan item.")
        message = await call_error(client, "summarize_thread", thread_id="s", keep_recent=0)
        assert "LLM quota reached" in message
        calls_before = len(openai_stub.chat_requests())  # type: ignore[attr-defined]
        long = " ".join(f"word{i}" for i in range(700))
        out = await call(client, "add_turn", thread_id="s", role="user", content=long, context_window=1000)
        assert out["summarized"] is True  # offline, past the quota
        assert len(openai_stub.chat_requests()) == calls_before  # type: ignore[attr-defined]
