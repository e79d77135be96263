"""A data file written by an earlier mcp-memory opens, gains the newer schema, and keeps its memories."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from mcp_memory.models import Memory, Scope
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.sqlite import db as sqlite_db
from mcp_memory.storage.sqlite import migrations
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore, _row
from mcp_memory.storage.sqlite.revisions import SqliteRevisionStore
from tests.contract.conftest_long_term import memory, open_sqlite

pytestmark = pytest.mark.anyio


def old_file(
    path: Path, schema: int, memories: list[Memory], revisions: Sequence[tuple[str, str, str | None]] = ()
) -> None:
    """A data file as the release with `schema` migrations wrote it, holding these memories and these
    revisions (user, content, source text) of the user's first memory."""
    with pytest.MonkeyPatch.context() as before:
        before.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:schema])
        conn = sqlite_db._connect(path)
    try:
        conn.executemany(
            "INSERT INTO memories (id, user_id, thread_id, role, type, content, index_context, embedding,"
            " metadata, created_at, updated_at, token_count, content_hash, superseded_by,"
            " supersede_reason, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [_row(m)[:16] for m in memories],  # the columns before schema 8 (spaces: author)
        )
        conn.executemany(
            "INSERT INTO revisions (id, user_id, memory_id, memory_type, seq, action, cause, content,"
            " metadata, source_text, labels, created_at)"
            " VALUES (?, ?, 'm1', 'fact', ?, 'update', 'user_edit', ?, '{}', ?, '{}', '2024-05-01')",
            [(f"rev_{i}", u, i + 1, content, source) for i, (u, content, source) in enumerate(revisions)],
        )
    finally:
        conn.close()


@pytest.mark.parametrize("schema", [2, 4])
async def test_an_older_file_is_migrated_and_still_searched(tmp_path: Path, schema: int) -> None:
    path = tmp_path / "memory.db"
    old_file(
        path, schema, [memory("u", "bike", "I ride my bicycle to work"), memory("u", "tea", "green tea")]
    )

    async with open_sqlite(path) as store:
        hits = await store.search("u", SearchQuery(text="bicycle", mode="text"), None)
        phrase = await store.search(
            "u", SearchQuery(text='"green tea"', phrases=["green tea"], mode="text"), None
        )
        await store.put([memory("u", "car", "my bicycle is faster than the car")])
        after_write = await store.search("u", SearchQuery(text="bicycle", mode="text"), None)

    assert [h.memory.id for h in hits] == ["bike"]
    assert [h.memory.id for h in phrase] == ["tea"]
    assert {h.memory.id for h in after_write} == {"bike", "car"}
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(migrations.MIGRATIONS) == 12
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 3
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        # Schema 3 added memories_active, schema 4 dropped it (unread since text search moved to memory);
        # schema 5 dropped the FTS5 index and its triggers, and added the change clock and tombstones.
        assert "memories_active" not in names
        assert not {n for n in names if n.startswith("memories_fts") or n.startswith("memories_a")}
        assert {"change_clock", "memory_tombstones", "memories_by_change"} <= names
        # Schema 9 added the knowledge graph's tables.
        assert {"graph_entities", "graph_observations", "graph_relations", "graph_links"} <= names
        # Schema 11 added the audit trail.
        assert {"audit_log", "audit_log_by_ledger"} <= names
        assert conn.execute("SELECT seq FROM change_clock").fetchone()[0] == 1  # the one write since
    finally:
        conn.close()


async def test_rows_from_before_spaces_are_personal_memories_written_by_their_owner(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    old_file(path, 7, [memory("ann", "a1", "staging listens on 5439"), memory("bob", "b1", "tea")])

    async with open_sqlite(path) as store:
        mine = await store.get("ann", "a1")
        hits = await store.search("ann", SearchQuery(text="staging", mode="text"), None)

    assert (mine.space, mine.author, mine.written_by) == (None, None, "ann")
    assert mine.public()["space"] is None and mine.public()["author"] == "ann"
    assert [h.memory.id for h in hits] == ["a1"]


@pytest.mark.parametrize("schema", [2, 5])
async def test_an_older_file_gets_each_users_stored_bytes_counted(tmp_path: Path, schema: int) -> None:
    path = tmp_path / "memory.db"
    ann = [memory("ann", "a1", "café au lait"), memory("ann", "a2", "naïve"), memory("ann", "a3", "x" * 50)]
    old_file(path, schema, [*ann, memory("bob", "b1", "日本語")])

    async with open_sqlite(path) as store:
        assert await store.stored_bytes("ann") == sum(len(m.content.encode()) for m in ann)
        assert await store.stored_bytes("bob") == 9  # three characters of three UTF-8 bytes each
        assert await store.stored_bytes("nobody") == 0
        await store.put([memory("ann", "a4", "more")])  # the triggers count from the migrated figure
        assert await store.stored_bytes("ann") == sum(len(m.content.encode()) for m in ann) + 4


@pytest.mark.parametrize("schema", [2, 5])
async def test_an_older_file_gets_its_revisions_counted_too(tmp_path: Path, schema: int) -> None:
    path = tmp_path / "memory.db"
    revisions = [("ann", "café", "the user said café"), ("ann", "tea", None), ("bob", "日本", "語")]
    old_file(path, schema, [memory("ann", "a1", "naïve")], revisions)

    async with open_sqlite(path) as store:
        assert isinstance(store, SqliteLongTermStore)
        assert await store.stored_bytes("ann") == 6 + (5 + 19) + 3  # content and source text, UTF-8
        assert await store.stored_bytes("bob") == 9  # revisions alone give a user a count
        await SqliteRevisionStore(store.db).forget(Scope(user_id="bob", everything=True))
        assert await store.stored_bytes("bob") == 0
        conn = sqlite3.connect(path)
        try:  # the last byte took the row naming the user with it
            assert conn.execute("SELECT count(*) FROM usage WHERE user_id = 'bob'").fetchone()[0] == 0
        finally:
            conn.close()


def test_clients_starting_at_once_on_a_new_file_all_open_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def client() -> None:
        start.wait()
        try:
            sqlite_db._connect(path).close()
        except BaseException as e:  # recorded for the assertion below
            errors.append(e)

    threads = [threading.Thread(target=client) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(migrations.MIGRATIONS)
    finally:
        conn.close()
