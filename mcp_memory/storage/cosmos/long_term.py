"""Long-term memory on Azure Cosmos DB for NoSQL: hybrid (RRF) search done by the database itself.

Two containers, both keyed (/user_id, /thread_id) so a thread is one logical partition and a user one
key prefix: `turns` (append-only, may expire by TTL) and `memories` (summaries, facts, user summaries,
rewritten in place under ETag checks). Writes and their stored-bytes reservations: writes.py;
document layout: documents.py; SQL: queries.py; containers and policies: setup.py; error translation:
errors.py; concurrent calls and queries: calls.py.
"""

from __future__ import annotations

import bisect
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from datetime import datetime
from typing import Any, Literal, Self

from azure.cosmos.aio import ContainerProxy, DatabaseProxy
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from mcp_memory.audit import context as audit_context
from mcp_memory.config import CosmosSettings
from mcp_memory.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    shown,
)
from mcp_memory.models import (
    MEMORY_TYPES,
    EmbeddingSpec,
    Hit,
    ListQuery,
    Memory,
    Scope,
    ThreadInfo,
)
from mcp_memory.storage.base import SearchesBy
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.calls import each_concurrently, query_all
from mcp_memory.storage.cosmos.documents import (
    DERIVED_TYPES,
    SYSTEM_USER,
    TURN_TYPES,
    USER_THREAD,
    from_document,
)
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.passages import PASSAGE_TYPE, with_passages
from mcp_memory.storage.cosmos.search import CosmosSearch
from mcp_memory.storage.cosmos.setup import (
    check_settings,
    make_client,
    open_container,
    open_database,
    open_learning_container,
    policy_differences,
    raise_on_differences,
)
from mcp_memory.storage.cosmos.usage import USAGE_GROUP, CosmosUsage
from mcp_memory.storage.cosmos.writes import CosmosWrites, bytes_of
from mcp_memory.storage.usage import Quota

log = logging.getLogger(__name__)

# Concurrent requests one store call may have in flight (deleting a user's memories, listing threads).
_CONCURRENCY = 16
# Creating a database and containers on Azure takes seconds, far longer than one item operation.
_SETUP_SECONDS = 120.0


def _order(doc: dict[str, Any]) -> tuple[str, str]:
    """Thread order: created_at, ties by id (Cosmos DB keeps no insertion order)."""
    return doc["created_at"], doc["id"]


class CosmosLongTermStore(SearchesBy):
    def __init__(
        self,
        settings: CosmosSettings,
        embedding: EmbeddingSpec,
        turns: ContainerProxy,
        memories: ContainerProxy,
        database: DatabaseProxy,
        *,
        max_stored_bytes: Quota = None,
    ) -> None:
        self._settings = settings
        self._database = database
        self._spec = embedding
        self._turns = turns
        self._memories = memories
        self._timeout = settings.timeout_seconds
        self._usage = CosmosUsage(
            memories, [turns, memories], timeout_seconds=self._timeout, limit=max_stored_bytes
        )
        self._writes = CosmosWrites(settings, embedding, turns, memories, self._usage, _CONCURRENCY)
        self._search = CosmosSearch(self._containers, self._queries)

    @classmethod
    @asynccontextmanager
    async def open(
        cls, settings: CosmosSettings, embedding: EmbeddingSpec, *, max_stored_bytes: Quota = None
    ) -> AsyncIterator[Self]:
        check_settings(settings)
        client, credential = make_client(settings)
        async with AsyncExitStack() as stack:
            if credential is not None:
                stack.push_async_callback(credential.close)
            with cosmos_errors("connecting to Azure Cosmos DB and opening its containers", _SETUP_SECONDS):
                await stack.enter_async_context(client)
                database = await open_database(client, settings)
                turns, turn_props = await open_container(
                    database, settings.turns_container, settings, embedding
                )
                memories, memory_props = await open_container(
                    database, settings.memories_container, settings, embedding
                )
            store = cls(settings, embedding, turns, memories, database, max_stored_bytes=max_stored_bytes)
            # The embedding check first: a changed model is the likelier cause of a dimension diff.
            await store._check_embedding_spec()
            raise_on_differences(
                settings.turns_container, policy_differences(turn_props, settings, embedding)
            )
            raise_on_differences(
                settings.memories_container, policy_differences(memory_props, settings, embedding)
            )
            yield store

    async def _check_embedding_spec(self) -> None:
        found = await self._query(self._memories, sql.embedding_spec(), "checking the embedding model")
        if not found:
            doc = {
                "id": "embedding_spec",
                "user_id": SYSTEM_USER,
                "thread_id": SYSTEM_USER,
                "type": "embedding_spec",
                "model": self._spec.model,
                "dimension": self._spec.dimension,
            }
            try:
                with cosmos_errors("recording the embedding model", self._timeout):
                    await self._memories.create_item(doc)
                return
            except ConflictError:  # another server process recorded it first: check theirs
                found = await self._query(
                    self._memories, sql.embedding_spec(), "checking the embedding model"
                )
        stored = found[0]
        self._spec.check_stored(
            stored.get("model"),
            stored.get("dimension"),
            f"Cosmos DB database {self._settings.database!r}",
            "another database",
        )

    # -- writes ---------------------------------------------------------------------------------------

    async def put(self, memories: Sequence[Memory]) -> None:
        await self._writes.put(memories)
        audit_context.note(m.id for m in memories)  # for the open change's record, written after it

    async def stored_bytes(self, user_id: str) -> int:
        return await self._usage.read(user_id)

    async def set_index_contexts(self, user_id: str, contexts: Mapping[str, str]) -> int:
        return await self._writes.set_index_contexts(user_id, contexts)

    # -- reads ----------------------------------------------------------------------------------------

    async def get(self, user_id: str, memory_id: str) -> Memory:
        for container, types in self._containers(MEMORY_TYPES):
            docs = await self._query(container, sql.by_id(user_id, memory_id, types), "reading a memory")
            if docs:
                return await self._with_passages(container, docs[0])
        raise NotFoundError(f"no memory with id {shown(memory_id)}")

    async def _with_passages(self, container: ContainerProxy, doc: dict[str, Any]) -> Memory:
        """The memory with its passage vectors, when it has more than one passage: what put() needs to
        write it back whole (a supersession reads it, changes it and puts it)."""
        memory = from_document(doc)
        if not doc.get("passage_spans"):
            return memory
        query = sql.passages_of(doc["user_id"], doc["thread_id"], doc["id"], doc["passage_version"])
        items = await self._query(container, query, "reading a memory's passages")
        return with_passages(memory, doc["passage_spans"], items)

    async def recent(
        self, user_id: str, thread_id: str, *, limit: int, types: Sequence[str] = ("turn",)
    ) -> list[Memory]:
        docs: list[dict[str, Any]] = []
        for container, wanted in self._containers(types):
            docs += await self._query(
                container, sql.recent(user_id, thread_id, wanted, limit), "reading a thread's recent memories"
            )
        docs.sort(key=_order, reverse=True)
        return [from_document(d) for d in reversed(docs[:limit])]

    async def turns_around(self, user_id: str, memory_id: str, *, reach: int) -> list[Memory]:
        """Ordered by (created_at, id), as recent(): Cosmos DB keeps no insertion order, and ordering
        by two fields needs a composite index the containers do not have, so each side's cut reads its
        last time whole and the ties are ordered here."""
        found: dict[str, Any] | None = None
        for container, types in self._containers(MEMORY_TYPES):
            docs = await self._query(
                container, sql.position(user_id, memory_id, types), "finding a turn's thread"
            )
            if docs:
                found = docs[0]
                break
        if found is None or found["thread_id"] == USER_THREAD:
            return []
        thread_id, at = found["thread_id"], found["created_at"]
        what = "reading the turns around a turn"
        turns = await self._query(self._turns, sql.thread_turns(user_id, thread_id, at, "at"), what)
        sides: tuple[Literal["before", "after"], ...] = ("before", "after") if reach > 0 else ()
        for side in sides:
            page = await self._query(self._turns, sql.thread_turns(user_id, thread_id, at, side, reach), what)
            if len(page) == reach:  # the cut's last time may have more turns past it, in no set order
                last = page[-1]["created_at"]
                page = [d for d in page if d["created_at"] != last]
                page += await self._query(self._turns, sql.thread_turns(user_id, thread_id, last, "at"), what)
            turns += page
        turns.sort(key=_order)
        i = bisect.bisect_left([_order(d) for d in turns], (at, memory_id))
        return [from_document(d) for d in turns[max(0, i - reach) : i + reach + 1]]

    async def list_memories(self, query: ListQuery) -> list[Memory]:
        docs: list[dict[str, Any]] = []
        for container, types in self._containers(query.types or MEMORY_TYPES):
            page = await self._query(container, sql.listing(query, types), "listing memories")
            if len(page) == query.limit:
                # Ordered by time alone: the page's last time may have more memories past the TOP cut,
                # in no set order. Read that time whole; the sort below orders its ties by id.
                last = page[-1]["created_at"]
                ties = sql.listing(query, types, created_at=last)
                page = [d for d in page if d["created_at"] != last]
                page += await self._query(container, ties, "listing memories")
            docs += page
        docs.sort(key=lambda d: (d["created_at"], d["id"]), reverse=query.order == "newest")
        return [from_document(d) for d in docs[: query.limit]]

    async def list_threads(self, user_id: str) -> list[ThreadInfo]:
        entries = await self._query(self._memories, sql.thread_entries(user_id), "listing threads")
        infos: list[ThreadInfo] = []

        async def describe(thread_id: str) -> None:
            stats = await self._query(
                self._turns, sql.thread_turn_stats(user_id, thread_id), "counting a thread"
            )
            last = await self._query(
                self._memories, sql.thread_last_memory(user_id, thread_id, DERIVED_TYPES), "reading a thread"
            )
            turns: dict[str, Any] = stats[0] if stats else {}
            newest_memory: str | None = last[0] if last else None  # type: ignore[assignment]  # SELECT VALUE
            times = [t for t in (turns.get("updated_at"), newest_memory) if t]
            if not times:  # every memory of it was forgotten or superseded
                return
            infos.append(
                ThreadInfo(
                    thread_id=thread_id,
                    message_count=turns.get("message_count") or 0,
                    token_count=turns.get("token_count") or 0,
                    updated_at=max(times),
                )
            )

        await self._each([lambda t=e["thread_id"]: describe(t) for e in entries])  # type: ignore[misc]
        infos.sort(key=lambda i: (i.updated_at, i.thread_id), reverse=True)
        return infos

    # -- learning ----------------------------------------------------------------------------------

    @property
    def settings(self) -> CosmosSettings:
        return self._settings

    @property
    def usage(self) -> CosmosUsage:
        """The per-user stored-bytes counter, which revisions count toward as well."""
        return self._usage

    async def open_learning_container(self) -> ContainerProxy:
        """The container of revisions and trigger counters in this store's database, created if missing."""
        with cosmos_errors("opening the Cosmos DB container of revisions and counters", _SETUP_SECONDS):
            return await open_learning_container(self._database, self._settings)

    async def find_by_hash(self, user_id: str, content_hash: str, *, types: Sequence[str]) -> list[Memory]:
        docs: list[dict[str, Any]] = []
        for container, wanted in self._containers(types):
            docs += await self._query(
                container, sql.by_hash(user_id, content_hash, wanted), "looking for an identical memory"
            )
        return [from_document(d) for d in sorted(docs, key=lambda d: d["created_at"])]

    async def similar(
        self, user_id: str, vector: list[float], *, types: Sequence[str], min_similarity: float, limit: int
    ) -> list[Hit]:
        docs: list[dict[str, Any]] = []
        for container, wanted in self._containers(types):
            docs += await self._query(
                container, sql.similar(user_id, vector, wanted, limit), "looking for a similar memory"
            )
        near = sorted(
            (d for d in docs if d["score"] >= min_similarity), key=lambda d: d["score"], reverse=True
        )
        return [Hit(memory=from_document(d), score=d["score"]) for d in near[:limit]]

    async def list_active(
        self, user_id: str, *, types: Sequence[str], limit: int, changed_since: datetime | None = None
    ) -> list[Memory]:
        docs: list[dict[str, Any]] = []
        for container, wanted in self._containers(types):
            docs += await self._query(
                container, sql.active(user_id, wanted, limit, changed_since), "listing active memories"
            )
        docs.sort(key=lambda d: d["changed_at"], reverse=True)
        return [from_document(d) for d in docs[:limit]]

    # -- forget ---------------------------------------------------------------------------------------

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> dict[str, int]:
        if scope.memory_id is not None:
            query = sql.scope(scope.user_id, memory_id=scope.memory_id)
        elif scope.thread_id is not None:
            query = sql.scope(scope.user_id, thread_id=scope.thread_id)
        elif scope.everything:
            query = sql.scope(scope.user_id)
        else:
            raise InvalidInputError("a forget scope names a memory_id, a thread_id, or everything=true")
        docs: list[tuple[ContainerProxy, dict[str, Any]]] = []
        for container in (self._turns, self._memories):
            docs += [
                (container, d) for d in await self._query(container, query, "finding memories to forget")
            ]
        if scope.memory_id is not None:  # a memory id never names the store's own thread entries
            docs = [(c, d) for c, d in docs if d["type"] in (*MEMORY_TYPES, PASSAGE_TYPE)]
        docs = [(c, d) for c, d in docs if d["thread_id"] != USAGE_GROUP]  # the count goes last, below
        counts = Counter(d["type"] for _, d in docs if d["type"] in MEMORY_TYPES)
        if not dry_run:
            self._writes.forget_kept(scope.user_id)
            audit_context.note(d["id"] for _, d in docs if d["type"] in MEMORY_TYPES)  # the change's record
            deleted: list[int] = []

            async def delete(container: ContainerProxy, doc: dict[str, Any]) -> None:
                if await self._delete(scope.user_id, container, doc):
                    deleted.append(bytes_of(doc))

            # Passage items before the memories: an interrupted forget never leaves passages that no
            # memory item names (a search would skip them anyway) and is finished by running it again.
            for passes in (True, False):
                batch = [(c, d) for c, d in docs if (d["type"] == PASSAGE_TYPE) == passes]
                await self._each([lambda c=c, d=d: delete(c, d) for c, d in batch])  # type: ignore[misc]
            if scope.everything:
                await self._usage.remove(scope.user_id)
            else:
                await self._usage.release(scope.user_id, sum(deleted))
            if scope.memory_id is None:  # the thread entries went with the thread or the user
                self._writes.known_threads = {
                    (u, t)
                    for u, t in self._writes.known_threads
                    if not (u == scope.user_id and scope.thread_id in (None, t))
                }
        return dict(counts)

    async def memories_of(self, user_id: str) -> list[Memory]:
        docs: list[dict[str, Any]] = []
        for container in (self._turns, self._memories):
            docs += await self._query(container, sql.user_documents(user_id), "reading the user's memories")
        memories = [from_document(d) for d in docs if d.get("type") in MEMORY_TYPES]
        return sorted(memories, key=lambda m: m.created_at)

    async def warm(self, user_id: str) -> None:
        """Nothing to prepare: Cosmos DB keeps its vector and full-text indexes itself."""

    async def _delete(self, user_id: str, container: ContainerProxy, doc: dict[str, Any]) -> bool:
        """Whether this call deleted it. Already gone (expired by TTL, forgotten concurrently) is what
        was asked for; its bytes were given back by whoever deleted it."""
        with cosmos_errors("forgetting memories", self._timeout), suppress(CosmosResourceNotFoundError):
            await container.delete_item(doc["id"], partition_key=[user_id, doc["thread_id"]])
            return True
        return False

    # -- plumbing -------------------------------------------------------------------------------------

    def _containers(self, types: Sequence[str]) -> list[tuple[ContainerProxy, list[str]]]:
        """The containers holding these memory types, each with the types it holds."""
        pairs = [
            (self._turns, [str(t) for t in types if t in TURN_TYPES]),
            (self._memories, [str(t) for t in types if t in DERIVED_TYPES]),
        ]
        return [(container, wanted) for container, wanted in pairs if wanted]

    async def _query(
        self, container: ContainerProxy, query: sql.CosmosQuery, what: str
    ) -> list[dict[str, Any]]:
        return await query_all(container, query, what, self._timeout)

    async def _queries(
        self, container: ContainerProxy, queries: Sequence[sql.CosmosQuery]
    ) -> list[list[dict[str, Any]]]:
        """Several search queries of one container at once, answers in their order."""
        answers: list[list[dict[str, Any]]] = [[] for _ in queries]

        async def run(i: int) -> None:
            answers[i] = await self._query(container, queries[i], "searching long-term memory")

        await self._each([lambda i=i: run(i) for i in range(len(queries))])  # type: ignore[misc]
        return answers

    async def _each(self, calls: Sequence[Callable[[], Awaitable[None]]]) -> None:
        await each_concurrently(calls, _CONCURRENCY)

    async def memory_ids(self, user_id: str, prefix: str, limit: int) -> list[str]:
        # Only ids are read (no documents); each container's own thread entries have other types.
        where = (
            "c.user_id = @user_id AND STARTSWITH(c.id, @prefix) AND ARRAY_CONTAINS(@types, c.type)"
            f" AND {sql.LIVE}"
        )
        parameters: list[dict[str, Any]] = [
            {"name": "@user_id", "value": user_id},
            {"name": "@prefix", "value": prefix},
            {"name": "@types", "value": list(MEMORY_TYPES)},
            {"name": "@limit", "value": limit},
        ]
        query = sql.CosmosQuery(f"SELECT TOP @limit c.id FROM c WHERE {where} ORDER BY c.id", parameters)
        ids: list[str] = []
        for container in (self._turns, self._memories):
            ids += [d["id"] for d in await self._query(container, query, "completing memory ids")]
        return sorted(ids)[:limit]
