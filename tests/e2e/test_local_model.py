"""The real default embedder (local all-MiniLM-L6-v2 ONNX) inside the real process: search by meaning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.mcp_client import call
from tests.services.server_process import StdioServer, server_env

pytestmark = pytest.mark.anyio


@pytest.fixture
def default_model_server(tmp_path: Path) -> Iterator[StdioServer]:
    env = server_env(tmp_path / "data")
    del env["MCP_MEMORY_EMBEDDING__PROVIDER"]  # the default, as a user gets it
    server = StdioServer(tmp_path, env)
    try:
        yield server
    finally:
        server.close()


async def test_vector_search_finds_a_turn_by_meaning(default_model_server: StdioServer) -> None:
    async with default_model_server.connect() as client:
        said: dict[str, str] = {}
        for text in (
            "We fly out of Seattle on March 14.",
            "I'm vegetarian and I love Thai curries.",
            "My passport expires next year.",
            "The quarterly meeting moved to Tuesday afternoon.",
        ):
            added = await call(client, "add_turn", thread_id="meaning", role="user", content=text)
            said[text] = added["id"]
        query = "what food does the user eat?"
        found = await call(client, "search_memory", query=query, mode="vector", limit=4)
    assert found["results"][0]["id"] == said["I'm vegetarian and I love Thai curries."]
    assert "embeddings: all-MiniLM-L6-v2" in default_model_server.stderr()
