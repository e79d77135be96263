"""The audit trail (audit/) on each backend that keeps it: the SQLite data file and the learning container
on the local Cosmos-protocol server. Every ledger has a chain of its own: records page with every filter
and the cursor, export, and verify; an edited, extended or removed record is named by verify with its
ledger; pseudonymizing a user and pruning old records keep every chain verifiable; two replicas
appending to one ledger at once make one chain without gaps or duplicates, and a replica whose tip went
stale tries again (counted); the single chain of an older deployment is kept as the archive, with
nothing lost; and a stored record holds nothing but the record's fields (ids and counts, never text)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.audit import Actor, AuditLog, AuditQuery, AuditRecord, Draft
from mcp_memory.audit.records import GENESIS, Pseudonyms, digest
from mcp_memory.storage.cosmos.audit import CosmosAuditLog
from mcp_memory.storage.cosmos.audit_documents import AUDIT_PARTITION, record_id
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
from mcp_memory.storage.sqlite.audit import SqliteAuditLog
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.migrations import MIGRATIONS
from tests.contract.conftest_long_term import local_cosmos_settings, open_cosmos
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio

FIELDS = set(AuditRecord.model_fields)
COSMOS_BOOKKEEPING = {"id", "user_id", "group_id", "type"}
ANN = Actor("ann", client="laptop-token", tool="add_turn")
BOB = Actor("bob", client="ci-token", tool="forget")
OPERATOR = Actor("cli:operator", client="mcp-memory")
SPACE_LEDGER = "@team"


@dataclass
class Trail:
    """One backend's audit log, a second replica's on the same store, and raw access to what is stored
    (a record by its ledger and seq; the ledger as the record names it when written)."""

    backend: str
    log: AuditLog
    replica: AuditLog
    stored: Callable[[str, int], Awaitable[dict[str, Any]]]
    overwrite: Callable[[str, int, dict[str, Any]], Awaitable[None]]
    remove: Callable[[str, int], Awaitable[None]]
    everything: Callable[[], Awaitable[str]]  # all that is stored of the trail, as text
    retries: list[int] = field(default_factory=lambda: [0])


@pytest.fixture(params=["sqlite", "cosmos"])
async def trail(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Trail]:
    if request.param == "sqlite":
        async with sqlite_trail(tmp_path / "memory.db") as opened:
            yield opened
    else:
        async with cosmos_trail(request.getfixturevalue("cosmos_server")) as opened:
            yield opened


@asynccontextmanager
async def sqlite_trail(path: Path) -> AsyncIterator[Trail]:
    """Two logs on one data file (replicas of SQLite share the file, and its write lane)."""
    async with SqliteDatabase.open(path) as db:
        where = "WHERE ledger = ? AND seq = ?"

        async def stored(ledger: str, seq: int) -> dict[str, Any]:
            row = await db.read(
                lambda c: c.execute(f"SELECT record FROM audit_log {where}", (ledger, seq)).fetchone()
            )
            return dict(json.loads(row[0]))

        async def overwrite(ledger: str, seq: int, record: dict[str, Any]) -> None:
            await db.write(
                lambda c: c.execute(
                    f"UPDATE audit_log SET record = ? {where}", (json.dumps(record), ledger, seq)
                )
            )

        async def remove(ledger: str, seq: int) -> None:
            await db.write(lambda c: c.execute(f"DELETE FROM audit_log {where}", (ledger, seq)))

        async def everything() -> str:
            rows = await db.read(lambda c: c.execute("SELECT * FROM audit_log").fetchall())
            return json.dumps(rows)

        retries = [0]
        counted = SqliteAuditLog(db, on_retry=lambda: retries.__setitem__(0, retries[0] + 1))
        yield Trail("sqlite", counted, SqliteAuditLog(db), stored, overwrite, remove, everything, retries)


@asynccontextmanager
async def cosmos_trail(server: CosmosServer) -> AsyncIterator[Trail]:
    """Two stores on one database, each with its own client: two replicas sharing the trail."""
    settings = local_cosmos_settings(server)
    retries = [0]
    async with AsyncExitStack() as stack:
        logs, containers = [], []
        for n in range(2):
            store = await stack.enter_async_context(open_cosmos(settings))
            assert isinstance(store, CosmosLongTermStore)
            containers.append(await store.open_learning_container())
            counted = (lambda: retries.__setitem__(0, retries[0] + 1)) if n == 0 else None
            logs.append(CosmosAuditLog(containers[-1], timeout_seconds=10.0, on_retry=counted))
        container = containers[0]

        async def found(sql: str, **values: Any) -> list[dict[str, Any]]:
            params = [{"name": f"@{k}", "value": v} for k, v in values.items()]
            return [dict(d) async for d in container.query_items(sql, parameters=params)]

        async def stored(ledger: str, seq: int) -> dict[str, Any]:
            (doc,) = await found(
                "SELECT * FROM c WHERE c.group_id = @g AND c.ledger = @ledger AND c.id = @id",
                g=AUDIT_PARTITION,
                ledger=ledger,
                id=record_id(seq),
            )
            return doc

        async def overwrite(ledger: str, seq: int, record: dict[str, Any]) -> None:
            await container.replace_item(
                record_id(seq), {k: v for k, v in record.items() if not k.startswith("_")}
            )

        async def remove(ledger: str, seq: int) -> None:
            doc = await stored(ledger, seq)
            await container.delete_item(doc["id"], partition_key=[doc["user_id"], doc["group_id"]])

        async def everything() -> str:
            return json.dumps(await found("SELECT * FROM c WHERE c.group_id = @g", g=AUDIT_PARTITION))

        yield Trail("cosmos", logs[0], logs[1], stored, overwrite, remove, everything, retries)


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


async def which(log: AuditLog, records: list[AuditRecord], **query: Any) -> list[int]:
    """The records a page returns, as their places in `records` (1 = the first appended)."""
    place = {r.hash: n for n, r in enumerate(records, 1)}
    return [place[r.hash] for r in await log.page(AuditQuery(**query))]


async def test_records_page_with_every_filter_export_and_verify_one_chain_per_ledger(trail: Trail) -> None:
    records = await append_all(trail.log, six())

    # ann: 1, 6; @team: 2, 3, 5; bob: 4. Each ledger counts its own, from GENESIS.
    assert [r.seq for r in records] == [1, 1, 2, 1, 3, 2]
    assert [records[n].prev_hash for n in (0, 1, 3)] == [GENESIS] * 3
    assert (records[5].prev_hash, records[2].prev_hash, records[4].prev_hash) == (
        records[0].hash,
        records[1].hash,
        records[2].hash,
    )
    assert await trail.log.page(AuditQuery()) == records[::-1]  # every ledger: newest first, by time
    assert await which(trail.log, records, ledger=SPACE_LEDGER) == [5, 3, 2]
    assert await which(trail.log, records, actor="bob") == [5, 4, 3]
    assert await which(trail.log, records, action="forget") == [5, 4]
    assert await which(trail.log, records, thread_id="plan") == [2]
    assert await which(trail.log, records, ledger=SPACE_LEDGER, actor="bob") == [5, 3]
    assert await which(trail.log, records, since=records[2].at) == [6, 5, 4, 3]
    assert await which(trail.log, records, until=records[2].at) == [2, 1]
    assert await which(trail.log, records, since=records[1].at, until=records[4].at) == [4, 3, 2]
    assert await which(trail.log, records, ledger=SPACE_LEDGER, before=3) == [3, 2]
    assert await which(trail.log, records, before_at=records[3].at) == [3, 2, 1]
    pages, cursor = [], None
    while page := await which(trail.log, records, before_at=cursor, limit=4):
        pages.append(page)
        cursor = records[page[-1] - 1].at
    assert pages == [[6, 5, 4, 3], [2, 1]]
    assert records[4].outcome == "refused: PermissionDeniedError" and records[0].counts == {"turn": 2}

    exported = [r async for r in trail.log.since(None, None)]
    assert sorted(exported, key=lambda r: r.at) == records
    assert [r.seq async for r in trail.log.since(SPACE_LEDGER, records[2].at)] == [2, 3]
    assert [r.seq async for r in trail.log.since("bob", None)] == [1]
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked, verification.chains) == (True, 6, 3)
    assert (await trail.replica.verify()).ok  # another replica reads the same chains and key
    one = await trail.log.verify(SPACE_LEDGER)
    assert (one.ok, one.checked, one.chains) == (True, 3, 1)


async def test_an_edited_extended_or_removed_record_is_named_by_verify_with_its_ledger(trail: Trail) -> None:
    await append_all(trail.log, six())
    original = await trail.stored(SPACE_LEDGER, 2)

    for change in (
        {"outcome": "refused: NotFoundError"},
        {"memory_ids": ["m4"]},
        {"actor": "ann"},
        {"note": "added"},
        {"ledger": "bob"},
    ):
        await trail.overwrite(SPACE_LEDGER, 2, {**original, **change})
        found = await trail.log.verify()
        assert (found.first_bad, found.problem) == (2, "was changed after it was written"), change
        assert found.ledger in (SPACE_LEDGER, "bob"), found
        assert (await trail.log.verify("ann")).ok  # another ledger's chain is untouched
    await trail.overwrite(SPACE_LEDGER, 2, original)
    assert (await trail.log.verify()).ok

    await trail.remove(SPACE_LEDGER, 2)
    found = await trail.log.verify()
    assert (found.first_bad, found.problem, found.ledger) == (
        3,
        "does not follow the record before it",
        SPACE_LEDGER,
    )
    assert (await trail.log.verify("bob")).ok and not (await trail.log.verify(SPACE_LEDGER)).ok


async def test_pseudonymizing_a_user_leaves_no_trace_of_them_and_the_chains_verify(trail: Trail) -> None:
    records = await append_all(
        trail.log,
        [
            *six(),
            draft(ANN, "ann", "update", thread_id="t1", ids=["summary_ann_t1", "m1"]),
            draft(BOB, "ann", "read", ids=["summary_ann_t1"]),
        ],
    )
    hers = [n for n, r in enumerate(records, 1) if "ann" in (r.actor, r.ledger)]

    assert await trail.log.pseudonymize("ann") == len(hers) == 5
    assert (await trail.log.verify()).ok
    after = {r.hash: r for r in await trail.log.page(AuditQuery())}
    assert "ann" not in await trail.everything()
    aliases = {after[records[n - 1].hash].actor for n in hers if records[n - 1].tool == "add_turn"}
    assert len(aliases) == 1 and aliases.pop().startswith("anon-")
    seventh = after[records[6].hash]
    assert seventh.memory_ids[0].startswith("summary_anon-") and seventh.memory_ids[0].endswith("_t1")
    assert (after[records[3].hash].actor, after[records[3].hash].ledger) == ("bob", "bob")  # untouched
    assert after[records[5].hash].actor == "cli:operator" and after[records[5].hash].ledger == seventh.ledger
    assert await trail.log.pseudonymize("ann") == 0
    assert (await trail.replica.verify()).ok
    # Her chain goes on under its pseudonym: the next record of her ledger follows the last.
    newest = await trail.replica.append(draft(OPERATOR, "ann", "import", counts={"fact": 1}))
    assert (newest.seq, newest.prev_hash) == (5, records[7].hash)  # ann's: 1, 6, 7, 8, then this
    assert (await trail.log.verify()).checked == 9


async def test_pruning_keeps_every_chain_verifiable_from_its_anchor(trail: Trail) -> None:
    records = await append_all(trail.log, six())

    assert await trail.log.prune(records[3].at) == 3  # ann's 1, the team's 1 and 2
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked) == (True, 3)
    assert await which(trail.log, records) == [6, 5, 4]
    assert await trail.log.prune(records[3].at) == 0
    newest = await trail.replica.append(draft(BOB, SPACE_LEDGER, "read", ids=["m3"]))
    assert (newest.seq, newest.prev_hash) == (4, records[4].hash)
    assert sorted([r.at async for r in trail.log.since(None, None)]) == [r.at for r in [*records[3:], newest]]
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked) == (True, 4)
    await trail.remove(SPACE_LEDGER, 3)  # the first record after the team's anchor
    assert (await trail.log.verify()).first_bad == 4


async def test_a_ledger_whose_records_were_all_pruned_goes_on_from_its_anchor(trail: Trail) -> None:
    records = await append_all(trail.log, six())
    assert await trail.log.prune(datetime.now(UTC)) == 6
    newest = await trail.replica.append(draft(BOB, "bob", "add", ids=["m9"]))
    assert (newest.seq, newest.prev_hash) == (2, records[3].hash)
    assert (await trail.log.verify()).ok


async def test_two_replicas_appending_to_one_ledger_at_once_make_one_chain(trail: Trail) -> None:
    made: dict[str, list[int]] = {name: [] for name in ("one", "two", *(f"user-{n}" for n in range(4)))}

    async def appender(log: AuditLog, name: str, ledger: str) -> None:
        for i in range(25):
            record = await log.append(draft(ANN, ledger, "add", thread_id=name, ids=[f"{name}-{i}"]))
            made[name].append(record.seq)

    async with anyio.create_task_group() as tg:
        tg.start_soon(appender, trail.log, "one", SPACE_LEDGER)
        tg.start_soon(appender, trail.replica, "two", SPACE_LEDGER)
        for n in range(4):  # and, meanwhile, other ledgers: chains of their own
            tg.start_soon(appender, trail.log, f"user-{n}", f"user-{n}")

    exported = [r async for r in trail.log.since(SPACE_LEDGER, None)]
    assert [r.seq for r in exported] == list(range(1, 51))
    assert sorted(made["one"] + made["two"]) == list(range(1, 51))
    assert [r.prev_hash for r in exported[1:]] == [r.hash for r in exported[:-1]]
    for name in ("one", "two"):  # each replica's records are its own, in its own order
        assert [r.memory_ids for r in exported if r.thread_id == name] == [[f"{name}-{i}"] for i in range(25)]
    assert all(made[f"user-{n}"] == list(range(1, 26)) for n in range(4))
    verification = await trail.replica.verify()
    assert (verification.ok, verification.checked, verification.chains) == (True, 150, 5)


async def test_a_tip_another_replica_moved_on_is_read_again_and_counted(trail: Trail) -> None:
    first = await trail.log.append(draft(ANN, SPACE_LEDGER, "add", ids=["m1"]))
    between = await trail.replica.append(draft(BOB, SPACE_LEDGER, "add", ids=["m2"]))
    assert trail.retries == [0]

    after = await trail.log.append(draft(ANN, SPACE_LEDGER, "add", ids=["m3"]))  # its kept tip is stale

    assert (first.seq, between.seq, after.seq, after.prev_hash) == (1, 2, 3, between.hash)
    assert trail.retries == [1]
    # Cosmos DB: a chain another replica writes too is read before each append for a while, so the
    # next turn of the other replica costs no refused create (SQLite finds its kept tip stale again).
    await trail.replica.append(draft(BOB, SPACE_LEDGER, "add", ids=["m4"]))
    last = await trail.log.append(draft(ANN, SPACE_LEDGER, "add", ids=["m5"]))
    assert last.seq == 5 and trail.retries == [1 if trail.backend == "cosmos" else 2]
    assert (await trail.log.verify()).ok


async def test_a_stored_record_holds_the_record_fields_only(trail: Trail) -> None:
    record = await trail.log.append(draft(ANN, "ann", "add", thread_id="t1", ids=["m1"], counts={"turn": 1}))

    stored = await trail.stored("ann", record.seq)

    if trail.backend == "sqlite":
        assert set(stored) == FIELDS
    else:  # the document's id and partition key, its type, and Cosmos DB's system properties (_etag, ...)
        assert {k for k in stored if not k.startswith("_")} == FIELDS | COSMOS_BOOKKEEPING
        assert stored["user_id"].startswith("anon-")  # the chain's partition never names the user
    assert AuditRecord.model_validate({k: stored[k] for k in FIELDS}) == record


# ---- the single chain of an older deployment -------------------------------------------------------


def single_chain(key: bytes, drafts: list[Draft]) -> list[dict[str, Any]]:
    """Records as the single chain wrote them: one seq and hash chain across every ledger."""
    names, fields, previous = Pseudonyms(key), [], GENESIS
    for n, made in enumerate(drafts, 1):
        record = {"seq": n, "at": timestamp(datetime.now(UTC)), **made.fields(), "prev_hash": previous}
        record["hash"] = previous = digest(record, names)
        fields.append(record)
    return fields


async def test_sqlite_keeps_the_single_chain_as_its_archive(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:11]:
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 11")
    key = bytes.fromhex(conn.execute("SELECT value FROM meta WHERE key = 'audit_key'").fetchone()[0])
    old = single_chain(key, six())
    for record in old:
        conn.execute(
            "INSERT INTO audit_log (seq, at, ledger, actor, action, thread_id, hash, record)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *(record[k] for k in ("seq", "at", "ledger", "actor", "action", "thread_id", "hash")),
                json.dumps(record),
            ),
        )
    conn.close()

    async with sqlite_trail(path) as trail:
        await archive_then_chains(trail, old)


async def test_cosmos_moves_the_single_chain_into_its_ledgers_as_it_was(cosmos_server: CosmosServer) -> None:
    async with cosmos_trail(cosmos_server) as trail:
        assert isinstance(trail.log, CosmosAuditLog)
        container = trail.log._container
        key = b"k" * 32
        deployment = {"user_id": AUDIT_PARTITION, "group_id": AUDIT_PARTITION}
        await container.create_item({"id": "audit-key", "type": "audit_key", "key": key.hex(), **deployment})
        old = single_chain(key, six())
        for record in old:
            await container.create_item(
                {"id": record_id(record["seq"]), "type": "audit_record", **deployment, **record}
            )
        head = {"seq": 6, "hash": old[-1]["hash"], "anchor_seq": 0, "anchor_hash": GENESIS}
        await container.create_item({"id": "audit-head", "type": "audit_head", **deployment, **head})

        await archive_then_chains(trail, old)
        partitions = json.loads(await trail.everything())
        assert {d["user_id"] for d in partitions if d["type"] == "audit_record"} >= {SPACE_LEDGER}
        assert not any(d["type"] == "audit_head" for d in partitions)


async def archive_then_chains(trail: Trail, old: list[dict[str, Any]]) -> None:
    """After the move: the old records read as they were, every ledger's chain goes on from the
    archive's tip, and all of it verifies; an edit of the archive is named."""
    assert [r.model_dump(mode="json") for r in await trail.log.page(AuditQuery(ledger=SPACE_LEDGER))] == [
        AuditRecord.model_validate(old[n]).model_dump(mode="json") for n in (4, 2, 1)
    ]
    newest = await trail.log.append(draft(ANN, SPACE_LEDGER, "add", ids=["m9"]))
    other = await trail.replica.append(draft(BOB, "bob", "add", ids=["m8"]))
    assert (newest.seq, newest.prev_hash) == (7, old[-1]["hash"])
    assert (other.seq, other.prev_hash) == (7, old[-1]["hash"])
    assert [r.seq for r in await trail.log.page(AuditQuery(ledger=SPACE_LEDGER))] == [7, 5, 3, 2]
    verification = await trail.log.verify()
    assert (verification.ok, verification.checked, verification.chains) == (True, 8, 3)
    assert len([r async for r in trail.log.since(None, None)]) == 8

    edited = {**await trail.stored("bob", 4), "counts": {"turn": 9}}
    await trail.overwrite("bob", 4, edited)
    found = await trail.log.verify()
    assert (found.first_bad, found.ledger) == (
        4,
        "the archive (the single chain kept before chains per ledger)",
    )
