"""Long-term memory on the embedded SQLite file: FTS5 (BM25) for text, an in-memory matrix for vectors."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InvalidInputError, NotFoundError
from ..models import MEMORY_TYPES, Hit, Memory, Scope, SearchQuery, ThreadInfo
from ..search import keywords, rrf, score_fusion
from .base import EmbeddingSpec, QueryVector, resolve_vector
from .sqlite_codec import pack_vector, parse_ts, ts, unpack_vector
from .sqlite_db import SqliteDatabase
from .vector_index import VectorFilter, VectorIndex

TEXT_CANDIDATES = 100  # BM25 candidates fused with the vector scores; the rest count as no text match
RANK_SCAN = 4  # ranked full-text rows read per candidate needed before filtering by user and status

_COLUMNS = (
    "rowid, id, user_id, thread_id, role, type, content, metadata, created_at, updated_at, token_count,"
    " content_hash, superseded_by, supersede_reason, superseded_at"
)


class SqliteLongTermStore:
    def __init__(self, db: SqliteDatabase, embedding: EmbeddingSpec) -> None:
        self._db = db
        self._spec = embedding
        self._vectors: dict[str, VectorIndex] = {}  # per user, loaded on first vector search
        self._data_version: int | None = None

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
            index = self._vectors.get(memory.user_id)
            if index is None:
                continue
            if memory.embedding is None:
                index.deactivate(rowid)
            else:
                index.upsert(
                    rowid,
                    np.asarray(memory.embedding, dtype=np.float32),
                    thread_id=memory.thread_id,
                    type=memory.type,
                    created=memory.created_at.timestamp(),
                    active=memory.superseded_by is None,
                )

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
        text_hits: list[tuple[int, float]] | None = None
        if query.mode in ("hybrid", "text"):
            # First, while the query's embedding may still be computing on another core.
            text_hits = await self._text_search(query, max(pool, TEXT_CANDIDATES))
        ready = await resolve_vector(vector) if query.mode != "text" else None
        if ready is None:
            return await self._hits(text_hits or [], query)
        # The text search already checked whether another process wrote: one trip to SQLite fewer.
        index = await self._vector_index(query.user_id, checked=text_hits is not None)
        text_hits = text_hits or []
        where = _vector_filter(query)
        query_vector = np.asarray(ready, dtype=np.float32)
        if query.mode == "vector" or (not text_hits and query.fusion == "rrf"):
            return await self._hits(index.search(query_vector, pool, where), query)
        if query.fusion == "score":
            keys, cosines = index.scores(query_vector, where)
            scored = score_fusion(
                text_hits,
                keys,
                cosines,
                limit=pool,
                text_weight=query.text_weight,
                vector_weight=query.vector_weight,
            )
        else:
            vector_hits = index.search(query_vector, pool, where)
            scored = rrf(
                [[r for r, _ in text_hits], [r for r, _ in vector_hits]],
                weights=[query.text_weight, query.vector_weight],
                k=query.rrf_k,
            )
        return await self._hits(scored, query)

    async def _text_search(self, query: SearchQuery, pool: int) -> list[tuple[int, float]] | None:
        """BM25's best `pool` (rowid, score), or None when the query has no words to match."""
        match = _fts_query(query)
        if match is None:
            return None
        # Column weights: a memory's own words count fully, its context (earlier turns, date) less.
        rank = f"bm25(memories_fts, 1.0, {float(query.context_weight)!r})"
        # A thread or time range leaves few of the index's best rows: go straight to the joined query.
        narrowed = query.thread_id is not None or query.since is not None or query.until is not None

        def work(conn: sqlite3.Connection) -> tuple[int, list[tuple[int, float]]]:
            data_version = _data_version(conn)
            if not narrowed:
                ranked = _rank_then_filter(conn, rank, match, query, pool)
                if ranked is not None:
                    return data_version, ranked
            where, args = _filters(query, "m.")
            return data_version, conn.execute(
                # Ordered by the selected column: bm25() runs once a row, not twice.
                f"SELECT m.rowid, {rank} AS score FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid"
                f" WHERE memories_fts MATCH ? AND {where} ORDER BY score LIMIT ?",
                (match, *args, pool),
            ).fetchall()

        data_version, rows = await self._db.run(work)
        self._note_data_version(data_version)
        return [(r[0], -r[1]) for r in rows]  # bm25() is lower-is-better; report higher-is-better

    async def _vector_index(self, user_id: str, *, checked: bool = False) -> VectorIndex:
        if not checked:
            self._note_data_version(await self._db.run(_data_version))
        index = self._vectors.get(user_id)
        if index is None:
            index = await self._load_vectors(user_id)
        return index

    def _note_data_version(self, data_version: int) -> None:
        # Another process sharing the file (a second MCP client) may have written since we cached
        # vectors; SQLite's data_version changes exactly when another connection commits.
        if data_version != self._data_version:
            self._vectors.clear()
            self._data_version = data_version

    async def _load_vectors(self, user_id: str) -> VectorIndex:
        def work(conn: sqlite3.Connection) -> VectorIndex:
            index = VectorIndex(self._spec.dimension)
            for rowid, thread_id, kind, created, blob, superseded in conn.execute(
                "SELECT rowid, thread_id, type, created_at, embedding, superseded_by FROM memories"
                " WHERE user_id = ? AND embedding IS NOT NULL ORDER BY rowid",
                (user_id,),
            ):
                index.upsert(
                    rowid,
                    unpack_vector(blob),  # type: ignore[arg-type]
                    thread_id=thread_id,
                    type=kind,
                    created=parse_ts(created).timestamp(),  # type: ignore[union-attr]
                    active=superseded is None,
                )
            return index

        index = await self._db.run(work)
        self._vectors[user_id] = index
        return index

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

        def work(conn: sqlite3.Connection) -> dict[str, int]:
            counts = dict(
                conn.execute(f"SELECT type, count(*) FROM memories WHERE {where} GROUP BY type", args)
            )
            if not dry_run:
                conn.execute(f"DELETE FROM memories WHERE {where}", args)
                if counts:  # merge the full-text segments, or the forgotten words stay in the old ones
                    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
            return counts

        counts = await self._db.write(work)
        if not dry_run and counts:
            self._vectors.pop(scope.user_id, None)  # rebuilt on the next vector search
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
        index = await self._vector_index(user_id)
        ranked = index.search(np.asarray(vector, dtype=np.float32), limit, _vector_filter(query))
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


def _rank_then_filter(
    conn: sqlite3.Connection, rank: str, match: str, query: SearchQuery, pool: int
) -> list[tuple[int, float]] | None:
    """The best `pool` active memories of the user by BM25, or None when this shortcut cannot tell.

    Joining the full-text index to `memories` reads every matching row (~2 KB each, mostly its
    embedding) just to check its owner, type and whether it is superseded: most of a search's time
    at 10k memories. Ranking inside the index alone, then checking only the best few through the
    `memories_active` index (which holds exactly those columns), returns the same rows.
    """
    scan = pool * RANK_SCAN
    ranked = conn.execute(
        f"SELECT rowid, {rank} AS score FROM memories_fts WHERE memories_fts MATCH ? ORDER BY score LIMIT ?",
        (match, scan),
    ).fetchall()
    # The search's own filters (one list of them, shared with the joined query), every type named
    # even when all are wanted: with all four index columns pinned, SQLite seeks each rowid in the
    # index instead of scanning all of the user's entries.
    where, args = _filters(query.model_copy(update={"types": query.types or list(MEMORY_TYPES)}), "")
    active = {
        r[0]
        for r in conn.execute(
            f"SELECT rowid FROM memories INDEXED BY memories_active WHERE {where}"
            " AND rowid IN (SELECT value FROM json_each(?))",
            (*args, json.dumps([r[0] for r in ranked])),
        )
    }
    kept = [r for r in ranked if r[0] in active][:pool]
    # Exact when `pool` survived (anything below the scanned rows ranks lower still) or when the
    # index had no more matches; otherwise other users or superseded memories crowded the scan.
    if len(kept) == pool or len(ranked) < scan:
        return kept
    return None


def _vector_filter(query: SearchQuery) -> VectorFilter:
    return VectorFilter(
        thread_id=query.thread_id,
        types=tuple(query.types) if query.types else None,
        since=query.since.timestamp() if query.since else None,
        until=query.until.timestamp() if query.until else None,
    )


def _fts_query(query: SearchQuery) -> str | None:
    """An FTS5 MATCH expression: any of the keywords, and every quoted phrase."""
    terms = [_quote(w) for w in keywords(query.text)]
    parts = []
    if terms:
        parts.append("(" + " OR ".join(terms) + ")")
    parts.extend(_quote(p) for p in query.phrases)
    return " AND ".join(parts) if parts else None


def _quote(text: str) -> str:
    # An FTS5 string: operators and punctuation inside it are plain text.
    return '"' + text.replace('"', '""') + '"'


def _filters(query: SearchQuery, prefix: str) -> tuple[str, list[Any]]:
    clauses = [f"{prefix}user_id = ?", f"{prefix}superseded_by IS NULL"]
    args: list[Any] = [query.user_id]
    if query.thread_id is not None:
        clauses.append(f"{prefix}thread_id = ?")
        args.append(query.thread_id)
    if query.types:
        clauses.append(f"{prefix}type IN ({','.join('?' * len(query.types))})")
        args.extend(query.types)
    if query.since is not None:
        clauses.append(f"{prefix}created_at >= ?")
        args.append(ts(query.since))
    if query.until is not None:
        clauses.append(f"{prefix}created_at <= ?")
        args.append(ts(query.until))
    return " AND ".join(clauses), args


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
