"""Long-term memory on Azure Cosmos DB for NoSQL: hybrid (RRF) search done by the database itself.

Two containers, both keyed (/user_id, /thread_id) so a thread is one logical partition and a user one
key prefix: `turns` (append-only, may expire by TTL) and `memories` (summaries, facts, user summaries,
rewritten in place under ETag checks). Document layout: cosmos_documents.py; SQL: cosmos_queries.py;
containers and policies: cosmos_setup.py; error translation: cosmos_errors.py.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from datetime import datetime
from typing import Any, Self

import anyio
from azure.core import MatchConditions
from azure.cosmos.aio import ContainerProxy, DatabaseProxy
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from mcp_memory.config import CosmosSettings
from mcp_memory.errors import (
    ConflictError,
    InvalidInputError,
    LimitExceededError,
    MemoryServerError,
    NotFoundError,
)
from mcp_memory.models import MEMORY_TYPES, EmbeddingSpec, Hit, Memory, Scope, SearchQuery, ThreadInfo
from mcp_memory.search.fusion import rrf
from mcp_memory.storage.base import QueryVector, resolve_vector
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.documents import (
    DERIVED_TYPES,
    SYSTEM_USER,
    TURN_TYPES,
    from_document,
    thread_entry,
    to_document,
)
from mcp_memory.storage.cosmos.errors import cosmos_errors
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
from mcp_memory.storage.usage import content_bytes

log = logging.getLogger(__name__)

# Concurrent requests one store call may have in flight (deleting a user's memories, listing threads).
_CONCURRENCY = 16
# Creating a database and containers on Azure takes seconds, far longer than one item operation.
_SETUP_SECONDS = 120.0


class CosmosLongTermStore:
    def __init__(
        self,
        settings: CosmosSettings,
        embedding: EmbeddingSpec,
        turns: ContainerProxy,
        memories: ContainerProxy,
        database: DatabaseProxy,
        *,
        max_stored_bytes: int | None = None,
    ) -> None:
        self._settings = settings
        self._database = database
        self._spec = embedding
        self._turns = turns
        self._memories = memories
        self._timeout = settings.timeout_seconds
        self._limiter = anyio.CapacityLimiter(_CONCURRENCY)
        # Threads whose entry this process has written: the entry is idempotent, this only saves RU.
        self._known_threads: set[tuple[str, str]] = set()
        self._usage = CosmosUsage(
            memories, [turns, memories], timeout_seconds=self._timeout, limit=max_stored_bytes
        )

    @classmethod
    @asynccontextmanager
    async def open(
        cls, settings: CosmosSettings, embedding: EmbeddingSpec, *, max_stored_bytes: int | None = None
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
        self._spec.check_vectors(memories)
        derived: dict[str, list[Memory]] = defaultdict(list)
        for memory in memories:
            if memory.type != "turn":
                derived[memory.user_id].append(memory)
        stored: dict[tuple[str, str], dict[str, Any]] = {}
        for user_id, group in derived.items():
            query = sql.existing(user_id, [m.id for m in group])
            for doc in await self._query(self._memories, query, "reading memories"):
                if doc["thread_id"] != USAGE_GROUP:
                    stored[(user_id, doc["id"])] = doc
        await self._reserve(memories, stored)
        calls: list[Callable[[], Awaitable[None]]] = []
        for memory in memories:
            old = stored.get((memory.user_id, memory.id))
            if memory.type == "turn":
                calls.append(lambda m=memory, o=old: self._write_turn(m, o))  # type: ignore[misc]
            else:
                calls.append(lambda m=memory, o=old: self._write_derived(m, o))  # type: ignore[misc]
        threads = {(m.user_id, m.thread_id) for m in memories if m.thread_id is not None}
        for user_id, thread_id in threads - self._known_threads:
            calls.append(lambda u=user_id, t=thread_id: self._enter_thread(u, t))  # type: ignore[misc]
        await self._each(calls)

    async def _reserve(
        self, memories: Sequence[Memory], stored: dict[tuple[str, str], dict[str, Any]]
    ) -> None:
        """Count each user's growth before anything is written, or refuse it (LimitExceededError).

        Turns are taken as new, since a create costs no read and a turn is written once; only when
        that would refuse the write are the stored ones read (a supersession or re-import of turns
        does not grow the count) and added to `stored`."""
        growth: Counter[str] = Counter()
        for memory in memories:
            growth[memory.user_id] += content_bytes(memory.content) - _bytes_of(
                stored.get((memory.user_id, memory.id))
            )
        reserved: list[str] = []
        try:
            for user_id in growth:
                try:
                    await self._usage.reserve(user_id, growth[user_id])
                except LimitExceededError:
                    turns = [m for m in memories if m.user_id == user_id and m.type == "turn"]
                    if not turns:
                        raise
                    query = sql.existing(user_id, [m.id for m in turns])
                    for doc in await self._query(self._turns, query, "reading turns"):
                        stored[(user_id, doc["id"])] = doc
                    growth[user_id] = sum(
                        content_bytes(m.content) - _bytes_of(stored.get((user_id, m.id)))
                        for m in memories
                        if m.user_id == user_id
                    )
                    await self._usage.reserve(user_id, growth[user_id])
                reserved.append(user_id)
        except Exception:
            for user_id in reserved:
                await self._give_back(user_id, growth[user_id])
            raise

    async def _write_turn(self, memory: Memory, old: dict[str, Any] | None) -> None:
        """Turns are append-only and keyed by id: a create costs no read; a turn stored already (a retry,
        a re-import) is replaced under its ETag, and the bytes reserved for it as new are given back."""
        doc = to_document(memory, turn_ttl_seconds=self._settings.turn_ttl_seconds)
        if old is not None:  # read while reserving: its bytes are counted already
            if old.get("doc_hash") != doc["doc_hash"]:
                await self._write_derived(memory, old, container=self._turns)
            return
        reserved = content_bytes(memory.content)
        try:
            with cosmos_errors("saving a turn to long-term memory", self._timeout):
                await self._turns.create_item(doc)
            return
        except ConflictError:
            pass
        except Exception:
            await self._give_back(memory.user_id, reserved)
            raise
        try:
            found = await self._query(
                self._turns, sql.existing(memory.user_id, [memory.id]), "reading a stored turn"
            )
            old = next((d for d in found if d["thread_id"] == doc["thread_id"]), None)
            with cosmos_errors("saving a turn to long-term memory", self._timeout):
                if old is None:  # forgotten since the create: create again
                    await self._turns.create_item(doc)
                    return
                if old.get("doc_hash") != doc["doc_hash"]:
                    await self._turns.replace_item(
                        memory.id, doc, etag=old["_etag"], match_condition=MatchConditions.IfNotModified
                    )
        except Exception:
            await self._give_back(memory.user_id, reserved)
            raise
        await self._give_back(memory.user_id, _bytes_of(old))

    async def _write_derived(
        self, memory: Memory, old: dict[str, Any] | None, *, container: ContainerProxy | None = None
    ) -> None:
        """Summaries and facts (or a turn read back): skip an exact duplicate of what is stored, replace a
        changed one only if nobody else changed it since we read (ETag), create a new one. A failed write
        gives back the bytes it reserved and did not use."""
        target = container or self._memories
        ttl = self._settings.turn_ttl_seconds if memory.type == "turn" else None
        doc = to_document(memory, turn_ttl_seconds=ttl)
        reserved = content_bytes(memory.content) - _bytes_of(old)
        if old is not None and old.get("doc_hash") == doc["doc_hash"]:
            return  # the same document is already stored: writing it again only costs RU
        deleted = 0
        try:
            with cosmos_errors(f"saving {memory.type} {memory.id} to long-term memory", self._timeout):
                if old is not None and old["thread_id"] == doc["thread_id"]:
                    await target.replace_item(
                        memory.id, doc, etag=old["_etag"], match_condition=MatchConditions.IfNotModified
                    )
                    return
                if old is not None:  # moved between a thread and the user level: another partition
                    await target.delete_item(memory.id, partition_key=[memory.user_id, old["thread_id"]])
                    deleted = _bytes_of(old)
                await target.create_item(doc)
        except Exception:
            await self._give_back(memory.user_id, reserved + deleted)
            raise

    async def _give_back(self, user_id: str, unused: int) -> None:
        """Return reserved bytes a write did not use. Failing that, the count stays high (never low):
        logged, and the write's own error is the one raised."""
        try:
            await self._usage.release(user_id, unused)
        except MemoryServerError as e:
            log.warning("stored-bytes count of a user left %d bytes high: %s", unused, e)

    async def stored_bytes(self, user_id: str) -> int:
        return await self._usage.read(user_id)

    async def _enter_thread(self, user_id: str, thread_id: str) -> None:
        with cosmos_errors("recording a thread", self._timeout):
            await self._memories.upsert_item(thread_entry(user_id, thread_id))
        self._known_threads.add((user_id, thread_id))

    # -- reads ----------------------------------------------------------------------------------------

    async def get(self, user_id: str, memory_id: str) -> Memory:
        for container, types in self._containers(MEMORY_TYPES):
            docs = await self._query(container, sql.by_id(user_id, memory_id, types), "reading a memory")
            if docs:
                return from_document(docs[0])
        raise NotFoundError(f"no memory with id {memory_id!r}")

    async def recent(
        self, user_id: str, thread_id: str, *, limit: int, types: Sequence[str] = ("turn",)
    ) -> list[Memory]:
        docs: list[dict[str, Any]] = []
        for container, wanted in self._containers(types):
            docs += await self._query(
                container, sql.recent(user_id, thread_id, wanted, limit), "reading a thread's recent memories"
            )
        docs.sort(key=lambda d: d["created_at"], reverse=True)
        return [from_document(d) for d in reversed(docs[:limit])]

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

    async def search(self, query: SearchQuery, vector: QueryVector) -> list[Hit]:
        vector = await resolve_vector(vector)
        plan = sql.search_plan(query, vector)
        if plan == "none":
            return []
        rankings: list[list[dict[str, Any]]] = []
        for container, types in self._containers(query.types or MEMORY_TYPES):
            rankings.append(
                await self._query(
                    container, sql.search(query, vector, types, plan), "searching long-term memory"
                )
            )
        if plan == "vector":  # cosine similarities are comparable across containers: merge by them
            merged = sorted((d for r in rankings for d in r), key=lambda d: d["score"], reverse=True)
            return [Hit(memory=from_document(d), score=d["score"]) for d in merged[: query.limit]]
        if plan == "phrases":  # no relevance to fuse: newest first, as each container returned them
            merged = sorted((d for r in rankings for d in r), key=lambda d: d["created_at"], reverse=True)
            rankings = [merged]
        # RRF scores are not projectable in Cosmos DB; each list's rank is what we know, so fuse by rank.
        by_key = {(i, d["id"]): d for i, ranking in enumerate(rankings) for d in ranking}
        fused = rrf([[(i, d["id"]) for d in ranking] for i, ranking in enumerate(rankings)], k=query.rrf_k)
        return [Hit(memory=from_document(by_key[key]), score=score) for key, score in fused[: query.limit]]

    # -- learning (issue 5) ----------------------------------------------------------------------------

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
            docs = [(c, d) for c, d in docs if d["type"] in MEMORY_TYPES]
        docs = [(c, d) for c, d in docs if d["thread_id"] != USAGE_GROUP]  # the count goes last, below
        counts = Counter(d["type"] for _, d in docs if d["type"] in MEMORY_TYPES)
        if not dry_run:
            deleted: list[int] = []

            async def delete(container: ContainerProxy, doc: dict[str, Any]) -> None:
                if await self._delete(scope.user_id, container, doc):
                    deleted.append(_bytes_of(doc))

            await self._each([lambda c=c, d=d: delete(c, d) for c, d in docs])  # type: ignore[misc]
            if scope.everything:
                await self._usage.remove(scope.user_id)
            else:
                await self._usage.release(scope.user_id, sum(deleted))
            if scope.memory_id is None:  # the thread entries went with the thread or the user
                self._known_threads = {
                    (u, t)
                    for u, t in self._known_threads
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
        with cosmos_errors(what, self._timeout):
            kwargs = query.kwargs()
            return [item async for item in container.query_items(kwargs.pop("query"), **kwargs)]

    async def _each(self, calls: Sequence[Callable[[], Awaitable[None]]]) -> None:
        await each_concurrently(calls, self._limiter)


def _bytes_of(doc: dict[str, Any] | None) -> int:
    """The stored bytes of a document read back (thread entries and the usage item hold no content)."""
    content = None if doc is None else doc.get("content")
    return content_bytes(content) if isinstance(content, str) else 0


async def each_concurrently(
    calls: Sequence[Callable[[], Awaitable[None]]], limiter: anyio.CapacityLimiter
) -> None:
    """Run calls concurrently (at most the limiter's capacity at once); the first failure is raised as
    itself."""
    if len(calls) == 1:
        await calls[0]()
        return

    async def limited(call: Callable[[], Awaitable[None]]) -> None:
        async with limiter:
            await call()

    try:
        async with anyio.create_task_group() as tg:
            for call in calls:
                tg.start_soon(limited, call)
    except ExceptionGroup as group:
        first: BaseException = group
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
