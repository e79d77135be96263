"""Admission through the real `mcp-memory serve --transport http` process (mcp/middleware/admission.py): under
overload a read is answered 503 with Retry-After and a JSON-RPC error naming the wait, which the MCP
client reports as the call's error; writes are never refused and every acknowledged one is stored."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_memory.mcp.middleware.admission import SERVER_BUSY
from tests.e2e.test_metrics import scraped, value
from tests.security.bearer import bearer_client, credential, start_with_tokens
from tests.services.mcp_client import call
from tests.services.server_process import NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

USERS, EACH = 3, 12
# One request at a time, and a read may wait 1 ms: a burst of concurrent calls overloads the server.
OVERLOADED = {
    "MCP_MEMORY_ADMISSION__CONCURRENT_REQUESTS": "1",
    "MCP_MEMORY_ADMISSION__MAX_WAIT_SECONDS": "0.001",
}


@asynccontextmanager
async def recording_client(
    server: NetworkServer, token: str, answers: list[httpx2.Response]
) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP that also keeps every HTTP answer (status, headers, body)."""

    async def keep(response: httpx2.Response) -> None:
        if response.status_code == 503:
            await response.aread()
        answers.append(response)

    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=60, event_hooks={"response": [keep]}
        ) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        yield client


async def test_under_overload_reads_are_shed_with_retry_after_and_every_write_lands(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = [credential(f"user{i}") for i in range(USERS)]
    monitor = credential("prometheus", "metrics")
    server = start_with_tokens(start_server, tmp_path, [*team, monitor], **OVERLOADED)
    answers: list[httpx2.Response] = []
    refused: list[MCPError] = []
    served = {"search_memory": 0, "add_turn": 0}

    async def one(client: Client, tool: str, arguments: dict[str, Any]) -> None:
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as e:
            assert tool == "search_memory", f"a write was refused: {e}"
            refused.append(e)
        else:
            assert not result.is_error, result.content
            served[tool] += 1

    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(recording_client(server, w.token, answers)) for w in team]
        async with anyio.create_task_group() as group:  # every user's calls at once
            for n in range(EACH):
                for who, client in zip(team, clients, strict=True):
                    group.start_soon(one, client, "search_memory", {"query": f"rope {n}"})
                    content = f"{who.user_id} turn {n}: the rope is 60 m."
                    group.start_soon(
                        one, client, "add_turn", {"thread_id": "burst", "role": "user", "content": content}
                    )

    assert refused, f"no read was shed ({served})"
    assert served["add_turn"] == USERS * EACH  # writes wait their turn
    assert served["search_memory"] + len(refused) == USERS * EACH
    busy = [a for a in answers if a.status_code == 503]
    assert len(busy) == len(refused)
    for answer, error in zip(busy, refused, strict=True):
        retry_after = int(answer.headers["Retry-After"])
        assert retry_after >= 1
        assert error.error.code == SERVER_BUSY
        assert (
            "nothing was done" in error.error.message and f"retry in {retry_after} s" in error.error.message
        )
        assert answer.json()["error"]["data"] == {"retry_after": retry_after}
    samples = await scraped(server.base_url, monitor.token)
    assert value(samples, "mcp_memory_refusals_total", limit="overload") == len(refused)
    admitted = value(samples, "mcp_memory_admission_wait_seconds_count")
    assert admitted == served["add_turn"] + served["search_memory"]
    for who in team:
        async with bearer_client(server, who.token) as client:
            thread = await call(client, "get_working_memory", thread_id="burst")
            assert thread["message_count"] == EACH, thread


async def test_an_mcp_client_hears_the_refusal_as_its_calls_error(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    ann = credential("ann")
    server = start_with_tokens(start_server, tmp_path, [ann], **OVERLOADED)
    outcomes: list[str] = []
    async with bearer_client(server, ann.token) as client:

        async def search(n: int) -> None:
            try:
                result = await client.call_tool("search_memory", {"query": f"rope {n}"})
            except MCPError as e:
                outcomes.append(json.dumps({"code": e.error.code, "message": e.error.message}))
            else:
                outcomes.append("served" if not result.is_error else "tool error")

        async with anyio.create_task_group() as group:
            for n in range(30):
                group.start_soon(search, n)
    refused = [json.loads(o) for o in outcomes if o.startswith("{")]
    assert refused, outcomes
    assert all(r["code"] == SERVER_BUSY and "retry in" in r["message"] for r in refused)
    assert "served" in outcomes  # the server went on answering
