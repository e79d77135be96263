"""completion/complete on the real server with bearer tokens: it offers each token's own ids only, and
needs the read scope like resources and prompts (a write-only token is refused, not answered)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_types import ResourceTemplateReference

from tests.security.bearer import bearer_client, credential, start_with_tokens
from tests.services.mcp_client import call
from tests.services.server_process import ServerStarter

pytestmark = pytest.mark.anyio

THREAD = ResourceTemplateReference(uri="memory://threads/{thread_id}")


async def test_completion_needs_read_and_offers_only_the_tokens_own_threads(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    ann, bob, ann_writer = credential("ann"), credential("bob"), credential("ann", "write")
    server = start_with_tokens(start_server, tmp_path, [ann, bob, ann_writer])
    async with bearer_client(server, ann.token) as client:
        await call(client, "add_turn", thread_id="ann-plans", role="user", content="ann's plans")
    async with bearer_client(server, bob.token) as client:
        await call(client, "add_turn", thread_id="bob-notes", role="user", content="bob's notes")
        offered = (await client.complete(THREAD, {"name": "thread_id", "value": ""})).completion
        assert offered.values == ["bob-notes"] and offered.total == 1
    async with bearer_client(server, ann_writer.token) as client:  # write covers read
        offered = (await client.complete(THREAD, {"name": "thread_id", "value": "ann"})).completion
        assert offered.values == ["ann-plans"]
