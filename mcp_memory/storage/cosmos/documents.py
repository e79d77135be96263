"""How a Memory is laid out as a Cosmos DB document, and back. Pure functions, no I/O.

Layout (both containers share it):
- hierarchical partition key (/user_id, /thread_id); a memory without a thread (a fact about the user,
  the user summary) is stored under USER_THREAD, a thread id the product never issues;
- `created_at` as a fixed-width UTC ISO string, so string order is time order (ORDER BY, ranges);
- `index_text`: what full-text search indexes: the content, plus Memory.index_context when there is one;
- `doc_hash`: a hash of the whole document, so re-writing an unchanged memory can be skipped;
- `changed_at`: updated_at, else created_at (same format), so "most recently changed first" is one
  indexed ORDER BY (Cosmos DB cannot order by an expression);
- `passage_spans` and `passage_version` only on a memory of 2+ passages (cosmos/passages.py);
- `ttl` only on turns when a turn TTL is configured (containers run with defaultTtl -1: TTL on,
  nothing expires unless the item says so).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

from mcp_memory.models import Memory, MemoryType
from mcp_memory.storage.cosmos.passages import passage_version

# Outside THREAD_ID_PATTERN ([A-Za-z0-9._:-]) on purpose: no real thread can collide with it.
USER_THREAD = "~user"
# The store's own documents (the embedding spec) live under this user, which no real user can be.
SYSTEM_USER = "~system"
# One document per (user, thread) in the memories container: lists a user's threads with one query.
THREAD_ENTRY_TYPE = "thread_entry"

TURN_TYPES: tuple[MemoryType, ...] = ("turn",)
DERIVED_TYPES: tuple[MemoryType, ...] = ("summary", "fact", "user_summary", "observation")

# Every field a read returns except the vector (a 1536-float embedding is most of a document's size).
MEMORY_FIELDS = (
    "id",
    "user_id",
    "thread_id",
    "role",
    "type",
    "content",
    "index_text",
    "index_context",
    "metadata",
    "created_at",
    "updated_at",
    "token_count",
    "content_hash",
    "superseded_by",
    "supersede_reason",
    "superseded_at",
    "author",
    "passage_spans",
    "passage_version",
)


def timestamp(value: datetime) -> str:
    """Fixed-width UTC ISO-8601 (microseconds, Z): lexicographic order equals time order."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def partition_thread(thread_id: str | None) -> str:
    return USER_THREAD if thread_id is None else thread_id


def to_document(
    memory: Memory, *, turn_ttl_seconds: int | None, passage_spans: list[list[int]] | None = None
) -> dict[str, Any]:
    """The memory item. `passage_spans`: the spans of a memory of 2+ passages, whose further passages
    are items of their own (cosmos/passages.py); its `embedding` is then the first passage's."""
    doc: dict[str, Any] = {
        "id": memory.id,
        "user_id": memory.user_id,
        "thread_id": partition_thread(memory.thread_id),
        "role": memory.role,
        "type": memory.type,
        "content": memory.content,
        "index_text": index_text(memory.content, memory.index_context),
        "index_context": memory.index_context,
        "metadata": memory.metadata,
        "created_at": timestamp(memory.created_at),
        "updated_at": timestamp(memory.updated_at) if memory.updated_at else None,
        "changed_at": timestamp(memory.updated_at or memory.created_at),
        "token_count": memory.token_count,
        "content_hash": memory.content_hash,
        # Always written (null when live) so the superseded filter works on a plain equality too.
        "superseded_by": memory.superseded_by,
        "supersede_reason": memory.supersede_reason,
        "superseded_at": timestamp(memory.superseded_at) if memory.superseded_at else None,
    }
    if memory.author is not None:  # who wrote it, in a shared space
        doc["author"] = memory.author
    if memory.embedding is not None:
        doc["embedding"] = memory.embedding
    if memory.type == "turn" and turn_ttl_seconds is not None:
        doc["ttl"] = turn_ttl_seconds
    if passage_spans:
        doc["passage_spans"] = passage_spans
        doc["passage_version"] = passage_version(memory.content_hash)
    doc["doc_hash"] = document_hash(doc)
    return doc


def index_text(content: str, index_context: str | None) -> str:
    """One full-text field in Cosmos DB: the content and its context together."""
    return f"{content}\n{index_context}" if index_context else content


def context_patch(doc: dict[str, Any], index_context: str, *, now: float) -> list[dict[str, Any]]:
    """The patch operations that give a stored turn (`doc`, read whole: the hash covers the vector too)
    a new index_context: the context, the full-text field built from it, the document hash, and the
    TTL. Cosmos DB counts an item's TTL from its last write (_ts), so the TTL is shortened by the time
    since then (`now`, epoch seconds): a rewritten context never keeps a turn longer. No operations
    when the turn holds this context already."""
    new = dict(doc)
    new["index_context"] = index_context
    new["index_text"] = index_text(doc["content"], index_context)
    if all(new[k] == doc.get(k) for k in ("index_context", "index_text")):
        return []
    ttl, written = doc.get("ttl"), doc.get("_ts")
    if isinstance(ttl, int) and ttl > 0 and isinstance(written, int | float):
        new["ttl"] = max(1, ttl - math.ceil(max(0.0, now - written)))
    new["doc_hash"] = document_hash(new)
    changed = ("index_context", "index_text", "ttl", "doc_hash")
    return [
        {"op": "set", "path": f"/{k}", "value": new[k]} for k in changed if k in new and new[k] != doc.get(k)
    ]


def document_hash(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "doc_hash" and not k.startswith("_")}
    if isinstance(body.get("embedding"), list):  # read back, a whole float (0.0) is an int (0)
        body["embedding"] = [float(x) for x in body["embedding"]]
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def from_document(doc: dict[str, Any]) -> Memory:
    thread_id = doc.get("thread_id")
    content = doc["content"]
    return Memory(
        id=doc["id"],
        user_id=doc["user_id"],
        thread_id=None if thread_id == USER_THREAD else thread_id,
        role=doc.get("role"),
        type=doc["type"],
        content=content,
        index_context=doc.get("index_context"),
        embedding=doc.get("embedding"),
        metadata=doc.get("metadata") or {},
        created_at=doc["created_at"],
        updated_at=doc.get("updated_at"),
        token_count=doc.get("token_count") or 0,
        content_hash=doc.get("content_hash") or "",
        superseded_by=doc.get("superseded_by"),
        supersede_reason=doc.get("supersede_reason"),
        superseded_at=doc.get("superseded_at"),
        author=doc.get("author"),
    )


def thread_entry(user_id: str, thread_id: str) -> dict[str, Any]:
    """The marker that a thread exists; its numbers are counted from the memories when listed, so it
    never drifts and writing it twice is harmless."""
    return {
        "id": f"{THREAD_ENTRY_TYPE}:{thread_id}",
        "user_id": user_id,
        "thread_id": thread_id,
        "type": THREAD_ENTRY_TYPE,
    }
