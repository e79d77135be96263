"""The audit trail in the SQLite data file (audit/): one table, one chain, each record written in the
transaction of the change it describes (SqliteDatabase.write(change=True) calls `append_in`).

The chain's tip is the newest row; when retention removes the oldest rows, the hash and seq of the last
one removed are kept in meta ('audit_anchor') so the rest still verifies from there. The pseudonym key
is in meta ('audit_key'), created with the table.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp_memory.audit.context import Draft
from mcp_memory.audit.log import AuditQuery
from mcp_memory.audit.records import (
    GENESIS,
    AuditRecord,
    Pseudonyms,
    Verification,
    body_digest,
    chained,
    pseudonymized,
    verify,
)
from mcp_memory.storage.sqlite.db import SqliteDatabase

_COLUMNS = (
    "seq",
    "at",
    "ledger",
    "actor",
    "action",
    "thread_id",
    "hash",
)  # copies of the record's, to filter by
_PAGE = 1000  # rows read at a time by verify and export


class SqliteAuditLog:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self._names: Pseudonyms | None = None
        # The chain's tip as this process last wrote it: the next record is inserted only if it is still
        # the tip (one statement); another process's record since sends it to read the tip first.
        self._tip: tuple[int, str] | None = None

    # ---- writing -------------------------------------------------------------------------------

    def prepare(self, draft: Draft, conn: sqlite3.Connection | None = None) -> Prepared | None:
        """The draft's record but for its place in the chain, made before the transaction (so the
        transaction holds the write lock only to find the tip and hash one short line); None before the
        pseudonym key is known (the first record of a process prepares inside)."""
        names = self._names if conn is None else self._pseudonyms(conn)
        if names is None:
            return None
        fields: dict[str, Any] = {"at": datetime.now(UTC).isoformat(), **draft.fields()}
        body = json.dumps(fields, separators=(",", ":"))
        return Prepared(draft.revision, fields, body, body_digest(fields, names))

    def append_in(
        self, conn: sqlite3.Connection, draft: Draft, prepared: Prepared | None = None
    ) -> dict[str, Any]:
        """Inside the caller's write transaction: the draft's record, chained to the newest one. What was
        prepared is used unless the change noted more since (a forget notes its ids inside)."""
        if prepared is None or prepared.revision != draft.revision:
            prepared = self.prepare(draft, conn)
            assert prepared is not None
        if self._tip is not None:
            fields, row = _chained_row(prepared, self._tip[0] + 1, self._tip[1])
            if conn.execute(
                _INSERT + " WHERE (SELECT max(seq) FROM audit_log) = ?", (*row, self._tip[0])
            ).rowcount:
                self._tip = (fields["seq"], fields["hash"])
                return fields
        tip = conn.execute("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
        fields, row = _chained_row(prepared, *((tip[0] + 1, tip[1]) if tip is not None else _first(conn)))
        conn.execute(_INSERT, row)
        self._tip = (fields["seq"], fields["hash"])
        return fields

    async def append(self, draft: Draft) -> AuditRecord:
        prepared = self.prepare(draft)
        return AuditRecord.model_validate(
            await self.db.write(lambda conn: self.append_in(conn, draft, prepared))
        )

    # ---- reading -------------------------------------------------------------------------------

    async def page(self, query: AuditQuery) -> list[AuditRecord]:
        clauses, args = _filters(query)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = await self.db.read(
            lambda conn: conn.execute(
                f"SELECT record FROM audit_log {where} ORDER BY seq DESC LIMIT ?", (*args, query.limit)
            ).fetchall()
        )
        return [AuditRecord.model_validate_json(r[0]) for r in rows]

    async def since(self, ledger: str | None, since: datetime | None) -> AsyncIterator[AuditRecord]:
        after = 0
        while True:
            rows = await self.db.read(functools.partial(_rows_after, after=after, ledger=ledger, since=since))
            for _, record in rows:
                yield AuditRecord.model_validate_json(record)
            if len(rows) < _PAGE:
                return
            after = rows[-1][0]

    async def verify(self) -> Verification:
        def walk(conn: sqlite3.Connection) -> Verification:
            names = self._pseudonyms(conn)
            _, anchor = _anchor(conn)
            rows = conn.execute(f"SELECT {', '.join(_COLUMNS)}, record FROM audit_log ORDER BY seq")
            return verify(_checked_rows(rows), anchor, names)

        return await self.db.read(walk)

    # ---- retention and forgetting --------------------------------------------------------------

    async def prune(self, before: datetime) -> int:
        def work(conn: sqlite3.Connection) -> int:
            # Records are in time order by seq: the first one still kept bounds the ones to drop (a scan
            # from the oldest that stops there: an hour's records, pruning hourly; no index on time).
            last = conn.execute(
                "SELECT seq, hash FROM audit_log WHERE seq < coalesce("
                " (SELECT seq FROM audit_log WHERE at >= ? ORDER BY seq LIMIT 1), 1e18)"
                " ORDER BY seq DESC LIMIT 1",
                (before.isoformat(),),
            ).fetchone()
            if last is None:
                return 0
            removed = conn.execute("DELETE FROM audit_log WHERE seq <= ?", (last[0],)).rowcount
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('audit_anchor', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (f"{last[0]}:{last[1]}",),
            )
            return int(removed)

        return await self.db.write(work)

    async def pseudonymize(self, user_id: str, *, own_trail_only: bool = False) -> int:
        everywhere = (
            "" if own_trail_only else " OR actor = ? OR (action = 'membership' AND instr(record, ?) > 0)"
        )
        args = (user_id,) if own_trail_only else (user_id, user_id, json.dumps(user_id))

        def work(conn: sqlite3.Connection) -> int:
            names = self._pseudonyms(conn)
            rows = conn.execute(
                f"SELECT seq, record FROM audit_log WHERE ledger = ?{everywhere}", args
            ).fetchall()
            for seq, text in rows:
                changed = pseudonymized(json.loads(text), user_id, names)
                conn.execute(
                    "UPDATE audit_log SET ledger = ?, actor = ?, record = ? WHERE seq = ?",  # hash unchanged
                    (changed["ledger"], changed["actor"], json.dumps(changed, separators=(",", ":")), seq),
                )
            return len(rows)

        return await self.db.write(work)

    def _pseudonyms(self, conn: sqlite3.Connection) -> Pseudonyms:
        if self._names is None:
            key = conn.execute("SELECT value FROM meta WHERE key = 'audit_key'").fetchone()[0]
            self._names = Pseudonyms(bytes.fromhex(key))
        return self._names


_INSERT = "INSERT INTO audit_log (seq, at, ledger, actor, action, thread_id, hash, record) SELECT ?, ?, ?, ?, ?, ?, ?, ?"


def _chained_row(prepared: Prepared, seq: int, prev: str) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The record at `seq` after `prev`, and its row for _INSERT."""
    hash_ = chained(seq, prev, prepared.body_hash)
    fields = {**prepared.fields, "seq": seq, "prev_hash": prev, "hash": hash_}
    record = f'{{"seq":{seq},"prev_hash":"{prev}","hash":"{hash_}",{prepared.body[1:]}'
    return fields, (*(fields[c] for c in _COLUMNS), record)


@dataclass(frozen=True)
class Prepared:
    """A record made ready outside its transaction (SqliteAuditLog.prepare)."""

    revision: int  # the draft's, when prepared
    fields: dict[str, Any]
    body: str  # its JSON, without seq, prev_hash and hash
    body_hash: str


def _first(conn: sqlite3.Connection) -> tuple[int, str]:
    """The seq and prev_hash of a record when the table is empty: after the anchor, or the first."""
    seq, anchor = _anchor(conn)
    return seq + 1, anchor


def _anchor(conn: sqlite3.Connection) -> tuple[int, str]:
    row = conn.execute("SELECT value FROM meta WHERE key = 'audit_anchor'").fetchone()
    if row is None:
        return 0, GENESIS
    seq, _, value = str(row[0]).partition(":")
    return int(seq), value


def _filters(query: AuditQuery) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    for column, value in (
        ("ledger = ?", query.ledger),
        ("actor = ?", query.actor),
        ("action = ?", query.action),
        ("thread_id = ?", query.thread_id),
        ("at >= ?", query.since.isoformat() if query.since else None),
        ("at < ?", query.until.isoformat() if query.until else None),
        ("seq < ?", query.before),
    ):
        if value is not None:
            clauses.append(column)
            args.append(value)
    return clauses, args


def _rows_after(
    conn: sqlite3.Connection, after: int, ledger: str | None, since: datetime | None
) -> list[tuple[int, str]]:
    clauses, args = _filters(AuditQuery(ledger=ledger, since=since))
    clauses.append("seq > ?")
    return conn.execute(
        f"SELECT seq, record FROM audit_log WHERE {' AND '.join(clauses)} ORDER BY seq LIMIT ?",
        (*args, after, _PAGE),
    ).fetchall()


def _checked_rows(rows: sqlite3.Cursor) -> Any:
    """Each row's record; a filter column that disagrees with the record counts as a changed record."""
    for row in rows:
        columns = dict(zip(_COLUMNS, row, strict=False))
        try:
            record = json.loads(row[-1])
        except ValueError:
            yield {
                "seq": columns["seq"],
                "prev_hash": "",
                "hash": "",
                "memory_ids": [],
                "ledger": "",
                "actor": "",
            }
            continue
        if any(record.get(k) != v for k, v in columns.items()):
            record = {**record, "hash": "the row's columns disagree with its record"}
        yield record
