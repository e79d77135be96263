"""Log levels for 2025-protocol clients, against the real `mcp-memory` process over stdio, SSE and
streamable HTTP: the client sets a level, and only the messages at or above it arrive (mcp/middleware/client_log.py;
the in-process tests in tests/unit/test_client_log.py cover every level and kind of message)."""

from __future__ import annotations

import uuid
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.services.mcp_client import call
from tests.services.server_process import McpMemoryServer

# Client logging is deprecated in the 2026 protocol, and the SDK says so on each use; these tests use it.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


async def test_a_2025_client_sets_a_level_and_receives_only_messages_at_or_above_it(
    mcp_server: McpMemoryServer,
) -> None:
    thread = f"e2e-{uuid.uuid4().hex[:12]}"
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    async with mcp_server.connect(mode="legacy", logging_callback=on_log) as client:
        assert client.server_capabilities.logging is not None
        await client.set_logging_level("info")
        for content in ("We fly to Lisbon in May", "The hotel is near the river", "Book the tram tour"):
            await call(client, "add_turn", thread_id=thread, role="user", content=content)  # debug only
        await call(client, "summarize_thread", thread_id=thread, keep_recent=1)  # debug + info
        assert [(m.level, m.data["event"], m.data["thread_id"]) for m in received] == [
            ("info", "summarized", thread)
        ]

        await client.set_logging_level("debug")
        await call(client, "get_working_memory", thread_id=thread)
        assert [(m.level, m.data["event"], m.data["tool"]) for m in received[1:]] == [
            ("debug", "tool_call", "get_working_memory")
        ]

        level: Any = "loud"  # not a LoggingLevel: model_construct skips the validation
        bad = types.SetLevelRequest(params=types.SetLevelRequestParams.model_construct(level=level))
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(bad, types.EmptyResult)
        assert refused.value.error.code == types.INVALID_PARAMS
        assert "unknown log level 'loud'" in refused.value.error.message
    assert not any("Lisbon" in str(m.data) or "hotel" in str(m.data) for m in received)
