"""Revisions and trigger counters on the embedded SQLite file (schema: migration 2 in sqlite/db.py).

Both ride the same single connection lane as the other stores; every write is one IMMEDIATE
transaction, which is what makes a counter increment (and so a trigger) happen exactly once even
when several processes share the file. Each revision's bytes count toward its user's stored bytes
through triggers (migration 6), so appends, forget and prune keep that count without code here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mcp_memory.errors import InvalidInputError, NotFoundError, shown
from mcp_memory.models import Revision, Scope
from mcp_memory.storage.sqlite.codec import ts
from mcp_memory.storage.sqlite.db import SqliteDatabase

_COLUMNS = (
    "id, user_id, memory_id, thread_id, memory_type, seq, action, cause, content, metadata,"
    " superseded_by, supersede_reason, source_text, labels, created_at"
)


class SqliteRevisionStore:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def append(self, revision: Revision) -> Revision:
        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM revisions WHERE user_id = ? AND memory_id = ?",
                (revision.user_id, revision.memory_id),
            ).fetchone()
            seq = int(row[0])
            conn.execute(
                f"INSERT INTO revisions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    revision.id,
                    revision.user_id,
                    revision.memory_id,
                    revision.thread_id,
                    revision.memory_type,
                    seq,
                    revision.action,
                    revision.cause,
                    revision.content,
                    json.dumps(revision.metadata),
                    revision.superseded_by,
                    revision.supersede_reason,
                    revision.source_text,
                    json.dumps(revision.labels),
                    ts(revision.created_at),
                ),
            )
            return seq

        seq = await self._db.write(work, change=True)
        return revision.model_copy(update={"seq": seq})

    async def history(self, user_id: str, memory_id: str) -> list[Revision]:
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM revisions WHERE user_id = ? AND memory_id = ? ORDER BY seq",
                (user_id, memory_id),
            ).fetchall()
        )
        return [_revision(r) for r in rows]

    async def get(self, user_id: str, revision_id: str) -> Revision:
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM revisions WHERE user_id = ? AND id = ?", (user_id, revision_id)
            ).fetchall()
        )
        if not rows:
            raise NotFoundError(f"no revision with id {shown(revision_id)}")
        return _revision(rows[0])

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> int:
        if scope.memory_id is not None:
            where, args = "user_id = ? AND memory_id = ?", [scope.user_id, scope.memory_id]
        elif scope.thread_id is not None:
            where, args = "user_id = ? AND thread_id = ?", [scope.user_id, scope.thread_id]
        elif scope.everything:
            where, args = "user_id = ?", [scope.user_id]
        else:
            raise InvalidInputError("a forget scope names a memory, a thread or everything")

        def work(conn: sqlite3.Connection) -> int:
            if dry_run:
                return int(conn.execute(f"SELECT count(*) FROM revisions WHERE {where}", args).fetchone()[0])
            return conn.execute(f"DELETE FROM revisions WHERE {where}", args).rowcount

        return await self._db.write(work)

    async def prune(self, before: datetime) -> int:
        return await self._db.write(
            lambda conn: conn.execute("DELETE FROM revisions WHERE created_at < ?", (ts(before),)).rowcount
        )


class SqliteTriggerCounters:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def increment(
        self, user_id: str, key: str, *, by: int = 1, ttl_seconds: float | None = None
    ) -> int:
        now = time.time()
        expires = now + ttl_seconds if ttl_seconds is not None else None

        def work(conn: sqlite3.Connection) -> int:
            # An expired window counts from zero again; expired windows of other keys go too.
            conn.execute(
                "DELETE FROM learning_counters WHERE user_id = ? AND expires IS NOT NULL AND expires <= ?",
                (user_id, now),
            )
            row = conn.execute(
                "INSERT INTO learning_counters (user_id, key, number, expires) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (user_id, key) DO UPDATE SET number = number + excluded.number"
                " RETURNING number",
                (user_id, key, by, expires),
            ).fetchone()
            return int(row[0])

        return await self._db.write(work)

    async def read(self, user_id: str, key: str) -> str | None:
        rows = await self._db.run(
            lambda conn: conn.execute(
                "SELECT mark FROM learning_counters WHERE user_id = ? AND key = ?", (user_id, key)
            ).fetchall()
        )
        return rows[0][0] if rows else None

    async def compare_and_set(self, user_id: str, key: str, expected: str | None, value: str) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            rows = conn.execute(
                "SELECT mark FROM learning_counters WHERE user_id = ? AND key = ?", (user_id, key)
            ).fetchall()
            current = rows[0][0] if rows else None
            if current != expected:
                return False
            conn.execute(
                "INSERT INTO learning_counters (user_id, key, number, mark) VALUES (?, ?, 0, ?)"
                " ON CONFLICT (user_id, key) DO UPDATE SET mark = excluded.mark",
                (user_id, key, value),
            )
            return True

        return await self._db.write(work)

    async def forget(self, user_id: str, *, prefix: str = "") -> int:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return await self._db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM learning_counters WHERE user_id = ? AND key LIKE ? ESCAPE '\\'",
                    (user_id, pattern),
                ).rowcount
            )
        )


def _revision(r: Sequence[Any]) -> Revision:
    return Revision(
        id=r[0],
        user_id=r[1],
        memory_id=r[2],
        thread_id=r[3],
        memory_type=r[4],
        seq=r[5],
        action=r[6],
        cause=r[7],
        content=r[8],
        metadata=json.loads(r[9]),
        superseded_by=r[10],
        supersede_reason=r[11],
        source_text=r[12],
        labels=json.loads(r[13]),
        created_at=r[14],
    )
