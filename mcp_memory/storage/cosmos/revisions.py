"""Revisions on Azure Cosmos DB: the immutable history of long-term memories (RevisionStore).

They live in the learning container (cosmos/setup.py), partitioned (/user_id, /group_id) with group_id = the
memory id, so one memory's history is one logical partition: read in one single-partition query, and
its seq made unique by the partition itself. A revision's document id is `rev:<memory digest>:<seq>`
and Cosmos DB refuses a second item with an id in one partition (409), so among any number of writers
exactly one stores each seq; a loser reads the last seq again and takes the next one.

Each revision's bytes (content and source text) count toward its user's stored bytes, in the usage
item the long-term store keeps (cosmos/usage.py): counted before it is created, given back when forget
or prune deletes it. So prune is the only thing that deletes revisions, and a new one carries no `ttl`:
an expiry Cosmos DB performs silently would leave the count high for good. Prune runs daily, so the
retention (revision_retention_days) is still kept to the day. Revisions written before they were
counted carry the retention as their `ttl`: they expire by themselves, and no count holds their bytes.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from contextlib import suppress
from datetime import datetime
from typing import Any

from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from mcp_memory.errors import ConflictError, InvalidInputError, MemoryServerError, NotFoundError, shown
from mcp_memory.models import Revision, Scope
from mcp_memory.storage.cosmos.calls import each_concurrently
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery
from mcp_memory.storage.cosmos.usage import CosmosUsage
from mcp_memory.storage.usage import revision_bytes

log = logging.getLogger(__name__)

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
# What deleting a revision needs: its key, and what it gives back to the count (counted_bytes_of).
_DELETE_FIELDS = "c.id, c.user_id, c.group_id, c.content, c.source_text, c.ttl"


def memory_digest(memory_id: str) -> str:
    """A fixed-length, id-safe stand-in for a memory id (ids are <= 255 chars without / \\ ? #)."""
    return hashlib.sha256(memory_id.encode()).hexdigest()[:32]


def revision_document(revision: Revision, seq: int) -> dict[str, Any]:
    return {
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


def counted_bytes_of(doc: dict[str, Any]) -> int:
    """What a revision document read back holds toward the count: nothing when it carries a ttl (written
    before revisions were counted, it expires by itself)."""
    if "ttl" in doc or not isinstance(doc.get("content"), str):
        return 0
    source = doc.get("source_text")
    return revision_bytes(doc["content"], source if isinstance(source, str) else None)


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
    select = f"SELECT {_DELETE_FIELDS} FROM c WHERE"
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
        f"SELECT {_DELETE_FIELDS} FROM c WHERE c.type = @type AND c.created_at < @before",
        [{"name": "@type", "value": REVISION_TYPE}, {"name": "@before", "value": timestamp(before)}],
    )


def counted_query(user_id: str) -> CosmosQuery:
    """A first count of the user's stored bytes: their revisions that count (no ttl; counted_bytes_of)."""
    return CosmosQuery(
        "SELECT c.content, c.source_text FROM c"
        " WHERE c.user_id = @user_id AND c.type = @type AND NOT IS_DEFINED(c.ttl)",
        [{"name": "@user_id", "value": user_id}, {"name": "@type", "value": REVISION_TYPE}],
    )


class CosmosRevisionStore:
    def __init__(self, container: ContainerProxy, usage: CosmosUsage, *, timeout_seconds: float) -> None:
        self._container = container
        self._usage = usage
        self._timeout = timeout_seconds
        usage.count_also(self.counted_bytes)

    async def append(self, revision: Revision) -> Revision:
        """Counted first, never refused: the writer checked the user's room before the change."""
        adding = revision_bytes(revision.content, revision.source_text)
        await self._usage.reserve(revision.user_id, adding, refuse=False)
        try:
            return await self._create(revision)
        except Exception:
            await self._give_back(revision.user_id, adding)
            raise

    async def _create(self, revision: Revision) -> Revision:
        """The first revision of a new memory is tried as seq 1 without a read; a memory with revisions
        already answers 409, and the last seq is read then, as for every other change."""
        if revision.action == "create":
            seq = 1
        else:
            seq = await self._last_seq(revision.user_id, revision.memory_id) + 1
        for _ in range(_APPEND_ATTEMPTS):
            try:
                with cosmos_errors(f"recording a revision of memory {revision.memory_id}", self._timeout):
                    await self._container.create_item(revision_document(revision, seq))
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
            raise NotFoundError(f"no revision with id {shown(revision_id)}")
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

    async def counted_bytes(self, user_id: str) -> int:
        """The user's revision bytes, for a first count of their stored bytes (CosmosUsage.count_also)."""
        docs = await self._query(counted_query(user_id), "counting the bytes of revisions")
        return sum(counted_bytes_of(d) for d in docs)

    async def _last_seq(self, user_id: str, memory_id: str) -> int:
        rows = await self._query(last_seq_query(user_id, memory_id), "reading a memory's last revision")
        return int(rows[0]["seq"]) if rows else 0

    async def _delete(self, docs: list[dict[str, Any]], what: str) -> None:
        """Delete, then give back each user's bytes of the revisions this call deleted."""
        freed: Counter[str] = Counter()

        async def delete(doc: dict[str, Any]) -> None:
            # Already gone (expired by its ttl, forgotten concurrently) is what was asked for; whoever
            # deleted it gave its bytes back.
            with cosmos_errors(what, self._timeout), suppress(CosmosResourceNotFoundError):
                await self._container.delete_item(doc["id"], partition_key=[doc["user_id"], doc["group_id"]])
                freed[doc["user_id"]] += counted_bytes_of(doc)

        try:
            await each_concurrently([lambda d=d: delete(d) for d in docs], _CONCURRENCY)  # type: ignore[misc]
        finally:
            for user_id, removed in freed.items():
                await self._give_back(user_id, removed)

    async def _give_back(self, user_id: str, removed: int) -> None:
        """Failing to give bytes back leaves the count high (never low): logged, not raised, so the
        deletion or the write's own error is what the caller sees."""
        try:
            await self._usage.release(user_id, removed)
        except MemoryServerError as e:
            log.warning("stored-bytes count of a user left %d bytes high: %s", removed, e)

    async def _query(self, query: CosmosQuery, what: str) -> list[dict[str, Any]]:
        with cosmos_errors(what, self._timeout):
            kwargs = query.kwargs()
            return [item async for item in self._container.query_items(kwargs.pop("query"), **kwargs)]
