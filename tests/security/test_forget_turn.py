"""Forgetting one turn leaves its words nowhere: not in its row, nor in the full-text context of the turns
around it (search/context.py), nor in the file's free pages, its write-ahead log or the search-index
snapshots beside it; the turns around it stay and are still found."""

from __future__ import annotations

import uuid

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.search.terms import terms
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
from tests.security.test_forget_everything import _sqlite_findings
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio


async def test_forgetting_a_turn_leaves_its_words_in_no_context(fast_settings: Settings) -> None:
    user = f"ann{uuid.uuid4().hex[:8]}"
    secret = f"quokka{uuid.uuid4().hex[:8]}"
    settings = fast_settings.model_copy(update={"user_id": user})
    server = build_server(settings)
    async with Client(server, raise_exceptions=False) as client:
        service: MemoryService = server.host.service
        long_term = service.stores.long_term
        assert isinstance(long_term, SqliteLongTermStore)
        ids = []
        for text in (
            "We land on the 3rd",
            f"My door code is {secret}",
            "Then a ferry to Lanai",
            "Sounds good",
        ):
            ids.append((await call(client, "add_turn", thread_id="t", role="user", content=text))["id"])
        found = await call(client, "search_memory", query=secret, mode="text")
        assert len(found["results"]) == 4  # the turn itself, and the three whose context holds it
        await long_term.indexes.snapshot(user)

        needles = [secret, *terms(secret)]
        await long_term.indexes.saved()
        assert _sqlite_findings(settings.sqlite_path, needles), "the scan must see the words before"

        await call(client, "forget", memory_id=ids[1])
        assert (await call(client, "search_memory", query=secret, mode="text"))["results"] == []
        await call(client, "search_memory", query="ferry", mode="text")  # the index catches up, then
        await long_term.indexes.snapshot(user)  # is saved again
        await long_term.indexes.saved()
        assert _sqlite_findings(settings.sqlite_path, needles) == []
        kept = await call(client, "search_memory", query="land ferry good", mode="text")
        assert {hit["id"] for hit in kept["results"]} == {ids[0], ids[2], ids[3]}
