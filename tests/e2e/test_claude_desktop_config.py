"""claude_desktop_config.example.json works when copied: the command it names serves the tools over stdio."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services.server_process import StdioServer

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[2] / "claude_desktop_config.example.json"
CONTRACT_TOOLS = {"add_turn", "search_memory", "get_working_memory", "summarize_thread", "forget"}


def example_entry() -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(EXAMPLE.read_text())["mcpServers"]["memory"]
    return entry


def resolve(command: str) -> str:
    """The command as found on PATH after `pip install mcp-memory`: here, in this venv's bin."""
    bin_dir = Path(sys.executable).parent
    found = shutil.which(command, path=str(bin_dir))
    assert found is not None, f"{command!r} from {EXAMPLE.name} is not installed in {bin_dir}"
    return found


@pytest.fixture
def example_server(tmp_path: Path) -> Iterator[StdioServer]:
    entry = example_entry()
    # The example's env as written, plus a data dir and home of the test's own (not the developer's memories).
    env = entry.get("env", {}) | {"MCP_MEMORY_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    server = StdioServer(tmp_path, env, command=resolve(entry["command"]), args=entry["args"])
    try:
        yield server
    finally:
        server.close()


def test_example_env_holds_only_mcp_memory_settings_as_strings() -> None:
    env = example_entry().get("env", {})
    assert all(name.startswith("MCP_MEMORY_") for name in env)
    assert all(isinstance(value, str) for value in env.values())  # Claude Desktop passes strings only


async def test_example_server_lists_the_tools(example_server: StdioServer, tmp_path: Path) -> None:
    async with example_server.connect() as client:
        assert {tool.name for tool in (await client.list_tools()).tools} >= CONTRACT_TOOLS
        turn = await client.call_tool("add_turn", {"thread_id": "hello", "role": "user", "content": "hi"})
        assert not turn.is_error, turn.content
    assert (tmp_path / "data" / "memory.db").is_file()
