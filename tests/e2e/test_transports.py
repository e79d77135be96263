"""The real `mcp-memory` process over stdio, SSE and streamable HTTP: every tool, resource and prompt."""

from __future__ import annotations

import json
import uuid

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from tests.services.mcp_client import call, call_error
from tests.services.server_process import TRANSPORTS, McpMemoryServer, StdioServer

pytestmark = pytest.mark.anyio

CONTRACT_TOOLS = {"add_turn", "search_memory", "get_working_memory", "summarize_thread", "forget"}
EVENT_SECONDS = 60.0  # a bound against a hang: the change was made, its notification follows


def new_thread() -> str:
    """Tests share a server per module; each writes to a thread of its own."""
    return f"e2e-{uuid.uuid4().hex[:12]}"


async def read_text(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    return result.contents[0].text  # type: ignore[union-attr]


async def test_every_tool_resource_and_prompt_over_the_wire(mcp_server: McpMemoryServer) -> None:
    thread = new_thread()
    async with mcp_server.connect() as client:
        assert client.server_info is not None and client.server_info.name == "mcp-memory"
        assert {t.name for t in (await client.list_tools()).tools} >= CONTRACT_TOOLS

        turns = []
        for role, content in [
            ("user", "My sister Maya and I fly to Maui on March 14."),
            ("assistant", "Noted: Maui with Maya, departing March 14."),
            ("user", "Our budget is 10000 dollars for flights and the rental."),
            ("assistant", "That covers both islands comfortably."),
        ]:
            added = await call(
                client, "add_turn", thread_id=thread, role=role, content=content, context_window=4096
            )
            assert added["id"].startswith("turn_") and added["token_count"] > 0
            turns.append({"id": added["id"], "content": content})  # add_turn answers the id, not the text
        assert added["thread"]["messages"] == 4

        found = await call(client, "search_memory", query="budget", thread_id=thread)
        assert found["results"][0]["id"] == turns[2]["id"]

        working = await call(client, "get_working_memory", thread_id=thread)
        assert [(m["id"], m["content"]) for m in working["messages"]] == [
            (t["id"], t["content"]) for t in turns
        ]
        assert working["thread_id"] == thread and working["context_window"] == 4096
        assert working["message_count"] == 4 and working["token_count"] == added["thread"]["tokens"]

        summarized = await call(client, "summarize_thread", thread_id=thread, keep_recent=1)
        assert summarized["summarized_count"] == 3 and summarized["kept_count"] == 1 and summarized["summary"]

        threads = json.loads(await read_text(client, "memory://threads"))
        assert thread in {t["thread_id"] for t in threads}
        view = json.loads(await read_text(client, f"memory://threads/{thread}"))
        assert view["thread_id"] == thread and [m["id"] for m in view["messages"]] == [turns[3]["id"]]
        assert await read_text(client, f"memory://threads/{thread}/summary") == summarized["summary"]
        memory = json.loads(await read_text(client, f"memory://memories/{turns[0]['id']}"))
        assert memory["content"] == turns[0]["content"] and memory["thread_id"] == thread
        with pytest.raises(MCPError, match="no memory"):
            await client.read_resource("memory://memories/turn_does_not_exist")

        prompt = await client.get_prompt("recall", {"query": "when do we fly to Maui?", "thread_id": thread})
        recalled = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "March 14" in recalled and f'<memory id="{turns[0]["id"]}"' in recalled

        message = await call_error(client, "add_turn", thread_id="bad id!", role="user", content="x")
        assert "thread_id" in message and "Traceback" not in message
        assert "limit" in await call_error(client, "search_memory", query="x", limit=0)

        forgotten = await call(client, "forget", thread_id=thread)
        assert forgotten["scope"] == "thread"
        assert forgotten["long_term"]["memories"] == 5  # 4 turns + 1 summary
        assert (await call(client, "search_memory", query="Maui", thread_id=thread))["results"] == []
        assert (await call(client, "get_working_memory", thread_id=thread))["messages"] == []


@pytest.mark.parametrize("transport", TRANSPORTS)  # stdio: relayed to one resident server (mcp_memory/relay/)
async def test_sequential_clients_share_one_service(transport: str, request: pytest.FixtureRequest) -> None:
    server: McpMemoryServer = request.getfixturevalue(f"{transport}_server")
    thread = new_thread()
    async with server.connect() as first:
        turn = await call(
            first, "add_turn", thread_id=thread, role="user", content="said to the first client"
        )
    async with server.connect() as second:
        working = await call(second, "get_working_memory", thread_id=thread)
        assert [m["id"] for m in working["messages"]] == [turn["id"]]
        await call(second, "add_turn", thread_id=thread, role="user", content="written by the second client")
    async with server.connect() as third:
        assert (await call(third, "get_working_memory", thread_id=thread))["message_count"] == 2
    # The data file and the embedder were opened once for the process, not once per connection.
    assert server.stderr().count("memory service ready") == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_listener_hears_another_clients_turn(transport: str, request: pytest.FixtureRequest) -> None:
    server: McpMemoryServer = request.getfixturevalue(f"{transport}_server")
    thread = new_thread()
    uri = f"memory://threads/{thread}"
    async with (
        server.connect() as listener,
        server.connect() as writer,
        listener.listen(resource_subscriptions=[uri]) as subscription,
    ):
        assert subscription.honored.resource_subscriptions == [uri]
        await call(writer, "add_turn", thread_id=thread, role="user", content="news for the listener")
        with anyio.fail_after(EVENT_SECONDS):
            event = await subscription.__anext__()
        assert isinstance(event, ResourceUpdated) and event.uri == uri


async def test_stdio_client_hears_its_own_turns(stdio_server: StdioServer) -> None:
    thread = new_thread()
    uri = f"memory://threads/{thread}"
    async with stdio_server.connect() as client, client.listen(resource_subscriptions=[uri]) as subscription:
        await call(client, "add_turn", thread_id=thread, role="user", content="changed over stdio")
        with anyio.fail_after(EVENT_SECONDS):
            event = await subscription.__anext__()
        assert isinstance(event, ResourceUpdated) and event.uri == uri
