"""Long-term memory on the embedded SQLite file; search runs on per-user in-memory indexes built from it.

The file holds the memories (and an FTS5 index, used for quoted phrases); each user's first search
builds a BM25 text index and a vector matrix from them (text_index, vector_index), which writes
through this store keep current.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
import numpy as np

from ..errors import InvalidInputError, NotFoundError
from ..models import Hit, Memory, Scope, SearchQuery, ThreadInfo
from ..search import keywords, rrf, score_fusion
from .base import EmbeddingSpec, QueryVector, resolve_vector
from .memory_rows import RowFilter
from .sqlite_codec import pack_vector, parse_ts, ts, unpack_vector
from .sqlite_db import SqliteDatabase
from .text_index import Document, TextIndex, query_terms
from .vector_index import VectorIndex

TEXT_CANDIDATES = 100  # BM25 candidates fused with the vector scores; the rest count as no text match

_COLUMNS = (
    "rowid, id, user_id, thread_id, role, type, content, metadata, created_at, updated_at, token_count,"
    " content_hash, superseded_by, supersede_reason, superseded_at"
)


@dataclass(frozen=True)
class _UserIndex:
    vectors: VectorIndex  # the memories that have an embedding
    text: TextIndex  # every memory

    def forget(self, rowids: Sequence[int]) -> None:
        """Drop deleted rows. BM25 statistics count active rows only, so they stay exact."""
        for rowid in rowids:
            self.text.deactivate(rowid)
            self.vectors.deactivate(rowid)

    def apply(self, memory: Memory, rowid: int) -> None:
        """Index a memory just written (new, changed or superseded)."""
        moment, active = memory.created_at.timestamp(), memory.superseded_by is None
        self.text.upsert(
            Document(
                rowid,
                memory.content,
                memory.index_context or "",
                memory.thread_id,
                memory.type,
                moment,
                active,
            )
        )
        if memory.embedding is None:
            self.vectors.deactivate(rowid)
        else:
            self.vectors.upsert(
                rowid,
                np.asarray(memory.embedding, dtype=np.float32),
                thread_id=memory.thread_id,
                type=memory.type,
                created=moment,
                active=active,
            )


class SqliteLongTermStore:
    def __init__(self, db: SqliteDatabase, embedding: EmbeddingSpec) -> None:
        self._db = db
        self._spec = embedding
        self._indexes: dict[str, _UserIndex] = {}  # per user, built on first search
        self._data_version: int | None = None
        # Users whose index is being built: the memories put meanwhile, applied once it is built (a
        # build reads the file first, and takes a second at 10k: writes must not wait or be lost).
        self._building: dict[str, list[tuple[Memory, int]]] = {}
        self._forgets = 0  # forget() calls so far: a build that spans one is read again
        self._build_lane = anyio.Lock()  # one build at a time: two searches of a new user build once

    @classmethod
    @asynccontextmanager
    async def open(cls, db: SqliteDatabase, embedding: EmbeddingSpec) -> AsyncIterator[SqliteLongTermStore]:
        store = cls(db, embedding)
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

        def work(conn: sqlite3.Connection) -> list[int]:
            rowids = []
            for m in memories:
                row = conn.execute(
                    "INSERT INTO memories (id, user_id, thread_id, role, type, content, index_context, embedding,"
                    " metadata, created_at, updated_at, token_count, content_hash, superseded_by,"
                    " supersede_reason, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (user_id, id) DO UPDATE SET thread_id = excluded.thread_id,"
                    " role = excluded.role, type = excluded.type, content = excluded.content,"
                    " index_context = excluded.index_context, embedding = excluded.embedding,"
                    " metadata = excluded.metadata, updated_at = excluded.updated_at,"
                    " token_count = excluded.token_count, content_hash = excluded.content_hash,"
                    " superseded_by = excluded.superseded_by, supersede_reason = excluded.supersede_reason,"
                    " superseded_at = excluded.superseded_at"
                    " RETURNING rowid",
                    _row(m),
                ).fetchone()
                rowids.append(row[0])
            return rowids

        rowids = await self._db.write(work)
        for memory, rowid in zip(memories, rowids, strict=True):
            index = self._indexes.get(memory.user_id)
            if index is not None:
                index.apply(memory, rowid)
            elif memory.user_id in self._building:
                self._building[memory.user_id].append((memory, rowid))

    async def get(self, user_id: str, memory_id: str) -> Memory:
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS}, embedding FROM memories WHERE user_id = ? AND id = ?",
                (user_id, memory_id),
            ).fetchall()
        )
        if not rows:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        return _memory(rows[0], with_embedding=True)

    async def recent(
        self, user_id: str, thread_id: str, *, limit: int, types: Sequence[str] = ("turn",)
    ) -> list[Memory]:
        marks = ",".join("?" * len(types))
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? AND thread_id = ? AND type IN ({marks})"
                " AND superseded_by IS NULL ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (user_id, thread_id, *types, limit),
            ).fetchall()
        )
        return [_memory(r) for r in reversed(rows)]

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

    async def search(self, query: SearchQuery, vector: QueryVector) -> list[Hit]:
        # Quoted phrases filter afterwards; widen the pools so they still leave enough.
        pool = max(query.limit * 4, 50) * (4 if query.phrases else 1)
        index = await self._index(query.user_id)
        where = _row_filter(query)
        text_hits: list[tuple[int, float]] | None = None
        if query.mode in ("hybrid", "text"):
            # First, while the query's embedding may still be computing on another core.
            text_hits = await self._text_search(index.text, query, max(pool, TEXT_CANDIDATES), where)
        ready = await resolve_vector(vector) if query.mode != "text" else None
        if ready is None:
            return await self._hits(text_hits or [], query)
        text_hits = text_hits or []
        query_vector = np.asarray(ready, dtype=np.float32)
        if query.mode == "vector" or (not text_hits and query.fusion == "rrf"):
            return await self._hits(index.vectors.search(query_vector, pool, where), query)
        if query.fusion == "score":
            keys, cosines = index.vectors.scores(query_vector, where)
            scored = score_fusion(
                text_hits,
                keys,
                cosines,
                limit=pool,
                text_weight=query.text_weight,
                vector_weight=query.vector_weight,
            )
        else:
            vector_hits = index.vectors.search(query_vector, pool, where)
            scored = rrf(
                [[r for r, _ in text_hits], [r for r, _ in vector_hits]],
                weights=[query.text_weight, query.vector_weight],
                k=query.rrf_k,
            )
        return await self._hits(scored, query)

    async def _text_search(
        self, index: TextIndex, query: SearchQuery, pool: int, where: RowFilter
    ) -> list[tuple[int, float]] | None:
        """BM25's best `pool` (rowid, score), or None when the query has no words to match."""
        # A quoted phrase's words count too (they may all be stopwords: "to be"); the rows must hold it.
        wanted = query_terms([*keywords(query.text), *query.phrases])
        if not wanted:
            return None
        only = None
        if query.phrases:
            match = " AND ".join(_quote(p) for p in query.phrases)
            rowids = await self._db.run(
                lambda conn: [
                    r[0]
                    for r in conn.execute(
                        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (match,)
                    )
                ]
            )
            only = np.asarray(rowids, dtype=np.int64)
        # Context weight: a memory's own words count fully, its context (earlier turns, date) less.
        return index.search(wanted, pool, where, context_weight=query.context_weight, only=only)

    async def warm(self, user_id: str) -> None:
        await self._index(user_id)

    async def _index(self, user_id: str) -> _UserIndex:
        """The user's search indexes, built on first use and dropped when another process writes."""
        # Another process sharing the file (a second MCP client) may have written since we built
        # them; SQLite's data_version changes exactly when another connection commits.
        data_version = await self._db.run(_data_version)
        if data_version != self._data_version:
            self._indexes.clear()
            self._data_version = data_version
        index = self._indexes.get(user_id)
        if index is None:
            async with self._build_lane:
                index = self._indexes.get(user_id) or await self._build(user_id)
        return index

    async def _build(self, user_id: str) -> _UserIndex:
        index = None
        while index is None:
            forgets, self._building[user_id] = self._forgets, []
            try:
                rows = await self._db.run(
                    lambda conn: conn.execute(
                        "SELECT rowid, thread_id, type, created_at, embedding, superseded_by, content,"
                        " index_context FROM memories WHERE user_id = ? ORDER BY rowid",
                        (user_id,),
                    ).fetchall()
                )
                # Built off the database's lane: tokenizing 10k memories takes most of a second.
                built = await anyio.to_thread.run_sync(self._build_index, rows)
            finally:
                put_meanwhile = self._building.pop(user_id)
            if forgets != self._forgets:
                continue  # deletions are not replayed: read the file again
            # Memories put meanwhile, the read may or may not have seen them: applying is idempotent.
            for memory, rowid in put_meanwhile:
                built.apply(memory, rowid)
            index = self._indexes[user_id] = built
        return index

    def _build_index(self, rows: list[tuple[Any, ...]]) -> _UserIndex:
        vectors = VectorIndex(self._spec.dimension)
        documents = []
        for rowid, thread_id, kind, created, blob, superseded, content, context in rows:
            moment = parse_ts(created).timestamp()  # type: ignore[union-attr]
            active = superseded is None
            vector = unpack_vector(blob)
            if vector is not None:
                vectors.upsert(rowid, vector, thread_id=thread_id, type=kind, created=moment, active=active)
            documents.append(Document(rowid, content, context or "", thread_id, kind, moment, active))
        return _UserIndex(vectors, TextIndex.of(documents))

    async def _hits(self, scored: Sequence[tuple[int, float]], query: SearchQuery) -> list[Hit]:
        if not scored:
            return []
        if not query.phrases:
            # Candidates were already filtered (superseded, thread, type, time): read only what is returned.
            scored = scored[: query.limit]
        scores = dict(scored)
        rowids = list(scores)
        marks = ",".join("?" * len(rowids))
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({marks}) AND superseded_by IS NULL", rowids
            ).fetchall()
        )
        by_rowid = {r[0]: _memory(r) for r in rows}
        phrases = [p.casefold() for p in query.phrases]
        hits = []
        for rowid in rowids:
            memory = by_rowid.get(rowid)
            if memory is None:
                continue
            if phrases and not all(p in memory.content.casefold() for p in phrases):
                continue
            hits.append(Hit(memory=memory, score=scores[rowid]))
            if len(hits) == query.limit:
                break
        return hits

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> dict[str, int]:
        if scope.memory_id is not None:
            where, args = "user_id = ? AND id = ?", [scope.user_id, scope.memory_id]
        elif scope.thread_id is not None:
            where, args = "user_id = ? AND thread_id = ?", [scope.user_id, scope.thread_id]
        elif scope.everything:
            where, args = "user_id = ?", [scope.user_id]
        else:
            raise InvalidInputError("a forget scope names a memory, a thread or everything")

        def work(conn: sqlite3.Connection) -> tuple[dict[str, int], list[int]]:
            counts = dict(
                conn.execute(f"SELECT type, count(*) FROM memories WHERE {where} GROUP BY type", args)
            )
            if dry_run or not counts:
                return counts, []
            deleted = [
                r[0] for r in conn.execute(f"DELETE FROM memories WHERE {where} RETURNING rowid", args)
            ]
            # Merge the full-text segments, or the forgotten words stay in the old ones.
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
            return counts, deleted

        counts, deleted = await self._db.write(work)
        if deleted:
            self._forgets += 1  # a build under way read the file before: it reads it again
            index = self._indexes.get(scope.user_id)
            if index is not None:  # a built index drops the rows, rather than being rebuilt (12 s at 100k)
                index.forget(deleted)
        return counts

    # ---- learning (issue 5) --------------------------------------------------------------------

    @property
    def db(self) -> SqliteDatabase:
        """The data file, shared with the revision and trigger-counter stores."""
        return self._db

    async def find_by_hash(self, user_id: str, content_hash: str, *, types: Sequence[str]) -> list[Memory]:
        marks = ",".join("?" * len(types))
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? AND content_hash = ? AND type IN ({marks})"
                " AND superseded_by IS NULL ORDER BY rowid",
                (user_id, content_hash, *types),
            ).fetchall()
        )
        return [_memory(r) for r in rows]

    async def similar(
        self, user_id: str, vector: list[float], *, types: Sequence[str], min_similarity: float, limit: int
    ) -> list[Hit]:
        query = SearchQuery(user_id=user_id, text="", mode="vector", types=list(types), limit=limit)
        index = await self._index(user_id)
        ranked = index.vectors.search(np.asarray(vector, dtype=np.float32), limit, _row_filter(query))
        return await self._hits([(r, s) for r, s in ranked if s >= min_similarity], query)

    async def list_active(
        self, user_id: str, *, types: Sequence[str], limit: int, changed_since: datetime | None = None
    ) -> list[Memory]:
        marks = ",".join("?" * len(types))
        since = "" if changed_since is None else " AND coalesce(updated_at, created_at) > ?"
        args: list[Any] = [user_id, *types] + ([] if changed_since is None else [ts(changed_since)])
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? AND type IN ({marks})"
                f" AND superseded_by IS NULL{since}"
                " ORDER BY coalesce(updated_at, created_at) DESC, rowid DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
        )
        return [_memory(r) for r in rows]

    async def memories_of(self, user_id: str) -> list[Memory]:
        rows = await self._db.run(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? ORDER BY created_at, rowid", (user_id,)
            ).fetchall()
        )
        return [_memory(r) for r in rows]


def _data_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA data_version").fetchone()[0]
    return version


def _row_filter(query: SearchQuery) -> RowFilter:
    return RowFilter(
        thread_id=query.thread_id,
        types=tuple(query.types) if query.types else None,
        since=query.since.timestamp() if query.since else None,
        until=query.until.timestamp() if query.until else None,
    )


def _quote(text: str) -> str:
    # An FTS5 string: operators and punctuation inside it are plain text.
    return '"' + text.replace('"', '""') + '"'


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
    )


def _memory(r: Sequence[Any], *, with_embedding: bool = False) -> Memory:
    embedding = unpack_vector(r[15]) if with_embedding and len(r) > 15 else None
    return Memory(
        id=r[1],
        user_id=r[2],
        thread_id=r[3],
        role=r[4],
        type=r[5],
        content=r[6],
        metadata=json.loads(r[7]),
        created_at=r[8],
        updated_at=r[9],
        token_count=r[10],
        content_hash=r[11],
        superseded_by=r[12],
        supersede_reason=r[13],
        superseded_at=r[14],
        embedding=embedding.tolist() if embedding is not None else None,
    )
