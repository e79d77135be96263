"""Working memory on the embedded SQLite file. Each method is one transaction, so each is atomic."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence

from mcp_memory.errors import InvalidInputError
from mcp_memory.models import Message, Scope, ThreadInfo, ThreadTotals, WorkingMemory, utcnow
from mcp_memory.storage.base import WorkingForgetCount
from mcp_memory.storage.sqlite.codec import parse_ts, ts
from mcp_memory.storage.sqlite.db import SqliteDatabase


class SqliteWorkingMemoryStore:
    """Threads and their messages in two tables. SQLite keeps no TTL: threads live until forgotten."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def append(
        self, user_id: str, thread_id: str, message: Message, *, context_window: int | None = None
    ) -> ThreadTotals:
        def work(conn: sqlite3.Connection) -> ThreadTotals:
            _ensure_thread(conn, user_id, thread_id)
            # Idempotent by message id: a client retrying after a lost reply appends once.
            inserted = conn.execute(
                "INSERT OR IGNORE INTO messages"
                " (user_id, thread_id, id, role, content, metadata, created_at, token_count, author)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user_id,
                    thread_id,
                    message.id,
                    message.role,
                    message.content,
                    json.dumps(message.metadata),
                    ts(message.created_at),
                    message.token_count,
                    message.author,
                ),
            )
            added = inserted.rowcount
            conn.execute(
                "UPDATE threads SET token_count = token_count + ?, message_count = message_count + ?,"
                " context_window = COALESCE(?, context_window), updated_at = ?"
                " WHERE user_id = ? AND thread_id = ?",
                (message.token_count * added, added, context_window, ts(utcnow()), user_id, thread_id),
            )
            row = conn.execute(
                "SELECT token_count, message_count, context_window FROM threads WHERE user_id = ? AND thread_id = ?",
                (user_id, thread_id),
            ).fetchone()
            return ThreadTotals(token_count=row[0], message_count=row[1], context_window=row[2])

        return await self._db.write(work)

    async def get(self, user_id: str, thread_id: str) -> WorkingMemory | None:
        def work(conn: sqlite3.Connection) -> WorkingMemory | None:
            row = conn.execute(
                "SELECT summary, summary_tokens, summary_version, context_window, data, updated_at"
                " FROM threads WHERE user_id = ? AND thread_id = ?",
                (user_id, thread_id),
            ).fetchone()
            if row is None:
                return None
            messages = [
                Message(
                    id=m[0],
                    role=m[1],
                    content=m[2],
                    metadata=json.loads(m[3]),
                    created_at=m[4],
                    token_count=m[5],
                    author=m[6],
                )
                for m in conn.execute(
                    "SELECT id, role, content, metadata, created_at, token_count, author FROM messages"
                    " WHERE user_id = ? AND thread_id = ? ORDER BY seq",
                    (user_id, thread_id),
                )
            ]
            return WorkingMemory(
                user_id=user_id,
                thread_id=thread_id,
                messages=messages,
                summary=row[0],
                summary_token_count=row[1],
                summary_version=row[2],
                context_window=row[3],
                data=json.loads(row[4]),
                updated_at=parse_ts(row[5]),
            )

        return await self._db.run(work)

    async def exists(self, user_id: str, thread_id: str) -> bool:
        row = await self._db.run(
            lambda conn: conn.execute(
                "SELECT 1 FROM threads WHERE user_id = ? AND thread_id = ?", (user_id, thread_id)
            ).fetchone()
        )
        return row is not None

    async def restore(self, memory: WorkingMemory) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            exists = conn.execute(
                "SELECT 1 FROM threads WHERE user_id = ? AND thread_id = ?",
                (memory.user_id, memory.thread_id),
            ).fetchone()
            if exists:
                return False
            conn.execute(
                "INSERT INTO threads (user_id, thread_id, summary, summary_tokens, summary_version,"
                " context_window, data, token_count, message_count, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    memory.user_id,
                    memory.thread_id,
                    memory.summary,
                    memory.summary_token_count,
                    memory.summary_version,
                    memory.context_window,
                    json.dumps(memory.data),
                    memory.token_count,
                    len(memory.messages),
                    ts(utcnow()),
                ),
            )
            conn.executemany(
                "INSERT INTO messages (user_id, thread_id, id, role, content, metadata, created_at, token_count,"
                " author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        memory.user_id,
                        memory.thread_id,
                        m.id,
                        m.role,
                        m.content,
                        json.dumps(m.metadata),
                        ts(m.created_at),
                        m.token_count,
                        m.author,
                    )
                    for m in memory.messages
                ],
            )
            return True

        return await self._db.write(work)

    async def compact(
        self,
        user_id: str,
        thread_id: str,
        *,
        expected_version: int,
        removed_ids: Sequence[str],
        summary: str,
        summary_token_count: int,
    ) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT summary_version, summary FROM threads WHERE user_id = ? AND thread_id = ?",
                (user_id, thread_id),
            ).fetchone()
            if row is None:
                return False
            if (
                row[0] == expected_version + 1
                and row[1] == summary
                and not _any_present(conn, user_id, thread_id, removed_ids)
            ):
                return True  # this very compaction already happened: a retry after a lost reply
            if row[0] != expected_version:
                return False
            oldest = conn.execute(
                "SELECT seq, id FROM messages WHERE user_id = ? AND thread_id = ? ORDER BY seq LIMIT ?",
                (user_id, thread_id, len(removed_ids)),
            ).fetchall()
            if [m[1] for m in oldest] != list(removed_ids):
                return False
            if oldest:
                conn.execute(
                    "DELETE FROM messages WHERE user_id = ? AND thread_id = ? AND seq <= ?",
                    (user_id, thread_id, oldest[-1][0]),
                )
            _set_summary_and_recount(conn, user_id, thread_id, summary, summary_token_count)
            return True

        return await self._db.write(work)

    async def set_data(self, user_id: str, thread_id: str, data: dict[str, object]) -> None:
        def work(conn: sqlite3.Connection) -> None:
            _ensure_thread(conn, user_id, thread_id)
            conn.execute(
                "UPDATE threads SET data = ?, updated_at = ? WHERE user_id = ? AND thread_id = ?",
                (json.dumps(data), ts(utcnow()), user_id, thread_id),
            )

        await self._db.write(work)

    async def try_lock(self, user_id: str, thread_id: str, owner: str, ttl_seconds: float) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            now = time.time()
            # Free, expired, or already ours (a re-arm): take it.
            cursor = conn.execute(
                "INSERT INTO leases (user_id, thread_id, owner, expires) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (user_id, thread_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires"
                " WHERE leases.expires < ? OR leases.owner = excluded.owner",
                (user_id, thread_id, owner, now + ttl_seconds, now),
            )
            return cursor.rowcount == 1

        return await self._db.write(work)

    async def unlock(self, user_id: str, thread_id: str, owner: str) -> None:
        await self._db.write(
            lambda conn: conn.execute(
                "DELETE FROM leases WHERE user_id = ? AND thread_id = ? AND owner = ?",
                (user_id, thread_id, owner),
            )
        )

    async def list_threads(self, user_id: str) -> list[ThreadInfo]:
        def work(conn: sqlite3.Connection) -> list[ThreadInfo]:
            return [
                ThreadInfo(thread_id=r[0], message_count=r[1], token_count=r[2], updated_at=parse_ts(r[3]))
                for r in conn.execute(
                    "SELECT thread_id, message_count, token_count, updated_at FROM threads"
                    " WHERE user_id = ? ORDER BY updated_at DESC",
                    (user_id,),
                )
            ]

        return await self._db.run(work)

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> WorkingForgetCount:
        def work(conn: sqlite3.Connection) -> WorkingForgetCount:
            if scope.memory_id is not None:
                rows = conn.execute(
                    "SELECT thread_id, seq, token_count FROM messages WHERE user_id = ? AND id = ?",
                    (scope.user_id, scope.memory_id),
                ).fetchall()
                if not dry_run:
                    for thread_id, seq, tokens in rows:
                        conn.execute("DELETE FROM messages WHERE seq = ?", (seq,))
                        conn.execute(
                            "UPDATE threads SET token_count = token_count - ?, message_count = message_count - 1"
                            " WHERE user_id = ? AND thread_id = ?",
                            (tokens, scope.user_id, thread_id),
                        )
                return WorkingForgetCount(threads=0, messages=len(rows))
            where, args = "user_id = ?", [scope.user_id]
            if scope.thread_id is not None:
                where, args = "user_id = ? AND thread_id = ?", [scope.user_id, scope.thread_id]
            elif not scope.everything:
                raise InvalidInputError("a forget scope names a memory, a thread or everything")
            threads = conn.execute(f"SELECT count(*) FROM threads WHERE {where}", args).fetchone()[0]
            messages = conn.execute(f"SELECT count(*) FROM messages WHERE {where}", args).fetchone()[0]
            if not dry_run:
                conn.execute(f"DELETE FROM messages WHERE {where}", args)
                conn.execute(f"DELETE FROM threads WHERE {where}", args)
                conn.execute(f"DELETE FROM leases WHERE {where}", args)
            return WorkingForgetCount(threads=threads, messages=messages)

        return await self._db.write(work)


def _ensure_thread(conn: sqlite3.Connection, user_id: str, thread_id: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO threads (user_id, thread_id, updated_at) VALUES (?, ?, ?)",
        (user_id, thread_id, ts(utcnow())),
    )


def _set_summary_and_recount(
    conn: sqlite3.Connection, user_id: str, thread_id: str, summary: str, summary_tokens: int
) -> None:
    # Recount from the rows rather than adjusting: the total can never drift from what is stored.
    count, tokens = conn.execute(
        "SELECT count(*), COALESCE(sum(token_count), 0) FROM messages WHERE user_id = ? AND thread_id = ?",
        (user_id, thread_id),
    ).fetchone()
    conn.execute(
        "UPDATE threads SET summary = ?, summary_tokens = ?, summary_version = summary_version + 1,"
        " token_count = ?, message_count = ?, updated_at = ? WHERE user_id = ? AND thread_id = ?",
        (summary, summary_tokens, tokens + summary_tokens, count, ts(utcnow()), user_id, thread_id),
    )


def _any_present(conn: sqlite3.Connection, user_id: str, thread_id: str, ids: Sequence[str]) -> bool:
    if not ids:
        return False
    marks = ",".join("?" * len(ids))
    row = conn.execute(
        f"SELECT 1 FROM messages WHERE user_id = ? AND thread_id = ? AND id IN ({marks}) LIMIT 1",
        (user_id, thread_id, *ids),
    ).fetchone()
    return row is not None
