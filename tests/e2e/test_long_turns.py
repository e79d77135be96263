"""A pasted file of a million characters through the real `mcp-memory serve` process, over stdio and
streamable HTTP: stored whole, read back whole, and one character more refused by name.

Not over SSE: the SDK's SSE client refuses an event over 1 MiB (httpx2's SSE parser), and
get_working_memory's result carries the turn whole; the server accepts the request (its body limit
is derived from max_content_chars), the client cannot read the answer."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.services.mcp_client import call, call_error
from tests.services.server_process import McpMemoryServer

pytestmark = pytest.mark.anyio

LIMIT = 1_000_000  # max_content_chars' default
WIDE_WINDOW = 2_000_000  # tokens: the whole turn fits in working memory, verbatim


def pasted_log(chars: int) -> str:
    """Log lines with accents, CJK and an emoji (several UTF-8 bytes each), exactly `chars` long."""
    lines, size, i = [], 0, 0
    while size < chars:
        line = (
            f"2026-11-{i % 28 + 1:02d} worker-{i % 13} job {i * 31 % 99991} café 東京 ✓ 🚀 took {i % 997} ms"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)[:chars]


@pytest.fixture(params=["stdio", "http"])
def long_turn_server(request: pytest.FixtureRequest) -> McpMemoryServer:
    server: McpMemoryServer = request.getfixturevalue(f"{request.param}_server")
    return server


async def test_a_million_character_turn_is_stored_and_read_back_whole(
    long_turn_server: McpMemoryServer,
) -> None:
    mcp_server = long_turn_server
    thread = f"e2e-long-{uuid.uuid4().hex[:12]}"
    text = pasted_log(LIMIT)
    assert len(text) == LIMIT
    async with mcp_server.connect() as client:
        added = await call(
            client, "add_turn", thread_id=thread, role="user", content=text, context_window=WIDE_WINDOW
        )
        assert added["token_count"] > 100_000 and added["thread"]["messages"] == 1
        assert not added["summarized"]

        result = await client.read_resource(f"memory://memories/{added['id']}")
        stored = json.loads(result.contents[0].text)  # type: ignore[union-attr]
        assert stored["content"] == text

        working = await call(client, "get_working_memory", thread_id=thread)
        assert [m["content"] for m in working["messages"]] == [text]
        assert working["token_count"] == added["token_count"] == added["thread"]["tokens"]

        refused = await call_error(
            client, "add_turn", thread_id=thread, role="user", content=text + "x", context_window=WIDE_WINDOW
        )
        assert "1,000,001 characters" in refused and "the limit is 1,000,000" in refused
        working = await call(client, "get_working_memory", thread_id=thread)
        assert len(working["messages"]) == 1, "the refused turn was not stored"
