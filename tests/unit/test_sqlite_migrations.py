"""A data file written by an earlier mcp-memory opens, gains the newer schema, and keeps its memories."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mcp_memory.models import SearchQuery
from mcp_memory.storage import sqlite_db
from tests.contract.conftest_long_term import memory, open_sqlite

pytestmark = pytest.mark.anyio


async def test_a_schema_2_file_is_migrated_and_still_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.db"
    with monkeypatch.context() as before:
        before.setattr(sqlite_db, "MIGRATIONS", sqlite_db.MIGRATIONS[:2])  # the release before schema 3
        async with open_sqlite(path) as store:
            await store.put(
                [memory("u", "bike", "I ride my bicycle to work"), memory("u", "tea", "green tea")]
            )

    async with open_sqlite(path) as store:
        hits = await store.search(SearchQuery(user_id="u", text="bicycle", mode="text"), None)

    assert [h.memory.id for h in hits] == ["bike"]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(sqlite_db.MIGRATIONS) == 4
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 2
        # Schema 3 added memories_active, schema 4 dropped it (unread since text search moved to memory).
        index = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'memories_active'"
        )
        assert index.fetchone() is None
    finally:
        conn.close()
