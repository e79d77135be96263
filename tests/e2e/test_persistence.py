"""What one `mcp-memory` process writes, the next one on the same data dir reads, whatever the transport."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.services.mcp_client import call
from tests.services.server_process import ServerStarter, StdioServer, server_env

pytestmark = pytest.mark.anyio


async def test_memories_survive_a_restart(start_server: ServerStarter, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    thread = "trip-planning"

    first = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    async with first.connect() as client:
        turns = [
            (await call(client, "add_turn", thread_id=thread, role="user", content=text))
            for text in ("We fly out of Seattle on March 14.", "Book the snorkel tour.", "Renew my passport.")
        ]
        summary = (await call(client, "summarize_thread", thread_id=thread, keep_recent=1))["summary"]
    exit_code = await anyio.to_thread.run_sync(first.stop)
    assert exit_code == 0, f"SIGTERM should be a clean shutdown; stderr:\n{first.stderr()}"
    assert "Traceback" not in first.stderr()

    second = await anyio.to_thread.run_sync(start_server, "sse", data_dir)
    async with second.connect() as client:
        working = await call(client, "get_working_memory", thread_id=thread)
        assert working["summary"] == summary and [m["id"] for m in working["messages"]] == [turns[2]["id"]]
        found = await call(client, "search_memory", query="Seattle", mode="text", types=["turn"])
        # The turn that says it ranks first; turns right after it follow (their indexed context says it).
        assert found["results"][0]["id"] == turns[0]["id"]
        assert {hit["id"] for hit in found["results"]} <= {t["id"] for t in turns}
        exact = await call(client, "search_memory", query='"Seattle"', mode="text", types=["turn"])
        assert [hit["id"] for hit in exact["results"]] == [turns[0]["id"]]
        await call(client, "add_turn", thread_id=thread, role="assistant", content="Passport renewal noted.")
    assert await anyio.to_thread.run_sync(second.stop) == 0, second.stderr()

    stdio = StdioServer(tmp_path / "stdio", server_env(data_dir))
    try:
        async with stdio.connect() as client:
            listed = json.loads((await client.read_resource("memory://threads")).contents[0].text)  # type: ignore[union-attr]
            assert [(t["thread_id"], t["message_count"]) for t in listed] == [(thread, 2)]
    finally:
        stdio.close()
