"""Writing memories to Cosmos DB, each write's stored bytes reserved first.

A write reserves its growth in the user's usage item before anything is written, so an over-quota
write is refused whole; a failed or partly unneeded write gives back what it did not use. Turns are
append-only (a create costs no read); summaries and facts are rewritten in place under ETag checks.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal

from azure.core import MatchConditions
from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosAccessConditionFailedError, CosmosResourceNotFoundError

from mcp_memory.config import CosmosSettings
from mcp_memory.errors import ConflictError, LimitExceededError, MemoryServerError
from mcp_memory.models import EmbeddingSpec, Memory
from mcp_memory.search.passages import passages
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.calls import each_concurrently, query_all
from mcp_memory.storage.cosmos.documents import (
    TURN_TYPES,
    context_patch,
    partition_thread,
    thread_entry,
    to_document,
)
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.passages import (
    copies_differ,
    copies_patch,
    passage_documents,
    passage_spans,
    stored_passage_ids,
)
from mcp_memory.storage.cosmos.usage import USAGE_GROUP, CosmosUsage
from mcp_memory.storage.usage import content_bytes

log = logging.getLogger(__name__)

# Turns this process wrote last, kept whole (ETag, vector) for the context rewrite the next turns of
# their thread make: the two turns before a new one were written or patched here a moment ago.
_KEPT_TURNS = 256


def is_long(content: str) -> bool:
    return len(passages(content)) > 1


def _spans(
    memory: Memory, old: dict[str, Any] | None, given: list[list[int]] | None
) -> list[list[int]] | None:
    """The passage spans a memory item is written with: those of the passage vectors it comes with;
    without them, the stored ones while its content is unchanged (a memory read back without its
    passage vectors and rewritten: a supersession, a metadata change), else none (one passage, or a
    new content not embedded by passage: searched by its `embedding` alone)."""
    if memory.passage_embeddings is not None:
        return given
    if (
        old is not None
        and old.get("passage_spans")
        and old.get("content_hash") == memory.content_hash
        and old["thread_id"] == partition_thread(memory.thread_id)  # passages never move partitions
    ):
        return [list(span) for span in old["passage_spans"]]
    return None


def bytes_of(doc: dict[str, Any] | None) -> int:
    """The stored bytes of a document read back (thread entries and the usage item hold no content)."""
    content = None if doc is None else doc.get("content")
    return content_bytes(content) if isinstance(content, str) else 0


@dataclass
class CosmosWrites:
    settings: CosmosSettings
    spec: EmbeddingSpec
    turns: ContainerProxy
    memories: ContainerProxy
    usage: CosmosUsage
    concurrency: int  # requests one store call may have in flight
    # Threads whose entry this process has written: the entry is idempotent, this only saves RU.
    known_threads: set[tuple[str, str]] = field(default_factory=set)
    # Passage writes of one memory in flight at once (inside its write's slot).
    passage_concurrency: int = 8
    # Turns as this process last wrote them (kept_turn): a context rewrite patches them under their ETag
    # without reading them again; one changed elsewhere answers 412 and is read then.
    kept_turns: OrderedDict[tuple[str, str], dict[str, Any]] = field(default_factory=OrderedDict)

    async def put(self, memories: Sequence[Memory]) -> None:
        self.spec.check_vectors(memories)
        given = {(m.user_id, m.id): passage_spans(m, self.spec.dimension) for m in memories}
        derived: dict[str, list[Memory]] = defaultdict(list)
        for memory in memories:
            # A long turn without its passage vectors is read first too: its stored passages are kept
            # when its content is unchanged (see _spans).
            if memory.type != "turn" or (memory.passage_embeddings is None and is_long(memory.content)):
                derived[memory.user_id].append(memory)
        stored: dict[tuple[str, str], dict[str, Any]] = {}
        for user_id, group in derived.items():
            for container in {self.turns if m.type == "turn" else self.memories for m in group}:
                query = sql.existing(user_id, [m.id for m in group])
                for doc in await self._query(container, query, "reading memories"):
                    if doc["thread_id"] != USAGE_GROUP:
                        stored[(user_id, doc["id"])] = doc
        await self._reserve(memories, stored)
        calls: list[Callable[[], Awaitable[None]]] = []
        for memory in memories:
            old = stored.get((memory.user_id, memory.id))
            spans = _spans(memory, old, given[(memory.user_id, memory.id)])
            calls.append(lambda m=memory, o=old, s=spans: self._write_memory(m, o, s))  # type: ignore[misc]
        threads = {(m.user_id, m.thread_id) for m in memories if m.thread_id is not None}
        for user_id, thread_id in threads - self.known_threads:
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
            growth[memory.user_id] += content_bytes(memory.content) - bytes_of(
                stored.get((memory.user_id, memory.id))
            )
        reserved: list[str] = []
        try:
            for user_id in growth:
                try:
                    await self.usage.reserve(user_id, growth[user_id])
                except LimitExceededError:
                    turns = [m for m in memories if m.user_id == user_id and m.type == "turn"]
                    if not turns:
                        raise
                    query = sql.existing(user_id, [m.id for m in turns])
                    for doc in await self._query(self.turns, query, "reading turns"):
                        stored[(user_id, doc["id"])] = doc
                    growth[user_id] = sum(
                        content_bytes(m.content) - bytes_of(stored.get((user_id, m.id)))
                        for m in memories
                        if m.user_id == user_id
                    )
                    await self.usage.reserve(user_id, growth[user_id])
                reserved.append(user_id)
        except Exception:
            for user_id in reserved:
                await self._give_back(user_id, growth[user_id])
            raise

    async def _write_memory(
        self, memory: Memory, old: dict[str, Any] | None, spans: list[list[int]] | None
    ) -> None:
        """A memory and its passage items (cosmos/passages.py), in the order that never shows a memory
        with half its passages: the passages of its new content first (under ids of that content), then
        the memory item, then the passages of its old content. A crash leaves at most passages no
        memory item names yet (a search never uses them, forget removes them)."""
        ttl = self.settings.turn_ttl_seconds if memory.type == "turn" else None
        doc = to_document(memory, turn_ttl_seconds=ttl, passage_spans=spans)
        items = passage_documents(memory, doc)
        if items and not (old is not None and old.get("doc_hash") == doc["doc_hash"]):
            await self._passages("upsert", [(item["id"], item) for item in items], doc["thread_id"], memory)
        if memory.type == "turn":
            old = await self._write_turn(memory, old, doc)
        else:
            await self._write_derived(memory, old, doc)
        kept = set(stored_passage_ids(doc))
        moved = old is not None and old["thread_id"] != doc["thread_id"]
        stale: list[tuple[str, dict[str, Any] | None]] = [
            (i, None) for i in stored_passage_ids(old) if moved or i not in kept
        ]
        if stale and old is not None:
            await self._passages("delete", stale, old["thread_id"], memory)
        if kept and not items and old is not None and copies_differ(doc, old):
            await self._passages("patch", [(i, doc) for i in sorted(kept)], doc["thread_id"], memory)

    async def _passages(
        self,
        action: Literal["upsert", "delete", "patch"],
        items: Sequence[tuple[str, dict[str, Any] | None]],
        thread_id: str,
        memory: Memory,
    ) -> None:
        """Write, delete or re-copy (from the memory item) passage items of one memory's partition.
        Deleting stale ones is housekeeping: a failure is logged (a search ignores them, forget
        removes them), never the write's error."""
        key = [memory.user_id, thread_id]
        what = f"saving the passages of {memory.type} {memory.id} to long-term memory"

        async def one(item_id: str, body: dict[str, Any] | None) -> None:
            with cosmos_errors(what, self.settings.timeout_seconds):
                if action == "upsert" and body is not None:
                    await self.turns_or_memories(memory).upsert_item(body)
                elif action == "patch" and body is not None:
                    with suppress(CosmosResourceNotFoundError):
                        await self.turns_or_memories(memory).patch_item(
                            item_id, partition_key=key, patch_operations=copies_patch(body)
                        )
                else:
                    with suppress(CosmosResourceNotFoundError):
                        await self.turns_or_memories(memory).delete_item(item_id, partition_key=key)

        calls = [lambda i=i, b=b: one(i, b) for i, b in items]
        try:
            await each_concurrently(calls, self.passage_concurrency)
        except MemoryServerError as e:
            if action != "delete":
                raise
            log.warning("left %d stale passage items of memory %s: %s", len(items), memory.id, e)

    def turns_or_memories(self, memory: Memory) -> ContainerProxy:
        return self.turns if memory.type == "turn" else self.memories

    async def _write_turn(
        self, memory: Memory, old: dict[str, Any] | None, doc: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Turns are append-only and keyed by id: a create costs no read; a turn stored already (a retry,
        a re-import) is replaced under its ETag, and the bytes reserved for it as new are given back.
        Returns the stored turn it replaced, if it read one."""
        if old is not None:  # read while reserving: its bytes are counted already
            if old.get("doc_hash") != doc["doc_hash"]:
                await self._write_derived(memory, old, doc, container=self.turns)
            return old
        reserved = content_bytes(memory.content)
        try:
            with cosmos_errors("saving a turn to long-term memory", self.settings.timeout_seconds):
                self.keep_turn(await self.turns.create_item(doc))
            return None
        except ConflictError:
            pass
        except Exception:
            await self._give_back(memory.user_id, reserved)
            raise
        try:
            found = await self._query(
                self.turns, sql.existing(memory.user_id, [memory.id]), "reading a stored turn"
            )
            old = next((d for d in found if d["thread_id"] == doc["thread_id"]), None)
            with cosmos_errors("saving a turn to long-term memory", self.settings.timeout_seconds):
                if old is None:  # forgotten since the create: create again
                    await self.turns.create_item(doc)
                    return None
                if old.get("doc_hash") != doc["doc_hash"]:
                    await self.turns.replace_item(
                        memory.id, doc, etag=old["_etag"], match_condition=MatchConditions.IfNotModified
                    )
        except Exception:
            await self._give_back(memory.user_id, reserved)
            raise
        await self._give_back(memory.user_id, bytes_of(old))
        return old

    async def _write_derived(
        self,
        memory: Memory,
        old: dict[str, Any] | None,
        doc: dict[str, Any],
        *,
        container: ContainerProxy | None = None,
    ) -> None:
        """Summaries and facts (or a turn read back): skip an exact duplicate of what is stored, replace a
        changed one only if nobody else changed it since we read (ETag), create a new one. A failed write
        gives back the bytes it reserved and did not use."""
        target = container or self.memories
        reserved = content_bytes(memory.content) - bytes_of(old)
        if old is not None and old.get("doc_hash") == doc["doc_hash"]:
            return  # the same document is already stored: writing it again only costs RU
        deleted = 0
        try:
            with cosmos_errors(
                f"saving {memory.type} {memory.id} to long-term memory", self.settings.timeout_seconds
            ):
                if old is not None and old["thread_id"] == doc["thread_id"]:
                    await target.replace_item(
                        memory.id, doc, etag=old["_etag"], match_condition=MatchConditions.IfNotModified
                    )
                    return
                if old is not None:  # moved between a thread and the user level: another partition
                    await target.delete_item(memory.id, partition_key=[memory.user_id, old["thread_id"]])
                    deleted = bytes_of(old)
                await target.create_item(doc)
        except Exception:
            await self._give_back(memory.user_id, reserved + deleted)
            raise

    async def set_index_contexts(self, user_id: str, contexts: Mapping[str, str]) -> int:
        """Give stored turns a new index_context (and so index_text), by a patch under the ETag of the
        read: a patch never creates, so a turn forgotten meanwhile (not read, or 404) stays forgotten.
        Stored bytes count content only (bytes_of), which this never changes."""
        if not contexts:
            return 0
        kept = [self.kept_turns.get((user_id, turn_id)) for turn_id in contexts]
        docs = [doc for doc in kept if doc is not None]
        if len(docs) < len(kept):
            query = sql.documents(user_id, list(contexts), TURN_TYPES)
            docs = await self._query(self.turns, query, "reading turns to re-index")
        updated: list[str] = []

        async def rewrite(doc: dict[str, Any]) -> None:
            if await self._rewrite_context(user_id, doc, contexts[doc["id"]], kept=len(docs) == len(kept)):
                updated.append(doc["id"])

        await self._each([lambda d=d: rewrite(d) for d in docs if d["id"] in contexts])  # type: ignore[misc]
        return len(updated)

    async def _rewrite_context(
        self, user_id: str, doc: dict[str, Any], context: str, *, kept: bool = False
    ) -> bool:
        """Whether the turn holds the context now. Changed since the read (412): read again and patch
        once more; changed again, ConflictError. Gone (404): False. A `kept` turn (kept_turns) that
        changed elsewhere is read and patched as if it had not been kept."""
        what = "re-indexing a turn's context"
        for last in (False, False, True) if kept else (False, True):
            operations = context_patch(doc, context, now=time.time())
            if not operations:
                return True
            with cosmos_errors(what, self.settings.timeout_seconds):
                try:
                    self.keep_turn(
                        await self.turns.patch_item(
                            doc["id"],
                            partition_key=[user_id, doc["thread_id"]],
                            patch_operations=operations,
                            etag=doc["_etag"],
                            match_condition=MatchConditions.IfNotModified,
                        )
                    )
                    return True
                except CosmosResourceNotFoundError:
                    self.kept_turns.pop((user_id, doc["id"]), None)
                    return False
                except CosmosAccessConditionFailedError:
                    self.kept_turns.pop((user_id, doc["id"]), None)
                    if last:
                        raise
            found = await self._query(self.turns, sql.documents(user_id, [doc["id"]], TURN_TYPES), what)
            if not found:
                return False
            doc = found[0]
        return False  # not reached: the last attempt returns or raises

    def keep_turn(self, doc: dict[str, Any]) -> None:
        """Keep a turn as Cosmos DB answered a write of it (its ETag with it), newest last."""
        key = (doc["user_id"], doc["id"])
        self.kept_turns.pop(key, None)
        self.kept_turns[key] = doc
        while len(self.kept_turns) > _KEPT_TURNS:
            self.kept_turns.popitem(last=False)

    def forget_kept(self, user_id: str) -> None:
        for key in [k for k in self.kept_turns if k[0] == user_id]:
            del self.kept_turns[key]

    async def _give_back(self, user_id: str, unused: int) -> None:
        """Return reserved bytes a write did not use. Failing that, the count stays high (never low):
        logged, and the write's own error is the one raised."""
        try:
            await self.usage.release(user_id, unused)
        except MemoryServerError as e:
            log.warning("stored-bytes count of a user left %d bytes high: %s", unused, e)

    async def _enter_thread(self, user_id: str, thread_id: str) -> None:
        with cosmos_errors("recording a thread", self.settings.timeout_seconds):
            await self.memories.upsert_item(thread_entry(user_id, thread_id))
        self.known_threads.add((user_id, thread_id))

    async def _query(
        self, container: ContainerProxy, query: sql.CosmosQuery, what: str
    ) -> list[dict[str, Any]]:
        return await query_all(container, query, what, self.settings.timeout_seconds)

    async def _each(self, calls: Sequence[Callable[[], Awaitable[None]]]) -> None:
        await each_concurrently(calls, self.concurrency)
