"""The audit trail in the SQLite data file (audit/): one table of records, a chain per ledger, each record
written in the transaction of the change it describes (SqliteDatabase.write(change=True) calls
`append_in`).

A record's row carries its chain (the ledger's pseudonym, audit/records.py `chain_of`; '' for the archive,
the single chain of a file written before chains per ledger) and its seq within it: the chain's tip is
its newest row. When retention removes a chain's oldest rows, the seq and hash of the last one removed
are kept in audit_anchors so the rest still verifies from there. Every chain starts from the archive's
tip ('audit_split' in meta, '0:GENESIS' on a new file); the pseudonym key is 'audit_key'.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp_memory.audit.context import Draft
from mcp_memory.audit.log import AuditQuery
from mcp_memory.audit.records import (
    ARCHIVE,
    AuditRecord,
    Pseudonyms,
    Split,
    Verification,
    body_digest,
    chain_of,
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
    def __init__(self, db: SqliteDatabase, *, on_retry: Callable[[], None] | None = None) -> None:
        self.db = db
        self._names: Pseudonyms | None = None
        self._split: Split | None = None
        # Each chain's tip as this process last wrote it: the next record is inserted only if it is still
        # the tip (one statement); another process's record since sends it to read the tip first.
        self._tips: dict[str, tuple[int, str]] = {}
        self._on_retry = on_retry or (lambda: None)

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
        return Prepared(
            draft.revision, chain_of(draft.ledger, names), fields, body, body_digest(fields, names)
        )

    def append_in(
        self, conn: sqlite3.Connection, draft: Draft, prepared: Prepared | None = None
    ) -> dict[str, Any]:
        """Inside the caller's write transaction: the draft's record, chained to its ledger's newest
        one. What was prepared is used unless the change noted more since (a forget notes its ids
        inside)."""
        if prepared is None or prepared.revision != draft.revision:
            prepared = self.prepare(draft, conn)
            assert prepared is not None
        chain = prepared.chain
        tip = self._tips.get(chain)
        if tip is not None:
            fields, row = _chained_row(prepared, tip[0] + 1, tip[1])
            if conn.execute(
                _INSERT + " WHERE (SELECT max(seq) FROM audit_log WHERE chain = ?) = ?", (*row, chain, tip[0])
            ).rowcount:
                self._tips[chain] = (fields["seq"], fields["hash"])
                return fields
            self._on_retry()  # another process wrote to this chain since: its tip, then ours
        newest = conn.execute(
            "SELECT seq, hash FROM audit_log WHERE chain = ? ORDER BY seq DESC LIMIT 1", (chain,)
        ).fetchone()
        seq, prev = newest if newest is not None else self._start(conn, chain)
        fields, row = _chained_row(prepared, seq + 1, prev)
        conn.execute(_INSERT, row)
        self._tips[chain] = (fields["seq"], fields["hash"])
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
        order = "seq DESC" if query.ledger is not None else "at DESC, chain DESC, seq DESC"
        rows = await self.db.read(
            lambda conn: conn.execute(
                f"SELECT record FROM audit_log {where} ORDER BY {order} LIMIT ?", (*args, query.limit)
            ).fetchall()
        )
        return [AuditRecord.model_validate_json(r[0]) for r in rows]

    async def since(self, ledger: str | None, since: datetime | None) -> AsyncIterator[AuditRecord]:
        after: tuple[Any, ...] = (0,) if ledger is not None else ("", "", 0)
        while True:
            rows = await self.db.read(functools.partial(_rows_after, after=after, ledger=ledger, since=since))
            for *_, record in rows:
                yield AuditRecord.model_validate_json(record)
            if len(rows) < _PAGE:
                return
            after = tuple(rows[-1][:-1])

    async def verify(self, ledger: str | None = None) -> Verification:
        def walk(conn: sqlite3.Connection) -> Verification:
            names = self._pseudonyms(conn)
            if ledger is not None:
                chains = [chain_of(ledger, names)]
            else:
                found = conn.execute("SELECT DISTINCT chain FROM audit_log ORDER BY chain").fetchall()
                chains = [c for (c,) in found]
            total = Verification()
            for chain in chains:
                _, anchor = self._start(conn, chain)
                rows = conn.execute(
                    f"SELECT {', '.join(_COLUMNS)}, record FROM audit_log WHERE chain = ? ORDER BY seq",
                    (chain,),
                )
                part = verify(_checked_rows(rows, chain, names), anchor, names)
                broken = part.first_bad is not None and ledger is None
                total.add(part, _ledger_of(conn, chain, part.first_bad) if broken else ledger or chain)
            return total

        return await self.db.read(walk)

    # ---- retention and forgetting --------------------------------------------------------------

    async def prune(self, before: datetime) -> int:
        def work(conn: sqlite3.Connection) -> int:
            # Each chain's newest record written before `before`: it and everything before it go, and it
            # becomes the chain's anchor.
            cuts = conn.execute(
                "SELECT chain, max(seq) FROM audit_log WHERE at < ? GROUP BY chain", (before.isoformat(),)
            ).fetchall()
            removed = 0
            for chain, seq in cuts:
                (last,) = conn.execute(
                    "SELECT hash FROM audit_log WHERE chain = ? AND seq = ?", (chain, seq)
                ).fetchone()
                removed += conn.execute(
                    "DELETE FROM audit_log WHERE chain = ? AND seq <= ?", (chain, seq)
                ).rowcount
                conn.execute(
                    "INSERT INTO audit_anchors (chain, seq, hash) VALUES (?, ?, ?)"
                    " ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                    (chain, seq, last),
                )
            return removed

        return await self.db.write(work)

    async def pseudonymize(self, user_id: str, *, own_trail_only: bool = False) -> int:
        everywhere = (
            "" if own_trail_only else " OR actor = ? OR (action = 'membership' AND instr(record, ?) > 0)"
        )
        args = (user_id,) if own_trail_only else (user_id, user_id, json.dumps(user_id))

        def work(conn: sqlite3.Connection) -> int:
            names = self._pseudonyms(conn)
            rows = conn.execute(
                f"SELECT chain, seq, record FROM audit_log WHERE ledger = ?{everywhere}", args
            ).fetchall()
            for chain, seq, text in rows:
                changed = pseudonymized(json.loads(text), user_id, names)
                conn.execute(  # the hash is unchanged, and so is the chain: it was named by the pseudonym
                    "UPDATE audit_log SET ledger = ?, actor = ?, record = ? WHERE chain = ? AND seq = ?",
                    (
                        changed["ledger"],
                        changed["actor"],
                        json.dumps(changed, separators=(",", ":")),
                        chain,
                        seq,
                    ),
                )
            return len(rows)

        return await self.db.write(work)

    def _pseudonyms(self, conn: sqlite3.Connection) -> Pseudonyms:
        if self._names is None:
            key = conn.execute("SELECT value FROM meta WHERE key = 'audit_key'").fetchone()[0]
            self._names = Pseudonyms(bytes.fromhex(key))
        return self._names

    def _start(self, conn: sqlite3.Connection, chain: str) -> tuple[int, str]:
        """The seq and hash a chain goes on from when it has no record: its retention anchor, else where
        every chain starts (the archive's, from its first record: 0 and GENESIS)."""
        anchor = conn.execute("SELECT seq, hash FROM audit_anchors WHERE chain = ?", (chain,)).fetchone()
        if anchor is not None:
            return int(anchor[0]), str(anchor[1])
        if chain == ARCHIVE:
            return 0, Split().hash
        if self._split is None:
            seq, _, hash_ = (
                conn.execute("SELECT value FROM meta WHERE key = 'audit_split'").fetchone()[0].partition(":")
            )
            self._split = Split(int(seq), hash_)
        return self._split.seq, self._split.hash


_INSERT = (
    "INSERT INTO audit_log (chain, seq, at, ledger, actor, action, thread_id, hash, record)"
    " SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?"
)


def _chained_row(prepared: Prepared, seq: int, prev: str) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The record at `seq` after `prev`, and its row for _INSERT."""
    hash_ = chained(seq, prev, prepared.body_hash)
    fields = {**prepared.fields, "seq": seq, "prev_hash": prev, "hash": hash_}
    record = f'{{"seq":{seq},"prev_hash":"{prev}","hash":"{hash_}",{prepared.body[1:]}'
    return fields, (prepared.chain, *(fields[c] for c in _COLUMNS), record)


@dataclass(frozen=True)
class Prepared:
    """A record made ready outside its transaction (SqliteAuditLog.prepare)."""

    revision: int  # the draft's, when prepared
    chain: str
    fields: dict[str, Any] = field(repr=False)
    body: str = field(repr=False)  # its JSON, without seq, prev_hash and hash
    body_hash: str = ""


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
        ("at < ?", query.before_at.isoformat() if query.before_at else None),
    ):
        if value is not None:
            clauses.append(column)
            args.append(value)
    return clauses, args


def _rows_after(
    conn: sqlite3.Connection, after: tuple[Any, ...], ledger: str | None, since: datetime | None
) -> list[tuple[Any, ...]]:
    """A page of export: one ledger's records by seq, or every ledger's by (time, chain, seq)."""
    clauses, args = _filters(AuditQuery(ledger=ledger, since=since))
    key = "seq" if ledger is not None else "at, chain, seq"
    clauses.append(f"({key}) > ({', '.join('?' * len(after))})")
    return conn.execute(
        f"SELECT {key}, record FROM audit_log WHERE {' AND '.join(clauses)} ORDER BY {key} LIMIT ?",
        (*args, *after, _PAGE),
    ).fetchall()


def _ledger_of(conn: sqlite3.Connection, chain: str, seq: int | None) -> str:
    """The ledger a broken record says it is in (the chain's name when it says nothing readable)."""
    if chain == ARCHIVE:
        return "the archive (the single chain kept before chains per ledger)"
    row = conn.execute("SELECT ledger FROM audit_log WHERE chain = ? AND seq = ?", (chain, seq)).fetchone()
    return str(row[0]) if row is not None else chain


def _checked_rows(rows: sqlite3.Cursor, chain: str, names: Pseudonyms) -> Iterator[dict[str, Any]]:
    """Each row's record; a filter column that disagrees with the record, or a record whose ledger is not
    its chain's, counts as a changed record."""
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
        elif chain != ARCHIVE and chain_of(str(record.get("ledger")), names) != chain:
            record = {**record, "hash": "the record was moved from another ledger's chain"}
        yield record
