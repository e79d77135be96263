"""claude_desktop_config.example.json works when copied: the command it names serves the tools over stdio."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.services.server_process import StdioServer

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[2] / "claude_desktop_config.example.json"
CONTRACT_TOOLS = {"add_turn", "search_memory", "get_working_memory", "summarize_thread", "forget"}


def test_example_names_an_installed_command_and_only_mcp_memory_settings() -> None:
    entry = json.loads(EXAMPLE.read_text())["mcpServers"]["memory"]
    assert shutil.which(entry["command"], path=str(Path(sys.executable).parent)) is not None
    assert all(name.startswith("MCP_MEMORY_") for name in entry.get("env", {}))
    assert all(isinstance(value, str) for value in entry.get("env", {}).values())  # Claude Desktop wants strings


async def test_example_server_lists_the_tools(tmp_path: Path) -> None:
    entry = json.loads(EXAMPLE.read_text())["mcpServers"]["memory"]
    # "mcp-memory" resolved from this venv, as it would be from PATH after `pip install mcp-memory`.
    command = shutil.which(entry["command"], path=str(Path(sys.executable).parent))
    assert command is not None
    # The example's env as written, plus a data dir and home of the test's own (not the developer's memories).
    env = entry.get("env", {}) | {"MCP_MEMORY_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    server = StdioServer(tmp_path, env, command=command, args=entry["args"])
    try:
        async with server.connect() as client:
            assert CONTRACT_TOOLS <= {tool.name for tool in (await client.list_tools()).tools}
            turn = await client.call_tool("add_turn", {"thread_id": "hello", "role": "user", "content": "hi"})
            assert not turn.is_error, turn.content
    finally:
        server.close()
    assert (tmp_path / "data" / "memory.db").is_file()
