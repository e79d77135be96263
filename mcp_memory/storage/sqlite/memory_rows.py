"""A memory as a row of the `memories` table: the columns read, the row read back as a Memory, and the
conditions every read shares (what is current, and a search's or a listing's narrowing)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mcp_memory.models import ListQuery, Memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.sqlite.codec import ts, unpack_passages, unpack_vector

COLUMNS = (
    "rowid, id, user_id, thread_id, role, type, content, metadata, created_at, updated_at, token_count,"
    " content_hash, superseded_by, supersede_reason, superseded_at, author"
)


def current_at(as_of: datetime | None, args: list[Any]) -> str:
    """The condition that a memory is current: not superseded, or, as of a moment, created by then and
    superseded (if ever) after it. Appends its arguments. The one place SQLite says what "current" is."""
    if as_of is None:
        return "superseded_by IS NULL"
    args += [ts(as_of), ts(as_of)]
    return "created_at <= ? AND (superseded_by IS NULL OR superseded_at > ?)"


def narrowed(clauses: list[str], args: list[Any], query: SearchQuery | ListQuery) -> None:
    """Append the thread, type and creation-time conditions a search or a listing asks for."""
    if query.thread_id is not None:
        clauses.append("thread_id = ?")
        args.append(query.thread_id)
    if isinstance(query, SearchQuery) and query.threads is not None:
        clauses.append(f"thread_id IN ({','.join('?' * len(query.threads))})")  # SQLite allows IN ()
        args += query.threads
    if query.types:
        clauses.append(f"type IN ({','.join('?' * len(query.types))})")
        args += query.types
    for clause, moment in (("created_at >= ?", query.since), ("created_at <= ?", query.until)):
        if moment is not None:
            clauses.append(clause)
            args.append(ts(moment))


def memory_of_row(r: Sequence[Any], *, with_embedding: bool = False) -> Memory:
    """The memory of a row read with COLUMNS (and, `with_embedding`, embedding, passage_embeddings)."""
    embedding = unpack_vector(r[16]) if with_embedding and len(r) > 16 else None
    passages = unpack_passages(r[16], r[17]) if embedding is not None and len(r) > 17 and r[17] else None
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
        author=r[15],
        embedding=embedding.tolist() if embedding is not None else None,
        passage_embeddings=passages.tolist() if passages is not None else None,
    )
