"""Prometheus metrics on the real `mcp-memory serve --transport http` process: the values move by what
the calls did, no label carries a user, thread or text, and who may scrape a token-protected server."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcp_memory.observability.metrics import OTHER
from tests.fakes.openai_stub import OpenAIStub
from tests.security.bearer import bearer_client, challenge, credential, start_with_tokens, tokens_env
from tests.services.local_issuer import local_issuer
from tests.services.mcp_client import call, call_error
from tests.services.server_process import E2E_USER, NetworkServer, ServerStarter, free_port, server_env

pytestmark = pytest.mark.anyio

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape, by its name and labels (parsed by prometheus_client's own parser)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    return samples.get((metric, frozenset(labels.items())), 0.0)


async def scrape(base_url: str, token: str | None = None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.get(f"{base_url}/metrics", headers=headers)


async def scraped(base_url: str, token: str | None = None) -> Samples:
    response = await scrape(base_url, token)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


async def raw_tool_call(url: str, token: str, name: str, arguments: dict[str, str]) -> httpx2.Response:
    """A tools/call POSTed as a 2025 client would, without a session: the HTTP answer itself."""
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(
            url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": "2025-06-18",
            },
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            ),
        )


async def test_metric_values_move_with_calls(start_server: ServerStarter, tmp_path: Path) -> None:
    server = start_server("http", tmp_path / "data")
    thread, secret = "metrics-thread-7f3a", "Kalamazoo-marmalade"
    before = await scraped(server.base_url)
    async with server.connect() as client:
        for n in range(3):
            await call(client, "add_turn", thread_id=thread, role="user", content=f"{secret} number {n}")
        await call(client, "search_memory", query=secret, mode="hybrid")
        await call(client, "search_memory", query=secret, mode="hybrid")
        await call(client, "search_memory", query=secret, mode="text")
        await call_error(client, "search_memory", query=secret, mode=f"{secret}-mode")
        await call_error(client, "get_working_memory", thread_id="not a thread id!")
        await client.read_resource("memory://threads")
        await client.read_resource(f"memory://threads/{thread}")
        # A thread past its window is summarized (offline: the extractive summarizer).
        long = " ".join(f"word{i}" for i in range(120))
        for _ in range(3):
            await call(
                client, "add_turn", thread_id=f"{thread}-b", role="user", content=long, context_window=256
            )
        # Read back: a summary that outlasted its add_turn (past summary.inline_seconds) is awaited here.
        await call(client, "get_working_memory", thread_id=f"{thread}-b")
        assert (await client.call_tool(f"{secret}_tool", {})).is_error
    text = (await scrape(server.base_url)).text
    after = parse(text)

    def moved(metric: str, /, **labels: str) -> float:
        return value(after, metric, **labels) - value(before, metric, **labels)

    calls = "mcp_memory_calls_total"
    assert moved(calls, kind="tool", name="add_turn", outcome="ok") == 6
    assert moved(calls, kind="tool", name="search_memory", outcome="ok") == 3
    assert moved(calls, kind="tool", name="search_memory", outcome="error") == 1
    assert moved(calls, kind="tool", name="get_working_memory", outcome="error") == 1
    assert moved(calls, kind="tool", name="other", outcome="error") == 1  # an unknown tool: no new series
    assert moved(calls, kind="resource", name="threads", outcome="ok") == 1
    assert moved(calls, kind="resource", name="working_memory", outcome="ok") == 1
    # The handshake (initialize, or server/discover for a 2026 client) and listings, by method.
    methods = {
        dict(labels)["name"] for name, labels in after if name == calls and ("kind", "method") in labels
    }
    assert methods and OTHER not in methods, methods
    seconds = "mcp_memory_call_duration_seconds_count"
    assert moved(seconds, kind="tool", name="add_turn") == 6
    search = "mcp_memory_search_duration_seconds_count"
    assert moved(search, mode="hybrid") == 2
    assert moved(search, mode="text") == 1
    assert moved(search, mode="other") == 1
    assert moved(search, mode="vector") == 0
    # Each turn is embedded after add_turn answers; a search by meaning waits for the user's turns.
    assert moved("mcp_memory_embedding_wait_seconds_count") >= 3
    assert value(after, "mcp_memory_embedding_backlog") >= 0
    assert moved("mcp_memory_summarizations_total", summarizer="extractive") >= 1
    # Two hybrid searches for the same words: the second reuses the first's query vector.
    assert moved("mcp_memory_query_vectors_total", source="embedded") == 1
    assert moved("mcp_memory_query_vectors_total", source="reused") == 1
    assert value(after, "mcp_memory_backend_ready", store="working", backend="sqlite") == 1
    assert value(after, "mcp_memory_backend_ready", store="long_term", backend="sqlite") == 1
    assert value(after, "mcp_memory_index_users") >= 1
    assert value(after, "mcp_memory_index_memories") >= 3
    assert value(after, "mcp_memory_index_memory_bytes") > 0
    assert value(after, "mcp_memory_index_memory_budget_bytes") == 512 * 2**20
    assert value(after, "mcp_memory_index_events_total", event="build") >= 1  # at start (warm-up)
    # No label carries who called, which thread, or what was said or asked.
    for _, labels in after:
        for _, label in labels:
            for private in (thread, secret, E2E_USER, "word1"):
                assert private not in label, (label, private)
    assert secret not in text and thread not in text


async def test_refusals_by_rate_and_scope_are_counted(start_server: ServerStarter, tmp_path: Path) -> None:
    writer, reader, scraper = credential("ann"), credential("bob", "read"), credential("prom", "metrics")
    env = tokens_env(
        [writer, reader, scraper],
        MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND="0.001",
        MCP_MEMORY_SECURITY__REQUEST_BURST="4",
    )
    server = start_server("http", tmp_path / "data", env)
    before = await scraped(server.base_url, scraper.token)
    limited = 0
    async with bearer_client(server, writer.token) as client:
        for _ in range(8):
            result = await client.call_tool("list_memories", {})
            text = result.content[0].text  # type: ignore[union-attr]
            limited += result.is_error is True and text.startswith("rate limit reached")
    refused = await raw_tool_call(
        server.url, reader.token, "add_turn", {"thread_id": "t", "role": "user", "content": "x"}
    )
    assert refused.status_code == 403
    after = await scraped(server.base_url, scraper.token)
    assert limited >= 1, "the bucket of 4 should have run dry within 8 calls"
    assert (
        value(after, "mcp_memory_refusals_total", limit="requests")
        - value(before, "mcp_memory_refusals_total", limit="requests")
        == limited
    )
    assert (
        value(after, "mcp_memory_calls_total", kind="tool", name="list_memories", outcome="rate_limited")
        == limited
    )
    assert (
        value(after, "mcp_memory_refusals_total", limit="scope")
        - value(before, "mcp_memory_refusals_total", limit="scope")
        == 1
    )


async def test_a_protected_server_wants_a_metrics_or_admin_token(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    writer, scraper, admin = credential("ann"), credential("prom", "metrics"), credential("root", "admin")
    server = start_with_tokens(start_server, tmp_path, [writer, scraper, admin])
    missing = await scrape(server.base_url)
    assert missing.status_code == 401
    async with httpx2.AsyncClient(timeout=30) as http:
        mcp_missing = await http.post(server.url, headers={"Accept": "application/json, text/event-stream"})
    assert missing.headers["www-authenticate"] == mcp_missing.headers["www-authenticate"]
    assert (await scrape(server.base_url, "not-a-token")).status_code == 401
    insufficient = await scrape(server.base_url, writer.token)
    assert insufficient.status_code == 403
    params = challenge(insufficient)
    assert params["error"] == "insufficient_scope" and params["scope"] == "metrics"
    for token in (scraper.token, admin.token):
        await scraped(server.base_url, token)
    # The metrics scope reads /metrics and nothing else.
    answer = await raw_tool_call(server.url, scraper.token, "list_memories", {})
    assert answer.status_code == 403


async def test_the_loopback_metrics_port_serves_without_a_token(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    port = free_port()
    writer = credential("ann")
    server = start_with_tokens(
        start_server, tmp_path, [writer], MCP_MEMORY_OBSERVABILITY__METRICS_PORT=str(port)
    )
    async with bearer_client(server, writer.token) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="counted")
    side = f"http://127.0.0.1:{port}"
    samples = await scraped(side)
    assert value(samples, "mcp_memory_calls_total", kind="tool", name="add_turn", outcome="ok") == 1
    async with httpx2.AsyncClient(timeout=30) as http:
        assert (await http.get(f"{side}/health")).status_code == 404  # /metrics alone
    assert (await scrape(server.base_url)).status_code == 401  # the main port still wants a token
    assert server.stop() == 0


async def test_model_calls_facts_and_limits_are_counted(
    start_server: ServerStarter, tmp_path: Path, openai_stub: OpenAIStub
) -> None:
    server = start_server(
        "http",
        tmp_path / "data",
        {
            "MCP_MEMORY_LLM__PROVIDER": "openai",
            "MCP_MEMORY_LLM__MODEL": "stub-chat",
            "MCP_MEMORY_LLM__BASE_URL": openai_stub.base_url,
            "MCP_MEMORY_LLM__API_KEY": "sk-test-not-a-secret",
            "MCP_MEMORY_LLM__TIMEOUT_SECONDS": "10",  # the stub answers at once, a loaded machine late
            "MCP_MEMORY_LLM__MAX_RETRIES": "0",
            # Only the calls below reach the model: no learning in the background.
            "MCP_MEMORY_LEARNING__EXTRACT_EVERY_TURNS": "0",
            "MCP_MEMORY_LEARNING__EXTRACT_ON_SUMMARY": "false",
            "MCP_MEMORY_LEARNING__RECONCILE_EVERY_EXTRACTIONS": "0",
            "MCP_MEMORY_LEARNING__PROFILE": "false",
            "MCP_MEMORY_SECURITY__LLM_CALLS_PER_HOUR": "3",
            "MCP_MEMORY_SECURITY__MAX_STORED_BYTES": "20000",
        },
    )
    fact = {
        "text": "The budget for the trip is $10,000",
        "type": "semantic",
        "confidence": 0.9,
        "source": ["T1"],
    }
    async with server.connect() as client:
        await call(client, "add_turn", thread_id="trip", role="user", content="Our budget is $10,000.")
        await call(client, "add_turn", thread_id="trip", role="assistant", content="Noted: $10,000.")
        openai_stub.script(json.dumps({"facts": [fact]}))
        learned = await call(client, "extract_memories", thread_id="trip")  # model call 1
        assert [f["action"] for f in learned["facts"]] == ["created"]
        await call(client, "summarize_thread", thread_id="trip", keep_recent=0)  # model call 2
        await call(client, "add_turn", thread_id="trip", role="user", content="And the dates are in May.")
        openai_stub.set_mode("500", times=1)
        await call_error(client, "extract_memories", thread_id="trip")  # model call 3: the model fails
        refused = await call_error(client, "extract_memories", thread_id="trip")  # the hour's 3 are spent
        assert "LLM quota reached" in refused
        over = await call_error(client, "add_turn", thread_id="trip", role="user", content="x" * 30_000)
        assert "quota" in over.lower() or "stored" in over.lower(), over
    samples = await scraped(server.base_url)
    assert (
        value(samples, "mcp_memory_model_calls_total", provider="llm", purpose="extraction", outcome="ok")
        == 1
    )
    assert (
        value(samples, "mcp_memory_model_calls_total", provider="llm", purpose="summary", outcome="ok") == 1
    )
    assert (
        value(samples, "mcp_memory_model_calls_total", provider="llm", purpose="extraction", outcome="error")
        == 1
    )
    assert value(samples, "mcp_memory_model_tokens_total", provider="llm", direction="prompt") > 0
    assert value(samples, "mcp_memory_model_tokens_total", provider="llm", direction="answer") > 0
    assert value(samples, "mcp_memory_facts_learned_total", action="created") == 1
    assert value(samples, "mcp_memory_audit_records_total", action="add", outcome="ok") >= 1
    assert value(samples, "mcp_memory_summarizations_total", summarizer="model") == 1
    assert value(samples, "mcp_memory_backend_errors_total", backend="llm") == 1
    extract = {"kind": "tool", "name": "extract_memories"}
    assert value(samples, "mcp_memory_calls_total", **extract, outcome="ok") == 1
    assert value(samples, "mcp_memory_calls_total", **extract, outcome="unavailable") == 1
    assert value(samples, "mcp_memory_calls_total", **extract, outcome="limit") == 1
    assert value(samples, "mcp_memory_refusals_total", limit="llm_calls") == 1  # counted once
    assert value(samples, "mcp_memory_calls_total", kind="tool", name="add_turn", outcome="limit") == 1
    assert value(samples, "mcp_memory_refusals_total", limit="stored_bytes") == 1


async def test_identity_provider_tokens_need_the_metrics_scope(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    with local_issuer() as issuer:
        server = start_server(
            "http",
            tmp_path / "data",
            {
                "MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER": issuer.url,
                "MCP_MEMORY_SECURITY__RESOURCE_URL": "http://127.0.0.1:{port}/mcp",
            },
        )
        metadata = f"{server.base_url}/.well-known/oauth-protected-resource/mcp"
        missing = await scrape(server.base_url)
        assert missing.status_code == 401 and challenge(missing)["resource_metadata"] == metadata
        member = issuer.mint(issuer.claims(server.url, scope="read write"))
        refused = await scrape(server.base_url, member)
        assert refused.status_code == 403
        assert challenge(refused) | {"error_description": ""} == {
            "error": "insufficient_scope",
            "error_description": "",
            "resource_metadata": metadata,
            "scope": "metrics",
        }
        # A client-credentials token of the monitoring system: no user, the metrics scope.
        monitor = issuer.mint(issuer.claims(server.url, sub="prometheus", scope="metrics"))
        await scraped(server.base_url, monitor)


async def test_the_sse_transport_serves_metrics_too(start_server: ServerStarter, tmp_path: Path) -> None:
    server = start_server("sse", tmp_path / "data")
    async with server.connect() as client:
        await call(client, "add_turn", thread_id="sse-thread", role="user", content="over SSE")
        await call(client, "search_memory", query="SSE", mode="vector")
    samples = await scraped(server.base_url)
    assert value(samples, "mcp_memory_calls_total", kind="tool", name="add_turn", outcome="ok") == 1
    assert value(samples, "mcp_memory_search_duration_seconds_count", mode="vector") == 1
    assert value(samples, "process_resident_memory_bytes") > 0
    # A scraper that asks for OpenMetrics gets it (the client library negotiates, as its own server does).
    async with httpx2.AsyncClient(timeout=30) as http:
        negotiated = await http.get(
            f"{server.base_url}/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
        )
    assert negotiated.headers["content-type"].startswith("application/openmetrics-text")
    assert negotiated.text.endswith("# EOF\n")


class _OnOtherLoopback(NetworkServer):
    """The server on 127.0.0.2, so its metrics port can be the same number on 127.0.0.1."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.2:{self.port}"

    def arguments(self) -> list[str]:
        return [*super().arguments(), "--host", "127.0.0.2"]


async def test_the_metrics_port_never_unguards_the_main_address(tmp_path: Path) -> None:
    # The same port number on another address: only 127.0.0.1's requests skip the token.
    port, writer = free_port(), credential("ann")
    env = server_env(
        tmp_path / "data", tokens_env([writer], MCP_MEMORY_OBSERVABILITY__METRICS_PORT=str(port))
    )
    server = _OnOtherLoopback("http", tmp_path / "work", env, port=port)
    server.start()
    try:
        assert (await scrape(server.base_url)).status_code == 401
        await scraped(f"http://127.0.0.1:{port}")
        async with bearer_client(server, writer.token) as client:
            await call(client, "add_turn", thread_id="t", role="user", content="still guarded, still served")
    finally:
        assert server.stop() == 0


async def test_metrics_can_be_turned_off(start_server: ServerStarter, tmp_path: Path) -> None:
    port = free_port()
    server = start_server(
        "http",
        tmp_path / "data",
        {"MCP_MEMORY_OBSERVABILITY__METRICS": "false", "MCP_MEMORY_OBSERVABILITY__METRICS_PORT": str(port)},
    )
    assert (await scrape(server.base_url)).status_code == 404
    with pytest.raises(httpx2.ConnectError):
        await scrape(f"http://127.0.0.1:{port}")
