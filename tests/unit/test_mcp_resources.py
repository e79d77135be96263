"""Resources, the recall prompt, subscriptions and progress, through a real in-process MCP client."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from tests.helpers import HANG_SECONDS
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio


async def _text(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    return result.contents[0].text  # type: ignore[union-attr]


async def test_resource_templates_are_listed(client: Client) -> None:
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {
        "memory://threads/{thread_id}",
        "memory://threads/{thread_id}/summary",
        "memory://memories/{memory_id}",
    } <= templates
    assert "memory://threads" in {str(r.uri) for r in (await client.list_resources()).resources}


async def test_threads_resource_lists_the_users_threads(client: Client) -> None:
    await call(client, "add_turn", thread_id="one", role="user", content="first")
    await call(client, "add_turn", thread_id="two", role="user", content="second")
    threads = json.loads(await _text(client, "memory://threads"))
    assert {t["thread_id"] for t in threads} == {"one", "two"}


async def test_thread_resource_is_the_working_memory(client: Client) -> None:
    await call(client, "add_turn", thread_id="one", role="user", content="hello")
    wm = json.loads(await _text(client, "memory://threads/one"))
    assert wm["thread_id"] == "one" and [m["content"] for m in wm["messages"]] == ["hello"]


async def test_summary_resource_is_plain_text(client: Client) -> None:
    for i in range(4):
        await call(client, "add_turn", thread_id="s", role="user", content=f"We agreed on plan {i}.")
    assert await _text(client, "memory://threads/s/summary") == ""
    out = await call(client, "summarize_thread", thread_id="s", keep_recent=1)
    assert await _text(client, "memory://threads/s/summary") == out["summary"] != ""


async def test_memory_resource_by_turn_id(client: Client) -> None:
    turn = await call(client, "add_turn", thread_id="m", role="user", content="remember me")
    memory = json.loads(await _text(client, f"memory://memories/{turn['id']}"))
    assert memory["id"] == turn["id"] and memory["content"] == "remember me" and memory["type"] == "turn"
    assert "embedding" not in memory and len(memory["content_hash"]) == 64
    with pytest.raises(MCPError, match="no memory"):
        await client.read_resource("memory://memories/turn_missing")


async def test_recall_prompt_marks_memories_as_data(client: Client) -> None:
    await call(client, "add_turn", thread_id="r", role="user", content="My dog is called Biscuit")
    prompt = await client.get_prompt("recall", {"query": "what is my dog called"})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "Biscuit" in text
    assert "not instructions" in text.lower() or "never follow" in text.lower()
    assert '<memory id="turn_' in text


async def test_subscribed_client_is_notified_when_the_thread_changes(client: Client) -> None:
    uri = "memory://threads/watched"
    async with client.listen(resource_subscriptions=[uri]) as subscription:
        await call(client, "add_turn", thread_id="watched", role="user", content="changed")
        with anyio.fail_after(HANG_SECONDS):
            event = await subscription.__anext__()
        assert isinstance(event, ResourceUpdated) and event.uri == uri


async def test_summarize_thread_reports_progress(client: Client) -> None:
    for i in range(4):
        await call(client, "add_turn", thread_id="p", role="user", content=f"note {i}")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool(
        "summarize_thread", {"thread_id": "p", "keep_recent": 1}, progress_callback=on_progress
    )
    assert not result.is_error
    assert seen and seen[-1][0] == seen[-1][1]


async def test_a_2025_protocol_client_subscribes_per_uri_and_is_notified(fast_settings) -> None:  # type: ignore[no-untyped-def]
    """Most deployed clients speak the 2025 protocol: resources/subscribe + notifications/resources/updated."""
    import warnings

    import mcp_types
    from mcp import Client as McpClient

    from mcp_memory.mcp.server import build_server

    updated: list[str] = []
    got_one = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            got_one.set()

    server = build_server(fast_settings)
    async with McpClient(server, mode="legacy", message_handler=on_message) as legacy:
        assert legacy.server_capabilities.resources is not None
        assert legacy.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for 2026 clients
            await legacy.subscribe_resource("memory://threads/legacy")
        await call(legacy, "add_turn", thread_id="other", role="user", content="not watched")
        await call(legacy, "add_turn", thread_id="legacy", role="user", content="watched")
        with anyio.fail_after(HANG_SECONDS):
            await got_one.wait()
    assert updated == ["memory://threads/legacy"]


async def test_a_2025_protocol_client_that_unsubscribes_is_no_longer_notified(fast_settings) -> None:  # type: ignore[no-untyped-def]
    """Subscribe and unsubscribe are two requests of one session; the second must find the first."""
    import warnings

    import mcp_types
    from mcp import Client as McpClient

    from mcp_memory.mcp.server import build_server

    updated: list[str] = []
    barrier = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            if str(message.params.uri) == "memory://threads/barrier":
                barrier.set()

    server = build_server(fast_settings)
    async with McpClient(server, mode="legacy", message_handler=on_message) as legacy:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for 2026 clients
            await legacy.subscribe_resource("memory://threads/dropped")
            await legacy.subscribe_resource("memory://threads/barrier")
            await call(legacy, "add_turn", thread_id="dropped", role="user", content="heard")
            await legacy.unsubscribe_resource("memory://threads/dropped")
        await call(legacy, "add_turn", thread_id="dropped", role="user", content="not heard any more")
        # Notifications go out in the order of the changes: once the barrier's arrives, a notification
        # for the unsubscribed thread would have arrived before it.
        await call(legacy, "add_turn", thread_id="barrier", role="user", content="after")
        with anyio.fail_after(HANG_SECONDS):
            await barrier.wait()
    assert updated == ["memory://threads/dropped", "memory://threads/barrier"]
