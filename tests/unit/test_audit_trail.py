"""The audit trail's rules on a real SQLite file, without a server: one record per change, written with
the change or not at all, nesting, refusals, many writes recorded once, the id cap, membership records,
retention and pseudonyms (issue 39)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_memory.audit import Actor, Auditor, AuditQuery, acting
from mcp_memory.audit.records import MAX_IDS, Pseudonyms, digest
from mcp_memory.errors import LimitExceededError
from mcp_memory.storage.sqlite.audit import SqliteAuditLog
from mcp_memory.storage.sqlite.db import SqliteDatabase

pytestmark = pytest.mark.anyio

ANN = Actor("ann", client="ann-laptop", tool="add_turn")


def _write(db: SqliteDatabase, value: str) -> object:
    return db.write(
        lambda conn: conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (value, value)), change=True
    )


async def test_a_change_is_recorded_once_inside_its_first_write_and_a_failed_write_leaves_no_record(
    tmp_path: Path,
) -> None:
    async with SqliteDatabase.open(tmp_path / "m.db") as db:
        auditor = Auditor(SqliteAuditLog(db), default_actor=Actor("local"))
        with acting(ANN):
            async with auditor.change("@team", "add", thread_id="t") as record:
                record.note(["turn_1"], {"turn": 1})
                await _write(db, "a")
                assert record.recorded  # committed with the write
                await _write(db, "b")  # a later write of the same change: no second record
                async with auditor.change("@team", "forget"):  # nested: the outer change's record
                    await _write(db, "c")
            with pytest.raises(RuntimeError):
                async with auditor.change("@team", "add"):
                    await db.write(lambda conn: (_ for _ in ()).throw(RuntimeError("boom")), change=True)
        assert auditor.log is not None
        [page] = [
            await auditor.log.page(__import__("mcp_memory.audit", fromlist=["AuditQuery"]).AuditQuery())
        ]
        assert [(r.action, r.actor, r.client, r.tool, r.memory_ids) for r in page] == [
            ("add", "ann", "ann-laptop", "add_turn", ["turn_1"])
        ]
        assert (await auditor.log.verify()).ok


async def test_a_refused_change_a_change_of_many_writes_and_the_id_cap(tmp_path: Path) -> None:
    async with SqliteDatabase.open(tmp_path / "m.db") as db:
        log = SqliteAuditLog(db)
        auditor = Auditor(log, default_actor=Actor("local"))
        with pytest.raises(LimitExceededError):
            async with auditor.change("ann", "add"):
                raise LimitExceededError("storage quota reached")
        async with auditor.change("ann", "import", at_end=True) as record:
            for i in range(MAX_IDS + 20):
                record.note([f"m{i}"], {"turn": 1})
                if i < 3:
                    await _write(db, f"v{i}")  # writes inside: recorded once, at the end
        newest, refused = await log.page(AuditQuery())
        assert refused.outcome == "refused: LimitExceededError" and refused.actor == "local"
        assert (len(newest.memory_ids), newest.more_ids, newest.counts) == (
            MAX_IDS,
            20,
            {"turn": MAX_IDS + 20},
        )


async def test_membership_changes_are_recorded_once_each(tmp_path: Path) -> None:
    async with SqliteDatabase.open(tmp_path / "m.db") as db:
        log = SqliteAuditLog(db)
        auditor = Auditor(log, default_actor=Actor("local"))
        assert await auditor.memberships({"team": {"olga": "owner", "ann": "writer"}}) == 1
        assert await auditor.memberships({"team": {"olga": "owner", "ann": "writer"}}) == 0
        assert await auditor.memberships({"team": {"olga": "owner", "ann": "reader", "wes": "writer"}}) == 1
        newest, first = await log.page(AuditQuery(ledger="@team"))
        assert (first.counts, newest.counts) == ({"added": 2}, {"added": 1, "role changed": 1})
        assert newest.members == {"ann": "reader", "olga": "owner", "wes": "writer"}


async def test_retention_drops_old_records_and_the_rest_still_verifies(tmp_path: Path) -> None:
    async with SqliteDatabase.open(tmp_path / "m.db") as db:
        log = SqliteAuditLog(db)
        auditor = Auditor(log, default_actor=Actor("local"))
        for i in range(4):
            async with auditor.change("ann", "add") as record:
                record.note([f"m{i}"])
        await db.write(
            lambda conn: conn.execute("UPDATE audit_log SET at = '2020-01-01T00:00:00+00:00' WHERE seq <= 2")
        )
        kept = Auditor(log, default_actor=Actor("local"), retention_days=30)  # a new process: prunes first
        async with kept.change("ann", "add") as record:
            record.note(["m4"])
        assert [r.seq for r in await log.page(AuditQuery())] == [5, 4, 3]
        assert (await log.verify()).ok


def test_a_pseudonym_is_stable_keyed_and_leaves_the_hash_unchanged() -> None:
    names, other = Pseudonyms(b"k" * 32), Pseudonyms(b"j" * 32)
    assert names.of("ann") == names.of("ann") != other.of("ann") and names.of("ann").startswith("anon-")
    assert names.of("@team") == "@team" and names.of("group:eng") == "group:eng"
    record = {
        "seq": 1,
        "ledger": "ann",
        "actor": "ann",
        "client": "ann-laptop",
        "memory_ids": ["summary_ann_t1"],
        "members": {},
        "prev_hash": "0",
    }
    forgotten = record | {
        "ledger": names.of("ann"),
        "actor": names.of("ann"),
        "client": names.of("ann-laptop"),
        "memory_ids": [f"summary_{names.of('ann')}_t1"],
    }
    assert digest(record, names) == digest(forgotten, names)
    assert digest(record, names) != digest(record | {"actor": "olga"}, names)
