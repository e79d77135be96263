"""The audit trail (audit/) on each backend that keeps it: the SQLite data file and the learning container
on the local Cosmos-protocol server. Records page with every filter and the cursor, export oldest first,
and verify; an edited, extended or removed record is named by verify; pseudonymizing a user and pruning
old records keep the chain verifiable; two replicas appending at once make one chain without gaps or
duplicates; and a stored record holds nothing but the record's fields (ids and counts, never text)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.audit import Actor, AuditLog, AuditQuery, AuditRecord, Draft
from mcp_memory.storage.cosmos.audit import CosmosAuditLog
from mcp_memory.storage.cosmos.audit_documents import AUDIT_PARTITION, record_id
from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
from mcp_memory.storage.sqlite.audit import SqliteAuditLog
from mcp_memory.storage.sqlite.db import SqliteDatabase
from tests.contract.conftest_long_term import local_cosmos_settings, open_cosmos
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio

FIELDS = set(AuditRecord.model_fields)
COSMOS_BOOKKEEPING = {"id", "user_id", "group_id", "type"}
ANN = Actor("ann", client="laptop-token", tool="add_turn")
BOB = Actor("bob", client="ci-token", tool="forget")
OPERATOR = Actor("cli:operator", client="mcp-memory")


@dataclass
class Trail:
    """One backend's audit log, a second replica's on the same store, and raw access to what is stored."""

    backend: str
    log: AuditLog
    replica: AuditLog
    stored: Callable[[int], Awaitable[dict[str, Any]]]  # seq -> the stored record (Cosmos: its document)
    overwrite: Callable[[int, dict[str, Any]], Awaitable[None]]  # seq, what to store instead
    remove: Callable[[int], Awaitable[None]]


@pytest.fixture(params=["sqlite", "cosmos"])
async def trail(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Trail]:
    if request.param == "sqlite":
        async with sqlite_trail(tmp_path / "memory.db") as opened:
            yield opened
    else:
        async with cosmos_trail(request.getfixturevalue("cosmos_server")) as opened:
            yield opened


@pytest.fixture
async def cosmos(cosmos_server: CosmosServer) -> AsyncIterator[Trail]:
    """The Cosmos DB trail alone, for what only it has: a head kept beside the records."""
    async with cosmos_trail(cosmos_server) as opened:
        yield opened


@asynccontextmanager
async def sqlite_trail(path: Path) -> AsyncIterator[Trail]:
    """Two logs on one data file (replicas of SQLite share the file, and its write lane)."""
    async with SqliteDatabase.open(path) as db:

        async def stored(seq: int) -> dict[str, Any]:
            row = await db.read(
                lambda c: c.execute("SELECT record FROM audit_log WHERE seq = ?", (seq,)).fetchone()
            )
            return dict(json.loads(row[0]))

        async def overwrite(seq: int, record: dict[str, Any]) -> None:
            await db.write(
                lambda c: c.execute(
                    "UPDATE audit_log SET record = ? WHERE seq = ?", (json.dumps(record), seq)
                )
            )

        async def remove(seq: int) -> None:
            await db.write(lambda c: c.execute("DELETE FROM audit_log WHERE seq = ?", (seq,)))

        yield Trail("sqlite", SqliteAuditLog(db), SqliteAuditLog(db), stored, overwrite, remove)


@asynccontextmanager
async def cosmos_trail(server: CosmosServer) -> AsyncIterator[Trail]:
    """Two stores on one database, each with its own client: two replicas sharing the trail."""
    settings = local_cosmos_settings(server)
    key = [AUDIT_PARTITION, AUDIT_PARTITION]
    async with AsyncExitStack() as stack:
        logs, containers = [], []
        for _ in range(2):
            store = await stack.enter_async_context(open_cosmos(settings))
            assert isinstance(store, CosmosLongTermStore)
            containers.append(await store.open_learning_container())
            logs.append(CosmosAuditLog(containers[-1], timeout_seconds=10.0))
        container = containers[0]

        async def stored(seq: int) -> dict[str, Any]:
            found = container.query_items(
                "SELECT * FROM c WHERE c.user_id = @key AND c.group_id = @key AND c.id = @id",
                parameters=[
                    {"name": "@key", "value": AUDIT_PARTITION},
                    {"name": "@id", "value": record_id(seq)},
                ],
                partition_key=key,
            )
            (doc,) = [dict(d) async for d in found]
            return doc

        async def overwrite(seq: int, record: dict[str, Any]) -> None:
            await container.replace_item(
                record_id(seq), {k: v for k, v in record.items() if not k.startswith("_")}
            )

        async def remove(seq: int) -> None:
            await container.delete_item(record_id(seq), partition_key=key)

        yield Trail("cosmos", logs[0], logs[1], stored, overwrite, remove)


def draft(actor: Actor, ledger: str, action: str, **fields: Any) -> Draft:
    ids, counts = fields.pop("ids", ()), fields.pop("counts", None)
    made = Draft(ledger=ledger, actor=actor, action=action, **fields)
    made.note(ids, counts)
    return made


async def append_all(log: AuditLog, drafts: list[Draft]) -> list[AuditRecord]:
    records = []
    for made in drafts:
        records.append(await log.append(made))
        await anyio.sleep(0.005)  # distinct `at`, so time filters have edges to fall between
    return records


def six() -> list[Draft]:
    return [
        draft(ANN, "ann", "add", thread_id="t1", ids=["m1", "m2"], counts={"turn": 2}),
        draft(ANN, "@team", "add", thread_id="plan", ids=["m3"], counts={"turn": 1}),
        draft(BOB, "@team", "read", ids=["m3"]),
        draft(BOB, "bob", "forget", thread_id="t2", counts={"turn": 3}),
        draft(BOB, "@team", "forget", outcome="refused: PermissionDeniedError"),
        draft(OPERATOR, "ann", "import", counts={"fact": 4}),
    ]


async def seqs(log: AuditLog, **query: Any) -> list[int]:
    return [r.seq for r in await log.page(AuditQuery(**query))]


async def test_records_page_with_every_filter_export_oldest_first_and_verify(trail: Trail) -> None:
    records = await append_all(trail.log, six())

    assert [r.seq for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r.prev_hash for r in records[1:]] == [r.hash for r in records[:-1]]
    assert await trail.log.page(AuditQuery()) == records[::-1]
    assert await seqs(trail.log, ledger="@team") == [5, 3, 2]
    assert await seqs(trail.log, actor="bob") == [5, 4, 3]
    assert await seqs(trail.log, action="forget") == [5, 4]
    assert await seqs(trail.log, thread_id="plan") == [2]
    assert await seqs(trail.log, ledger="@team", actor="bob") == [5, 3]
    assert await seqs(trail.log, since=records[2].at) == [6, 5, 4, 3]
    assert await seqs(trail.log, until=records[2].at) == [2, 1]
    assert await seqs(trail.log, since=records[1].at, until=records[4].at) == [4, 3, 2]
    assert await seqs(trail.log, before=4) == [3, 2, 1]
    assert await seqs(trail.log, ledger="@team", before=5) == [3, 2]
    pages, cursor = [], None
    while page := await seqs(trail.log, before=cursor, limit=4):
        pages.append(page)
        cursor = page[-1]
    assert pages == [[6, 5, 4, 3], [2, 1]]
    assert records[4].outcome == "refused: PermissionDeniedError" and records[0].counts == {"turn": 2}

    assert [r async for r in trail.log.since(None, None)] == records
    assert [r.seq async for r in trail.log.since("@team", records[2].at)] == [3, 5]
    assert [r.seq async for r in trail.log.since("bob", None)] == [4]
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked) == (True, 6)
    assert (await trail.replica.verify()).ok  # another replica reads the same chain and key


async def test_an_edited_extended_or_removed_record_is_named_by_verify(trail: Trail) -> None:
    await append_all(trail.log, six())
    original = await trail.stored(3)

    for change in (
        {"outcome": "refused: NotFoundError"},
        {"memory_ids": ["m4"]},
        {"actor": "ann"},
        {"note": "added"},
    ):
        await trail.overwrite(3, {**original, **change})
        found = await trail.log.verify()
        assert (found.first_bad, found.problem) == (3, "was changed after it was written"), change
    await trail.overwrite(3, original)
    assert (await trail.log.verify()).ok

    await trail.remove(4)
    found = await trail.log.verify()
    assert (found.first_bad, found.problem) == (5, "does not follow the record before it")


async def test_a_removed_newest_record_is_named_on_cosmos(cosmos: Trail) -> None:
    """The head remembers the tip: dropping the newest record is seen too (SQLite's tip is its newest row)."""
    trail = cosmos
    await append_all(trail.log, six())
    await trail.remove(6)
    found = await trail.log.verify()
    assert found.first_bad == 6 and found.problem is not None and "missing" in found.problem


async def test_pseudonymizing_a_user_leaves_no_trace_of_them_and_the_chain_verifies(trail: Trail) -> None:
    records = await append_all(
        trail.log,
        [
            *six(),
            draft(ANN, "ann", "update", thread_id="t1", ids=["summary_ann_t1", "m1"]),
            draft(BOB, "ann", "read", ids=["summary_ann_t1"]),
        ],
    )
    hers = [r.seq for r in records if "ann" in (r.actor, r.ledger)]

    assert await trail.log.pseudonymize("ann") == len(hers) == 5
    assert (await trail.log.verify()).ok
    after = await trail.log.page(AuditQuery())
    assert "ann" not in json.dumps([await trail.stored(r.seq) for r in records])
    aliases = {r.actor for r in after if r.seq in hers and r.tool == "add_turn"}
    assert len(aliases) == 1 and aliases.pop().startswith("anon-")
    by_seq = {r.seq: r for r in after}
    assert by_seq[7].memory_ids[0].startswith("summary_anon-") and by_seq[7].memory_ids[0].endswith("_t1")
    assert (by_seq[4].actor, by_seq[4].ledger) == ("bob", "bob")  # others' records are untouched
    assert by_seq[6].actor == "cli:operator" and by_seq[6].ledger == by_seq[7].ledger
    assert await trail.log.pseudonymize("ann") == 0
    assert (await trail.replica.verify()).ok
    await trail.replica.append(draft(BOB, "@team", "read", ids=["m3"]))
    assert (await trail.log.verify()).checked == 9


async def test_pruning_keeps_the_chain_verifiable_from_its_anchor(trail: Trail) -> None:
    records = await append_all(trail.log, six())

    assert await trail.log.prune(records[3].at) == 3
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked) == (True, 3)
    assert await seqs(trail.log) == [6, 5, 4]
    assert await trail.log.prune(records[3].at) == 0
    newest = await trail.replica.append(draft(BOB, "@team", "read", ids=["m3"]))
    assert (newest.seq, newest.prev_hash) == (7, records[5].hash)
    assert [r.seq async for r in trail.log.since(None, None)] == [4, 5, 6, 7]
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked) == (True, 4)
    await trail.remove(4)  # the first record after the anchor
    assert (await trail.log.verify()).first_bad == 5


async def test_two_replicas_appending_at_once_make_one_chain(trail: Trail) -> None:
    made: dict[str, list[int]] = {"one": [], "two": []}

    async def appender(log: AuditLog, name: str) -> None:
        for i in range(25):
            record = await log.append(draft(ANN, "@team", "add", thread_id=name, ids=[f"{name}-{i}"]))
            made[name].append(record.seq)

    async with anyio.create_task_group() as tg:
        tg.start_soon(appender, trail.log, "one")
        tg.start_soon(appender, trail.replica, "two")

    exported = [r async for r in trail.log.since(None, None)]
    assert [r.seq for r in exported] == list(range(1, 51))
    assert sorted(made["one"] + made["two"]) == list(range(1, 51))
    assert [r.prev_hash for r in exported[1:]] == [r.hash for r in exported[:-1]]
    for name in made:  # each replica's records are its own, in its own order
        assert [r.memory_ids for r in exported if r.thread_id == name] == [[f"{name}-{i}"] for i in range(25)]
    verification = await trail.replica.verify()
    assert (verification.ok, verification.checked) == (True, 50)


async def test_a_stored_record_holds_the_record_fields_only(trail: Trail) -> None:
    record = await trail.log.append(draft(ANN, "ann", "add", thread_id="t1", ids=["m1"], counts={"turn": 1}))

    stored = await trail.stored(record.seq)

    if trail.backend == "sqlite":
        assert set(stored) == FIELDS
    else:  # the document's id and partition key, its type, and Cosmos DB's system properties (_etag, ...)
        assert {k for k in stored if not k.startswith("_")} == FIELDS | COSMOS_BOOKKEEPING
    assert AuditRecord.model_validate({k: stored[k] for k in FIELDS}) == record


async def test_a_writer_that_stopped_between_its_writes_does_not_block_the_chain(
    cosmos: Trail, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cosmos DB: a record created whose writer never moved the head; the next writer moves it on (on
    SQLite a record and the chain's tip are one row, written in one transaction)."""
    trail = cosmos
    await trail.log.append(draft(ANN, "ann", "add", ids=["m1"]))

    async def stopped(fields: dict[str, Any], created: dict[str, Any]) -> bool:
        return True  # the record is stored; the head is left behind

    monkeypatch.setattr(trail.log, "_link", stopped)
    lost = await trail.log.append(draft(ANN, "ann", "add", ids=["m2"]))
    monkeypatch.undo()

    after = await trail.replica.append(draft(BOB, "bob", "add", ids=["m3"]))
    assert (lost.seq, after.seq, after.prev_hash) == (2, 3, lost.hash)
    assert [r.seq async for r in trail.log.since(None, None)] == [1, 2, 3]
    assert (await trail.log.verify()).checked == 3
