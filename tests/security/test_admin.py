"""No token, no admin: forget_user needs an explicit admin principal (an admin token, or the
`mcp-memory forget-user` command run where the backends are), never the tokenless caller of stdio,
of a loopback address or of an endpoint behind an authenticating proxy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.search.query import SearchQuery
from mcp_memory.security.static_tokens import new_token
from mcp_memory.service.memory_service import MemoryService
from tests.security.bearer import (
    Credential,
    bearer_client,
    challenge,
    credential,
    post_tool_call,
    start_with_tokens,
)
from tests.services.mcp_client import call
from tests.services.server_process import E2E_USER, ServerStarter, mcp_memory_command, server_env

pytestmark = pytest.mark.anyio


async def test_the_tokenless_caller_of_stdio_is_not_an_admin(fast_settings: Settings) -> None:
    server = build_server(fast_settings)
    async with Client(server, raise_exceptions=False) as client:
        service: MemoryService = server.host.service
        await service.add_turn("leaver", "t", "user", "the leaver's words")
        for arguments in ({"user_id": "leaver"}, {"user_id": "leaver", "dry_run": True}):
            refused = await client.call_tool("forget_user", arguments)
            assert refused.is_error
            assert "admin principal" in refused.content[0].text  # type: ignore[union-attr]
        # The same caller still reads and writes its own memories.
        await call(client, "add_turn", thread_id="t", role="user", content="my own words")
        assert (await call(client, "search_memory", query="words", mode="text"))["results"]
        assert (
            len(
                (
                    await service.search(
                        SearchQuery.of("leaver", "words", mode="text", settings=service.settings)
                    )
                ).results
            )
            == 1
        ), "nothing deleted"


async def test_a_tokenless_network_endpoint_grants_no_admin(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    # Loopback without tokens: what an authenticating proxy in front of the server would forward to.
    server = start_server("http", tmp_path / "data")
    async with bearer_client(server, None) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="kept words")
        refused = await client.call_tool("forget_user", {"user_id": E2E_USER})
        assert refused.is_error and "admin" in refused.content[0].text  # type: ignore[union-attr]
        assert (await call(client, "search_memory", query="kept", mode="text"))["results"]


async def test_an_admin_token_forgets_another_user(start_server: ServerStarter, tmp_path: Path) -> None:
    leaver, stayer, ops = credential("leaver"), credential("stayer"), credential("ops", "admin")
    server = start_with_tokens(start_server, tmp_path, [leaver, stayer, ops])
    for who in (leaver, stayer):
        async with bearer_client(server, who.token) as client:
            await call(client, "add_turn", thread_id="t", role="user", content=f"the {who.user_id}'s words")
        # The guard in front refuses before the tool runs: 403 and a step-up challenge naming admin.
        refused = await post_tool_call(server.url, who.token, "forget_user", {"user_id": "leaver"})
        assert refused.status_code == 403
        assert challenge(refused)["error"] == "insufficient_scope"
        assert challenge(refused)["scope"] == "read write admin"
    async with bearer_client(server, ops.token) as client:
        dry = await call(client, "forget_user", user_id="leaver", dry_run=True)
        assert dry["dry_run"] is True and dry["long_term"]["memories"] == 1
        receipt = await call(client, "forget_user", user_id="leaver")
        assert receipt["long_term"]["memories"] == 1 and receipt["working_memory"]["threads"] == 1
    async with bearer_client(server, leaver.token) as client:
        assert (await call(client, "search_memory", query="words", mode="text"))["results"] == []
    async with bearer_client(server, stayer.token) as client:
        assert len((await call(client, "search_memory", query="words", mode="text"))["results"]) == 1


async def test_a_broader_scope_covers_a_narrower_one(start_server: ServerStarter, tmp_path: Path) -> None:
    # write covers read; a token with no scope of ours gets nothing, not even the handshake.
    writer, nothing = credential("ann", "write"), Credential("ann", new_token(), ())
    server = start_with_tokens(start_server, tmp_path, [writer, nothing])
    async with bearer_client(server, writer.token) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="written and read back")
        assert (await call(client, "search_memory", query="written", mode="text"))["results"]
        assert (await call(client, "get_working_memory", thread_id="t"))["messages"]
    for tool, arguments in (("search_memory", {"query": "written"}), ("add_turn", {"thread_id": "t"})):
        refused = await post_tool_call(server.url, nothing.token, tool, arguments)
        assert refused.status_code == 403, tool
        assert challenge(refused)["error"] == "insufficient_scope"


def test_the_forget_user_command_deletes_one_user(fast_settings: Settings, tmp_path: Path) -> None:
    env = server_env(fast_settings.data_dir, {"MCP_MEMORY_USER_ID": "leaver"})
    added = subprocess.run(
        [mcp_memory_command(), "import"],
        input=_one_turn_export("leaver"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert added.returncode == 0, added.stderr[-2000:]
    for dry_run, expected in ((True, 1), (False, 1), (True, 0)):
        args = [mcp_memory_command(), "forget-user", "leaver", *(["--dry-run"] if dry_run else [])]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        receipt = json.loads(done.stdout)
        assert receipt["dry_run"] is dry_run and receipt["long_term"]["memories"] == expected


def _one_turn_export(user_id: str) -> str:
    lines = [
        {
            "kind": "header",
            "format": "mcp-memory-export",
            "version": 1,
            "user_id": user_id,
            "exported_at": "2026-01-01T00:00:00Z",
            "counts": {"memory": 1},
        },
        {
            "kind": "memory",
            "id": "turn_0123456789abcdef0123456789abcdef",
            "type": "turn",
            "thread_id": "t",
            "role": "user",
            "content": "the leaver's words",
            "created_at": "2026-01-01T00:00:00Z",
        },
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"
