"""Long-term memory on the embedded SQLite file; search runs on per-user in-memory indexes built from it.

The file holds the memories; storage/sqlite/indexes.py keeps each user's BM25 text index and vector
matrix true to it, however many processes write to it. Each write here takes the next number of the
file's change clock and each deletion leaves a tombstone, which is what those indexes catch up from.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import anyio.to_thread
import numpy as np

from mcp_memory.audit import context as audit_context
from mcp_memory.audit.records import MAX_IDS
from mcp_memory.config import LongTermSettings
from mcp_memory.errors import InvalidInputError, NotFoundError, shown
from mcp_memory.models import EmbeddingSpec, Hit, ListQuery, Memory, Scope, ThreadInfo
from mcp_memory.search.hybrid import row_filter
from mcp_memory.search.passages import ONE_PASSAGE_CHARS, passages
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import SearchesBy
from mcp_memory.storage.sqlite import usage as sqlite_usage
from mcp_memory.storage.sqlite.codec import pack_vector, pack_vectors, parse_ts, ts
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.indexes import TOMBSTONE_DAYS, SearchIndexes
from mcp_memory.storage.sqlite.memory_rows import COLUMNS, current_at, memory_of_row, narrowed
from mcp_memory.storage.sqlite.search import SqliteSearch, best_of, cosines_of
from mcp_memory.storage.sqlite.snapshots import user_key
from mcp_memory.storage.usage import Quota

# The setting's own default, so a store opened without settings (tests, benchmarks) holds the same.
DEFAULT_INDEX_MEMORY = LongTermSettings.model_fields["index_memory_mb"].default * 2**20


class SqliteLongTermStore(SearchesBy):
    def __init__(
        self,
        db: SqliteDatabase,
        embedding: EmbeddingSpec,
        indexes: SearchIndexes,
        *,
        max_stored_bytes: Quota = None,
    ) -> None:
        self._db = db
        self._spec = embedding
        self.indexes = indexes
        self._max_stored_bytes = max_stored_bytes  # security.max_stored_bytes, checked in put()
        self._search: SqliteSearch = SqliteSearch(db, indexes)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        db: SqliteDatabase,
        embedding: EmbeddingSpec,
        *,
        index_memory: int = DEFAULT_INDEX_MEMORY,
        ann_min_memories: int = 0,
        ann_expansion: int = 2048,
        max_stored_bytes: Quota = None,
    ) -> AsyncIterator[SqliteLongTermStore]:
        async with SearchIndexes.open(
            db,
            embedding,
            memory_budget=index_memory,
            ann_min_rows=ann_min_memories,
            ann_expansion=ann_expansion,
        ) as indexes:
            store = cls(db, embedding, indexes, max_stored_bytes=max_stored_bytes)
            await db.write(store._check_embedding_spec)
            yield store

    def _check_embedding_spec(self, conn: sqlite3.Connection) -> None:
        stored = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'embedding_%'").fetchall())
        if not stored:
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("embedding_model", self._spec.model), ("embedding_dimension", str(self._spec.dimension))],
            )
            return
        self._spec.check_stored(
            stored.get("embedding_model"),
            stored.get("embedding_dimension"),
            str(self._db.path),
            "another data file",
        )

    async def put(self, memories: Sequence[Memory]) -> None:
        self._spec.check_vectors(memories)

        def work(conn: sqlite3.Connection) -> None:
            before = sqlite_usage.stored_bytes(conn, {m.user_id for m in memories})
            seq = _tick(conn)
            conn.executemany(
                "INSERT INTO memories (id, user_id, thread_id, role, type, content, index_context, embedding,"
                " metadata, created_at, updated_at, token_count, content_hash, superseded_by,"
                " supersede_reason, superseded_at, author, passage_embeddings, change_seq)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (user_id, id) DO UPDATE SET thread_id = excluded.thread_id,"
                " role = excluded.role, type = excluded.type, content = excluded.content,"
                " index_context = excluded.index_context, embedding = excluded.embedding,"
                " passage_embeddings = excluded.passage_embeddings,"
                " metadata = excluded.metadata, updated_at = excluded.updated_at,"
                " token_count = excluded.token_count, content_hash = excluded.content_hash,"
                " superseded_by = excluded.superseded_by, supersede_reason = excluded.supersede_reason,"
                " superseded_at = excluded.superseded_at, author = excluded.author,"
                " change_seq = excluded.change_seq",
                [(*_row(m), seq) for m in memories],
            )
            sqlite_usage.refuse_over_quota(conn, before, self._max_stored_bytes)  # the usage triggers counted

        # The indexes are not touched here: they catch up on this write through the change clock, like
        # on every other, in the background in this process (soon) and at the next search in any other.
        audit_context.note(m.id for m in memories)
        await self._db.write(work, change=True)
        for user_id in {m.user_id for m in memories}:
            self.indexes.refresh_soon(user_id)

    async def stored_bytes(self, user_id: str) -> int:
        return (await self._db.run(lambda conn: sqlite_usage.stored_bytes(conn, [user_id])))[user_id]

    async def get(self, user_id: str, memory_id: str) -> Memory:
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS}, embedding, passage_embeddings FROM memories WHERE user_id = ? AND id = ?",
                (user_id, memory_id),
            ).fetchall()
        )
        if not rows:
            raise NotFoundError(f"no memory with id {shown(memory_id)}")
        return memory_of_row(rows[0], with_embedding=True)

    async def recent(
        self, user_id: str, thread_id: str, *, limit: int, types: Sequence[str] = ("turn",)
    ) -> list[Memory]:
        marks = ",".join("?" * len(types))
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE user_id = ? AND thread_id = ? AND type IN ({marks})"
                " AND superseded_by IS NULL ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (user_id, thread_id, *types, limit),
            ).fetchall()
        )
        return [memory_of_row(r) for r in reversed(rows)]

    async def list_threads(self, user_id: str) -> list[ThreadInfo]:
        rows = await self._db.run(
            lambda conn: conn.execute(
                "SELECT thread_id, sum(type = 'turn'), max(created_at) FROM memories"
                " WHERE user_id = ? AND thread_id IS NOT NULL AND superseded_by IS NULL"
                " GROUP BY thread_id ORDER BY max(created_at) DESC",
                (user_id,),
            ).fetchall()
        )
        return [ThreadInfo(thread_id=r[0], message_count=r[1], updated_at=parse_ts(r[2])) for r in rows]

    async def list_memories(self, query: ListQuery) -> list[Memory]:
        clauses, args = ["user_id = ?"], [query.user_id]
        narrowed(clauses, args, query)
        if query.kind is not None:
            clauses.append("json_extract(metadata, '$.fact_type') = ?")
            args.append(query.kind)
        if not query.include_superseded:
            clauses.append(current_at(query.as_of, args))
        elif query.as_of is not None:
            clauses.append("created_at <= ?")
            args.append(ts(query.as_of))
        direction = "DESC" if query.order == "newest" else "ASC"
        if query.after is not None:
            clauses.append(f"(created_at, id) {'<' if query.order == 'newest' else '>'} (?, ?)")
            args += [ts(query.after[0]), query.after[1]]
        rows = await self._db.read(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(clauses)}"
                f" ORDER BY created_at {direction}, id {direction} LIMIT ?",
                (*args, query.limit),
            ).fetchall()
        )
        return [memory_of_row(r) for r in rows]

    async def warm(self, user_id: str) -> None:
        await self.indexes.warm(user_id)

    def index_memory_bytes(self) -> int:
        """What the in-memory search indexes of this process hold (an estimate), for operations."""
        return self.indexes.memory_bytes()

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> dict[str, int]:
        if scope.memory_id is not None:
            where, args = "user_id = ? AND id = ?", [scope.user_id, scope.memory_id]
        elif scope.thread_id is not None:
            where, args = "user_id = ? AND thread_id = ?", [scope.user_id, scope.thread_id]
        elif scope.everything:
            where, args = "user_id = ?", [scope.user_id]
        else:
            raise InvalidInputError("a forget scope names a memory, a thread or everything")
        draft = None if dry_run else audit_context.pending()

        def work(conn: sqlite3.Connection) -> dict[str, int]:
            counts = dict(
                conn.execute(f"SELECT type, count(*) FROM memories WHERE {where} GROUP BY type", args)
            )
            if dry_run or not counts:
                return counts
            if draft is not None:  # the ids this forget removes, for its audit record
                ids = conn.execute(f"SELECT id FROM memories WHERE {where} LIMIT {MAX_IDS + 1}", args)
                draft.note((r[0] for r in ids), counts)
            seq, now = _tick(conn), time.time()
            conn.execute(
                f"INSERT INTO memory_tombstones (seq, user_key, row, deleted_at)"
                f" SELECT ?, ?, rowid, ? FROM memories WHERE {where}",
                (seq, user_key(scope.user_id), now, *args),
            )
            conn.execute(f"DELETE FROM memories WHERE {where}", args)
            _prune_tombstones(conn, now - TOMBSTONE_DAYS * 86400)
            return counts

        counts = await self._db.write(work, change=True)
        if counts and not dry_run:
            await self.indexes.forgotten(scope.user_id)
        return counts

    # ---- learning --------------------------------------------------------------------------

    @property
    def db(self) -> SqliteDatabase:
        """The data file, shared with the revision and trigger-counter stores."""
        return self._db

    async def find_by_hash(self, user_id: str, content_hash: str, *, types: Sequence[str]) -> list[Memory]:
        marks = ",".join("?" * len(types))
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE user_id = ? AND content_hash = ? AND type IN ({marks})"
                " AND superseded_by IS NULL ORDER BY rowid",
                (user_id, content_hash, *types),
            ).fetchall()
        )
        return [memory_of_row(r) for r in rows]

    async def similar(
        self, user_id: str, vector: list[float], *, types: Sequence[str], min_similarity: float, limit: int
    ) -> list[Hit]:
        query = SearchQuery(text="", mode="vector", types=list(types), limit=limit)
        query_vector = np.asarray(vector, dtype=np.float32)
        async with self.indexes.current(user_id) as index:
            ranked = await anyio.to_thread.run_sync(
                index.vectors.search, query_vector, limit, row_filter(query)
            )
            found = [(r, s) for r, s in ranked if s >= min_similarity]
            by_key = await cosines_of(index.vectors, best_of(found, query), query_vector, [])
        return await self._search.read_hits(user_id, found, query, by_key)

    async def list_active(
        self, user_id: str, *, types: Sequence[str], limit: int, changed_since: datetime | None = None
    ) -> list[Memory]:
        marks = ",".join("?" * len(types))
        since = "" if changed_since is None else " AND coalesce(updated_at, created_at) > ?"
        args: list[Any] = [user_id, *types] + ([] if changed_since is None else [ts(changed_since)])
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE user_id = ? AND type IN ({marks})"
                f" AND superseded_by IS NULL{since}"
                " ORDER BY coalesce(updated_at, created_at) DESC, rowid DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
        )
        return [memory_of_row(r) for r in rows]

    async def memories_of(self, user_id: str) -> list[Memory]:
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE user_id = ? ORDER BY created_at, rowid", (user_id,)
            ).fetchall()
        )
        return [memory_of_row(r) for r in rows]

    async def set_embeddings(self, user_id: str, vectors: Mapping[str, Sequence[Sequence[float]]]) -> int:
        """Each memory's passage vectors (one row a passage; search/passages.py), written late."""
        # An UPDATE, never an upsert: a turn forgotten while its vector was computing stays forgotten.
        # The change clock ticks, so every process's vector index picks the vectors up.
        rows = {
            memory_id: [list(v) for v in passage_vectors] for memory_id, passage_vectors in vectors.items()
        }
        self._spec.check_vectors(
            [Memory(id=i, user_id=user_id, content=".", embedding=v[0]) for i, v in rows.items()]
        )

        def work(conn: sqlite3.Connection) -> int:
            seq = _tick(conn)
            cursor = conn.executemany(
                "UPDATE memories SET embedding = ?, passage_embeddings = ?, change_seq = ?"
                " WHERE user_id = ? AND id = ?",
                [
                    (pack_vector(v[0]), pack_vectors(v if len(v) > 1 else None), seq, user_id, memory_id)
                    for memory_id, v in rows.items()
                ],
            )
            return cursor.rowcount

        written = int(await self._db.write(work))
        self.indexes.refresh_soon(user_id)
        return written

    async def set_index_contexts(self, user_id: str, contexts: Mapping[str, str]) -> int:
        # An UPDATE, as set_embeddings: a turn forgotten meanwhile stays forgotten. The change clock
        # ticks, so every process's text index re-reads these rows.
        def work(conn: sqlite3.Connection) -> int:
            seq = _tick(conn)
            cursor = conn.executemany(
                "UPDATE memories SET index_context = ?, change_seq = ? WHERE user_id = ? AND id = ?",
                [(context, seq, user_id, memory_id) for memory_id, context in contexts.items()],
            )
            return cursor.rowcount

        if not contexts:
            return 0
        written = int(await self._db.write(work))
        self.indexes.refresh_soon(user_id)
        return written

    async def turns_around(self, user_id: str, memory_id: str, *, reach: int) -> list[Memory]:
        def read(conn: sqlite3.Connection) -> list[Any]:
            found = conn.execute(
                "SELECT thread_id, created_at, rowid FROM memories WHERE user_id = ? AND id = ?",
                (user_id, memory_id),
            ).fetchone()
            if found is None or found[0] is None:
                return []
            turns = f"SELECT {COLUMNS} FROM memories WHERE user_id = ? AND thread_id = ? AND type = 'turn'"
            turns += " AND superseded_by IS NULL AND (created_at, rowid)"
            earlier = conn.execute(
                f"{turns} < (?, ?) ORDER BY created_at DESC, rowid DESC LIMIT ?", (user_id, *found, reach)
            ).fetchall()
            later = conn.execute(
                f"{turns} >= (?, ?) ORDER BY created_at, rowid LIMIT ?", (user_id, *found, reach + 1)
            ).fetchall()
            return [*reversed(earlier), *later]

        return [memory_of_row(r) for r in await self._db.run(read)]

    async def unembedded_turns(self, limit: int) -> list[Memory]:
        # Turns and thread summaries (both embedded late) without a vector, or long (search/passages.py)
        # with their first passage's only.
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {COLUMNS}, embedding IS NULL FROM memories WHERE type IN ('turn', 'summary')"
                " AND (embedding IS NULL"
                f" OR (passage_embeddings IS NULL AND length(content) > {ONE_PASSAGE_CHARS}))"
                " ORDER BY created_at, rowid LIMIT ?",
                (limit,),
            ).fetchall()
        )
        return [memory_of_row(r) for r in rows if r[-1] or len(passages(r[6])) > 1]

    async def memory_ids(self, user_id: str, prefix: str, limit: int) -> list[str]:
        # A range on the (user_id, id) unique index; ids are ASCII, so U+10FFFF bounds every extension.
        rows = await self._db.run(
            lambda conn: conn.execute(
                "SELECT id FROM memories WHERE user_id = ? AND id >= ? AND id < ?"
                " AND superseded_by IS NULL ORDER BY id LIMIT ?",
                (user_id, prefix, prefix + "\U0010ffff", limit),
            ).fetchall()
        )
        return [r[0] for r in rows]


def _tick(conn: sqlite3.Connection) -> int:
    """The change clock's next number, for the rows this transaction writes or deletes."""
    seq: int = conn.execute("UPDATE change_clock SET seq = seq + 1 RETURNING seq").fetchone()[0]
    return seq


def _prune_tombstones(conn: sqlite3.Connection, before: float) -> None:
    """Tombstones older than `before` go; an index that has not caught up past them is rebuilt."""
    pruned = conn.execute(
        "DELETE FROM memory_tombstones WHERE deleted_at < ? RETURNING seq", (before,)
    ).fetchall()
    if pruned:
        conn.execute(
            "UPDATE meta SET value = max(CAST(value AS INTEGER), ?) WHERE key = 'tombstone_horizon'",
            (max(r[0] for r in pruned),),
        )


def _row(m: Memory) -> tuple[Any, ...]:
    return (
        m.id,
        m.user_id,
        m.thread_id,
        m.role,
        m.type,
        m.content,
        m.index_context or "",
        pack_vector(m.embedding),
        json.dumps(m.metadata),
        ts(m.created_at),
        ts(m.updated_at) if m.updated_at else None,
        m.token_count,
        m.content_hash,
        m.superseded_by,
        m.supersede_reason,
        ts(m.superseded_at) if m.superseded_at else None,
        m.author,
        pack_vectors(m.passage_embeddings),
    )
