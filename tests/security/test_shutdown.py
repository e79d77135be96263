"""Graceful shutdown: SIGTERM while a write is in flight lets it finish and answer; the turn is stored."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import anyio
import pytest

from tests.fakes.openai_stub import OpenAIStub
from tests.services.mcp_client import call
from tests.services.server_process import STOP_SECONDS, ServerStarter

pytestmark = pytest.mark.anyio


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


async def test_sigterm_finishes_the_in_flight_write(
    start_server: ServerStarter, tmp_path: Path, openai_stub: OpenAIStub
) -> None:
    llm = {
        "MCP_MEMORY_LLM__PROVIDER": "openai",
        "MCP_MEMORY_LLM__BASE_URL": openai_stub.base_url,
        "MCP_MEMORY_LLM__API_KEY": "test-key",
        "MCP_MEMORY_LLM__TIMEOUT_SECONDS": "60",
        "MCP_MEMORY_LLM__MAX_RETRIES": "0",
    }
    server = start_server("http", tmp_path / "data", llm)
    outcome: dict[str, object] = {}
    async with server.connect() as client:
        for n in range(3):
            await call(
                client, "add_turn", thread_id="t", role="user", content=f"short {n}", context_window=300
            )
        openai_stub.set_mode("timeout")  # the summary this turn triggers waits on the LLM
        long = " ".join(f"word{i}" for i in range(300))

        async def write() -> None:
            outcome["result"] = await call(
                client, "add_turn", thread_id="t", role="user", content=long, context_window=300
            )

        async with anyio.create_task_group() as group:
            group.start_soon(write)
            with anyio.fail_after(30):
                while not openai_stub.chat_requests():  # noqa: ASYNC110  polling another thread's state
                    await anyio.sleep(0.02)
            assert server._process is not None
            server._process.send_signal(signal.SIGTERM)  # mid-write
            with anyio.fail_after(STOP_SECONDS):
                while _accepts(server.port):  # noqa: ASYNC110  the listener closes first: shutdown began
                    await anyio.sleep(0.02)
            assert server._process.poll() is None, "the server quit with a write in flight"
            openai_stub.release_hung()
            openai_stub.set_mode("ok")
    result = outcome["result"]
    assert isinstance(result, dict) and result["token_count"] > 0, result  # the write answered
    assert server._process is not None
    exit_code = server._process.wait(timeout=STOP_SECONDS)
    assert exit_code == 0, server.stderr()

    again = start_server("http", tmp_path / "data", llm)
    async with again.connect() as client:
        found = await call(client, "search_memory", query="word10", mode="text")
        # It first; then, found by their context, the short turns before it (search/context.py: a
        # neighbour lends its first 500 characters, where word10 is).
        assert found["results"][0]["id"] == result["id"]
        stored = await client.read_resource(f"memory://memories/{result['id']}")
        assert json.loads(stored.contents[0].text)["content"] == long  # type: ignore[union-attr]
        assert {r["content"] for r in found["results"][1:]} == {"short 1", "short 2"}
