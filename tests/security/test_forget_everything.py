"""forget(everything=True) leaves nothing of the user in any store: every SQLite table, the raw file and
its write-ahead log, the search-index snapshots beside it, and every Redis key are scanned for the
user's id and words, before (the scan finds them) and after (it finds nothing), while another user's
memories stay."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.search.terms import terms
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
from mcp_memory.storage.sqlite.snapshots import SnapshotFolder
from tests.services.mcp_client import call
from tests.services.redis_server import delete_prefix, redis_settings

pytestmark = pytest.mark.anyio


def _sqlite_findings(path: Path, needles: list[str]) -> list[str]:
    """Every (table, column) of the data file whose value holds one of the needles, as text or bytes."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found: list[str] = []
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                for column, value in zip(columns, row, strict=True):
                    data = value.encode() if isinstance(value, str) else value
                    if isinstance(data, bytes) and any(n.encode() in data for n in needles):
                        found.append(f"{table}.{column}")
    finally:
        conn.close()
    # Below the tables: free pages and the write-ahead log must not keep the bytes either, nor the
    # search indexes' snapshots kept beside the file.
    snapshots = SnapshotFolder.beside(path).path
    for file in (path, path.with_name(path.name + "-wal"), *sorted(snapshots.glob("*"))):
        if file.exists() and any(n.encode() in file.read_bytes() for n in needles):
            found.append(f"file {file.name}")
    return sorted(set(found))


def _redis_findings(url: str, prefix: str, needles: list[str]) -> list[str]:
    client = redis.Redis.from_url(url)
    try:
        found = []
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            values: list[Any] = [key]
            kind = client.type(key).decode()
            if kind == "string":
                values.append(client.get(key))
            elif kind == "hash":
                values += [v for pair in client.hgetall(key).items() for v in pair]
            elif kind == "list":
                values += client.lrange(key, 0, -1)
            elif kind == "zset":
                values += client.zrange(key, 0, -1)
            elif kind == "set":
                values += list(client.smembers(key))
            if any(n.encode() in v for v in values if isinstance(v, bytes) for n in needles):
                found.append(key.decode())
        return found
    finally:
        client.close()


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, fast_settings: Settings) -> Iterator[Settings]:
    if request.param == "sqlite":
        yield fast_settings
        return
    url = request.getfixturevalue("redis_url")
    working = redis_settings(url)
    yield fast_settings.model_copy(update={"working": working})
    delete_prefix(url, working.key_prefix)


async def _fill(client: Client, service: MemoryService, user: str, secret: str) -> None:
    """Turns in two threads, a summary, thread data, explicit facts (revisions, profile) when the
    learning tools exist, and an export/import round trip."""
    for i in range(6):
        await call(client, "add_turn", thread_id="t1", role="user", content=f"{secret} point {i} of the plan")
    await call(client, "add_turn", thread_id="t2", role="assistant", content=f"{secret} in another thread")
    await call(client, "summarize_thread", thread_id="t1", keep_recent=2)
    await service.set_thread_data(user, "t2", {"note": secret})
    tools = {t.name for t in (await client.list_tools()).tools}
    if "remember" in tools:
        fact = await call(client, "remember", content=f"The user's password hint is {secret}")
        fact_id = fact.get("memory", fact)["id"]
        await call(client, "update_memory", memory_id=fact_id, content=f"The hint is {secret} reversed")
        await client.read_resource("memory://profile")
    exported = await call(client, "export_memories")
    await call(client, "import_memories", jsonl=exported["jsonl"])


async def test_forget_everything_leaves_nothing_of_the_user_in_any_store(backend: Settings) -> None:
    user, other = f"forgetme{uuid.uuid4().hex[:8]}", f"keepme{uuid.uuid4().hex[:8]}"
    secret, kept = f"quokka{uuid.uuid4().hex[:8]}", f"wombat{uuid.uuid4().hex[:8]}"
    settings = backend.model_copy(update={"user_id": user})
    server = build_server(settings)
    async with Client(server, raise_exceptions=False) as client:
        service: MemoryService = server.host.service
        await _fill(client, service, user, secret)
        await service.add_turn(other, "t1", "user", f"{kept} stays")

        long_term = service.stores.long_term
        assert isinstance(long_term, SqliteLongTermStore)
        await call(client, "search_memory", query=secret, mode="text")  # its index in memory
        await long_term.indexes.snapshot(user)  # and on disk

        async def findings(needles: list[str]) -> list[str]:
            await long_term.indexes.saved()
            found = _sqlite_findings(settings.sqlite_path, needles)
            if settings.working.resolved_backend == "redis":
                assert settings.working.redis_url is not None
                url = settings.working.redis_url.get_secret_value()
                found += _redis_findings(url, settings.working.key_prefix, needles)
            return found

        # The search index keeps words stemmed ("quokka1e" -> "quokka1"): look for that form too.
        needles = [user, secret, *terms(secret)]
        before = await findings(needles)
        assert before, "the scan must see the user's data before forgetting"
        assert any(f.startswith("file ") and f.endswith(".npz") for f in before), "and the index snapshot"
        dry = await call(client, "forget", everything=True, dry_run=True)
        assert dry["dry_run"] and dry["long_term"]["memories"] >= 8
        assert await findings(needles), "a dry run deletes nothing"

        receipt = await call(client, "forget", everything=True)
        assert receipt["scope"] == "everything" and receipt["dry_run"] is False
        assert receipt["long_term"]["memories"] == dry["long_term"]["memories"]
        assert receipt["working_memory"] == dry["working_memory"]
        assert set(receipt["stores"]) == set(dry["stores"]) and len(receipt["stores"]) >= 2
        assert receipt["forgotten_at"]

        assert await findings(needles) == []
        assert await findings([kept]), "another user's memories stay"
        assert (await call(client, "search_memory", query=secret, mode="text"))["results"] == []
        again = await call(client, "forget", everything=True, dry_run=True)
        assert again["long_term"]["memories"] == 0 and again["working_memory"]["messages"] == 0
