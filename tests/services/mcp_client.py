"""Fixtures that connect a real MCP client to the server in process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server


@pytest.fixture
def fast_settings(settings: Settings) -> Settings:
    """The embedded default with the shipped hashing embedder: the MCP surface without model load time."""
    return settings.model_copy(
        update={"embedding": settings.embedding.model_copy(update={"provider": "hash"})}
    )


@pytest.fixture
async def client(fast_settings: Settings) -> AsyncIterator[Client]:
    async with Client(build_server(fast_settings), raise_exceptions=False) as connected:
        yield connected


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool and return its structured result; fail the test with the tool's message on error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def stored(client: Client, memory_id: str) -> dict[str, Any]:
    """A memory as stored, read back whole through memory://memories/{id} (add_turn does not echo it)."""
    [content] = (await client.read_resource(f"memory://memories/{memory_id}")).contents
    found: dict[str, Any] = json.loads(content.text)  # type: ignore[union-attr]
    return found


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return the message the model sees."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed but returned {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]
