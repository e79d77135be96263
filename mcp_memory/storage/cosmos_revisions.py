"""Revisions on Azure Cosmos DB: the immutable history of long-term memories (RevisionStore).

They live in the learning container (cosmos_setup.py), partitioned (/user_id, /group_id) with group_id = the
memory id, so one memory's history is one logical partition: read in one single-partition query, and
its seq made unique by the partition itself. A revision's document id is `rev:<memory digest>:<seq>`
and Cosmos DB refuses a second item with an id in one partition (409), so among any number of writers
exactly one stores each seq; a loser reads the last seq again and takes the next one.

Each revision carries `ttl` = the retention (revision_retention_days), so Azure deletes it by itself;
prune() deletes the same ones explicitly, for servers without TTL expiry and for a retention that was
shortened after the revisions were written.
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from datetime import datetime
from typing import Any

import anyio
from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from ..errors import ConflictError, InvalidInputError, NotFoundError
from ..models import Scope
from .cosmos import each_concurrently
from .cosmos_documents import timestamp
from .cosmos_errors import cosmos_errors
from .cosmos_queries import CosmosQuery
from .learning_base import Revision

REVISION_TYPE = "revision"
# Concurrent writers of one memory each lose at most once per rival; past this something is wrong.
_APPEND_ATTEMPTS = 32
_CONCURRENCY = 16
_FIELDS = (
    "revision_id",
    "user_id",
    "memory_id",
    "thread_id",
    "memory_type",
    "seq",
    "action",
    "cause",
    "content",
    "metadata",
    "superseded_by",
    "supersede_reason",
    "source_text",
    "labels",
    "created_at",
)
_SELECT = ", ".join(f"c.{name}" for name in _FIELDS)


def memory_digest(memory_id: str) -> str:
    """A fixed-length, id-safe stand-in for a memory id (ids are <= 255 chars without / \\ ? #)."""
    return hashlib.sha256(memory_id.encode()).hexdigest()[:32]


def revision_document(revision: Revision, seq: int, ttl_seconds: int | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": f"rev:{memory_digest(revision.memory_id)}:{seq}",
        "user_id": revision.user_id,
        "group_id": revision.memory_id,
        "type": REVISION_TYPE,
        "revision_id": revision.id,
        "memory_id": revision.memory_id,
        "thread_id": revision.thread_id,
        "memory_type": revision.memory_type,
        "seq": seq,
        "action": revision.action,
        "cause": revision.cause,
        "content": revision.content,
        "metadata": revision.metadata,
        "superseded_by": revision.superseded_by,
        "supersede_reason": revision.supersede_reason,
        "source_text": revision.source_text,
        "labels": revision.labels,
        "created_at": timestamp(revision.created_at),
    }
    if ttl_seconds is not None:
        doc["ttl"] = ttl_seconds
    return doc


def from_revision_document(doc: dict[str, Any]) -> Revision:
    return Revision(
        id=doc["revision_id"],
        user_id=doc["user_id"],
        memory_id=doc["memory_id"],
        thread_id=doc.get("thread_id"),
        memory_type=doc["memory_type"],
        seq=doc["seq"],
        action=doc["action"],
        cause=doc["cause"],
        content=doc["content"],
        metadata=doc.get("metadata") or {},
        superseded_by=doc.get("superseded_by"),
        supersede_reason=doc.get("supersede_reason"),
        source_text=doc.get("source_text"),
        labels=doc.get("labels") or {},
        created_at=doc["created_at"],
    )


# -- SQL (pure builders; caller values only as parameters) ---------------------------------------------


def _memory_where(user_id: str, memory_id: str) -> tuple[str, list[dict[str, Any]]]:
    return (
        "c.user_id = @user_id AND c.group_id = @memory_id AND c.type = @type",
        [
            {"name": "@user_id", "value": user_id},
            {"name": "@memory_id", "value": memory_id},
            {"name": "@type", "value": REVISION_TYPE},
        ],
    )


def last_seq_query(user_id: str, memory_id: str) -> CosmosQuery:
    where, parameters = _memory_where(user_id, memory_id)
    return CosmosQuery(
        f"SELECT TOP 1 c.seq FROM c WHERE {where} ORDER BY c.seq DESC", parameters, [user_id, memory_id]
    )


def history_query(user_id: str, memory_id: str) -> CosmosQuery:
    where, parameters = _memory_where(user_id, memory_id)
    return CosmosQuery(
        f"SELECT {_SELECT} FROM c WHERE {where} ORDER BY c.seq", parameters, [user_id, memory_id]
    )


def by_revision_id_query(user_id: str, revision_id: str) -> CosmosQuery:
    """A query within the user's prefix: the memory (second key level) is not known."""
    return CosmosQuery(
        f"SELECT {_SELECT} FROM c"
        " WHERE c.user_id = @user_id AND c.type = @type AND c.revision_id = @revision_id",
        [
            {"name": "@user_id", "value": user_id},
            {"name": "@type", "value": REVISION_TYPE},
            {"name": "@revision_id", "value": revision_id},
        ],
    )


def scope_query(scope: Scope) -> CosmosQuery:
    """forget(): the revisions of one memory, of a thread's memories (by the thread_id they carry) or of
    the whole user, with what a delete needs."""
    select = "SELECT c.id, c.user_id, c.group_id FROM c WHERE"
    if scope.memory_id is not None:
        where, parameters = _memory_where(scope.user_id, scope.memory_id)
        return CosmosQuery(f"{select} {where}", parameters, [scope.user_id, scope.memory_id])
    parameters = [{"name": "@user_id", "value": scope.user_id}, {"name": "@type", "value": REVISION_TYPE}]
    where = "c.user_id = @user_id AND c.type = @type"
    if scope.thread_id is not None:
        parameters.append({"name": "@thread_id", "value": scope.thread_id})
        return CosmosQuery(f"{select} {where} AND c.thread_id = @thread_id", parameters)
    if scope.everything:
        return CosmosQuery(f"{select} {where}", parameters)
    raise InvalidInputError("a forget scope names a memory_id, a thread_id, or everything=true")


def older_than_query(before: datetime) -> CosmosQuery:
    """prune(): every user's revisions created before `before` (cross-partition; runs daily, and the
    created_at range index keeps it to the rows it returns)."""
    return CosmosQuery(
        "SELECT c.id, c.user_id, c.group_id FROM c WHERE c.type = @type AND c.created_at < @before",
        [{"name": "@type", "value": REVISION_TYPE}, {"name": "@before", "value": timestamp(before)}],
    )


class CosmosRevisionStore:
    def __init__(
        self, container: ContainerProxy, *, retention_seconds: int | None, timeout_seconds: float
    ) -> None:
        self._container = container
        self._ttl = retention_seconds
        self._timeout = timeout_seconds
        self._limiter = anyio.CapacityLimiter(_CONCURRENCY)

    async def append(self, revision: Revision) -> Revision:
        seq = await self._last_seq(revision.user_id, revision.memory_id) + 1
        for _ in range(_APPEND_ATTEMPTS):
            try:
                with cosmos_errors(f"recording a revision of memory {revision.memory_id}", self._timeout):
                    await self._container.create_item(revision_document(revision, seq, self._ttl))
            except ConflictError:  # another writer stored this seq first: take the next free one
                seq = max(seq + 1, await self._last_seq(revision.user_id, revision.memory_id) + 1)
                continue
            return revision.model_copy(update={"seq": seq})
        raise ConflictError(
            f"memory {revision.memory_id} is being changed by many writers at once; its revision was not "
            "recorded, try again"
        )

    async def history(self, user_id: str, memory_id: str) -> list[Revision]:
        docs = await self._query(history_query(user_id, memory_id), "reading a memory's history")
        return [from_revision_document(d) for d in docs]

    async def get(self, user_id: str, revision_id: str) -> Revision:
        docs = await self._query(by_revision_id_query(user_id, revision_id), "reading a revision")
        if not docs:
            raise NotFoundError(f"no revision with id {revision_id!r}")
        return from_revision_document(docs[0])

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> int:
        docs = await self._query(scope_query(scope), "finding revisions to forget")
        if not dry_run:
            await self._delete(docs, "forgetting revisions")
        return len(docs)

    async def prune(self, before: datetime) -> int:
        docs = await self._query(older_than_query(before), "finding revisions past their retention")
        await self._delete(docs, "deleting revisions past their retention")
        return len(docs)

    async def _last_seq(self, user_id: str, memory_id: str) -> int:
        rows = await self._query(last_seq_query(user_id, memory_id), "reading a memory's last revision")
        return int(rows[0]["seq"]) if rows else 0

    async def _delete(self, docs: list[dict[str, Any]], what: str) -> None:
        async def delete(doc: dict[str, Any]) -> None:
            # Already gone (expired by TTL, forgotten concurrently) is what was asked for.
            with cosmos_errors(what, self._timeout), suppress(CosmosResourceNotFoundError):
                await self._container.delete_item(doc["id"], partition_key=[doc["user_id"], doc["group_id"]])

        await each_concurrently([lambda d=d: delete(d) for d in docs], self._limiter)  # type: ignore[misc]

    async def _query(self, query: CosmosQuery, what: str) -> list[dict[str, Any]]:
        with cosmos_errors(what, self._timeout):
            kwargs = query.kwargs()
            return [item async for item in self._container.query_items(kwargs.pop("query"), **kwargs)]
