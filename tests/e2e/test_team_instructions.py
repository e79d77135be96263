"""A team member's client is told what a local client is told: when its hooks capture the conversation
(the server entry `mcp-memory install --server URL` writes sets MCP_MEMORY_HOOKS__CAPTURE=true), the
model must not call add_turn, or every turn is stored twice (the hooks' copy and the model's).

All real: the memory server is `mcp-memory serve --transport http` with a static token, signed in to
with `mcp-memory login URL --token-stdin`; the client's entry `mcp-memory serve --server URL` is launched
by the SDK's stdio client, as a coding agent launches it, in both protocol eras (the 2025 initialize
handshake, the 2026 server/discover).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_memory.mcp.app import CAPTURED_INSTRUCTIONS, INSTRUCTIONS
from tests.e2e.test_login import Machine
from tests.security.bearer import bearer_client, credential, start_with_tokens
from tests.services.server_process import (
    READ_TIMEOUT_SECONDS,
    NetworkServer,
    ServerStarter,
    mcp_memory_command,
)

pytestmark = pytest.mark.anyio

MODES = ("legacy", "auto")  # the initialize handshake; server/discover (2026), what a client tries first


@pytest.fixture
def signed_in(start_server: ServerStarter, tmp_path: Path) -> tuple[NetworkServer, Machine, str]:
    """The memory server (its own hooks.capture left at the default), and a machine signed in to it."""
    dana = credential("dana")
    server = start_with_tokens(start_server, tmp_path, [dana])
    machine = Machine(tmp_path / "laptop")
    out = machine.run("login", server.base_url, "--token-stdin", stdin=dana.token)
    assert out.returncode == 0, out.stderr
    return server, machine, dana.token


async def bridged_instructions(
    server: NetworkServer, machine: Machine, capture: str | None, mode: str, errlog: Path
) -> str | None:
    """The instructions a client reads through `mcp-memory serve --server URL` launched with this
    MCP_MEMORY_HOOKS__CAPTURE (None: not set)."""
    env = machine.env() | ({"MCP_MEMORY_HOOKS__CAPTURE": capture} if capture is not None else {})
    params = StdioServerParameters(
        command=mcp_memory_command(), args=["serve", "--server", server.base_url], env=env, cwd=machine.root
    )
    with errlog.open("a") as errors:
        async with Client(
            stdio_client(params, errlog=errors), read_timeout_seconds=READ_TIMEOUT_SECONDS, mode=mode
        ) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "add_turn" in tools  # the session works; only what the model is told differs
            return client.instructions


@pytest.mark.parametrize("mode", MODES)
async def test_a_bridged_client_whose_hooks_capture_is_told_not_to_call_add_turn(
    signed_in: tuple[NetworkServer, Machine, str], tmp_path: Path, mode: str
) -> None:
    server, machine, token = signed_in
    async with bearer_client(server, token) as direct:  # no header: the server's own setting
        assert direct.instructions == INSTRUCTIONS

    errlog = tmp_path / "bridge.stderr"
    instructions = await bridged_instructions(server, machine, "true", mode, errlog)
    assert instructions == CAPTURED_INSTRUCTIONS, errlog.read_text()
    assert "do NOT call add_turn" in instructions
    assert "Traceback" not in errlog.read_text()


@pytest.mark.parametrize("capture", ["false", None])
@pytest.mark.parametrize("mode", MODES)
async def test_a_bridged_client_without_capturing_hooks_gets_the_default_instructions(
    signed_in: tuple[NetworkServer, Machine, str], tmp_path: Path, mode: str, capture: str | None
) -> None:
    server, machine, _ = signed_in
    errlog = tmp_path / "bridge.stderr"
    instructions = await bridged_instructions(server, machine, capture, mode, errlog)
    assert instructions == INSTRUCTIONS, errlog.read_text()
    assert "Call add_turn for every user message" in instructions


async def test_the_header_picks_the_instructions_whatever_the_servers_own_setting(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    """A server started with hooks.capture on still tells a bridge whose hooks do not capture to call
    add_turn (the header says false): the session's word, not the server's, as on the resident server."""
    erin = credential("erin")
    server = start_with_tokens(start_server, tmp_path, [erin], MCP_MEMORY_HOOKS__CAPTURE="true")
    machine = Machine(tmp_path / "laptop")
    out = machine.run("login", server.base_url, "--token-stdin", stdin=erin.token)
    assert out.returncode == 0, out.stderr
    async with bearer_client(server, erin.token) as direct:
        assert direct.instructions == CAPTURED_INSTRUCTIONS
    errlog = tmp_path / "bridge.stderr"
    for mode in MODES:
        assert await bridged_instructions(server, machine, "false", mode, errlog) == INSTRUCTIONS, (
            errlog.read_text()
        )
