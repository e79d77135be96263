"""The two storage roles every backend plays. Small on purpose: the service holds the rules.

A backend is done when it passes the contract suite in tests/contract/ for its role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from mcp_memory.models import (
    Hit,
    ListQuery,
    Memory,
    Message,
    Scope,
    ThreadInfo,
    ThreadTotals,
    WorkingMemory,
)
from mcp_memory.search.hybrid import candidate_pool
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.ranking import Ranked, TextCandidates, VectorCandidates, fuse


class WorkingForgetCount(BaseModel):
    threads: int = 0
    messages: int = 0


class WorkingMemoryStore(Protocol):
    """Each thread's live context. Every write that belongs together is one atomic step."""

    async def append(
        self, user_id: str, thread_id: str, message: Message, *, context_window: int | None = None
    ) -> ThreadTotals:
        """Append a message, add its tokens to the thread total, set the context window when given and
        refresh the thread's TTL, all in one atomic step; return the totals after it."""
        ...

    async def get(self, user_id: str, thread_id: str) -> WorkingMemory | None:
        """The thread's working memory, or None when it does not exist (never written, expired, flushed)."""
        ...

    async def exists(self, user_id: str, thread_id: str) -> bool:
        """Whether the thread is in working memory now (cheap: no messages are read)."""
        ...

    async def restore(self, memory: WorkingMemory) -> bool:
        """Write a whole working memory rebuilt from long term, only if the thread does not exist now.
        Returns False (and writes nothing) when another writer created it first."""
        ...

    async def compact(
        self,
        user_id: str,
        thread_id: str,
        *,
        expected_version: int,
        removed_ids: Sequence[str],
        summary: str,
        summary_token_count: int,
    ) -> bool:
        """Replace the oldest messages by a summary, atomically, if the thread still matches the snapshot
        the summary was written from: its summary_version equals expected_version and its oldest
        messages are exactly removed_ids, in order. Bumps summary_version. False when it no longer
        matches (nothing is changed); messages appended since the snapshot are always kept."""
        ...

    async def set_data(self, user_id: str, thread_id: str, data: dict[str, object]) -> None:
        """Replace the thread's free JSON session data (creating the thread if needed), refreshing TTL."""
        ...

    async def try_lock(self, user_id: str, thread_id: str, owner: str, ttl_seconds: float) -> bool:
        """Take the thread's summarization lease if nobody holds it; it expires by itself after ttl."""
        ...

    async def unlock(self, user_id: str, thread_id: str, owner: str) -> None:
        """Release the lease if `owner` still holds it."""
        ...

    async def list_threads(self, user_id: str) -> list[ThreadInfo]: ...

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> WorkingForgetCount:
        """Delete (or, with dry_run, count) what the scope names. A memory_id scope carries the thread_id
        of that memory when known; the message with that id is removed from the thread."""
        ...


@runtime_checkable
class LateVectors(Protocol):
    """A long-term store that accepts a memory's vector after the memory itself (the SQLite store): a
    turn is acknowledged, and found by its words, before it is embedded (service/vectors.py)."""

    async def set_embeddings(self, user_id: str, vectors: Mapping[str, Sequence[Sequence[float]]]) -> int:
        """Give these existing memories their vectors, one a passage in the order of
        search.passages.passages(content) (one for most memories); a memory forgotten meanwhile stays
        forgotten. Returns how many were updated."""
        ...

    async def unembedded_turns(self, limit: int) -> list[Memory]:
        """Turns of any user still waiting for a vector (after a crash), oldest first."""
        ...


@runtime_checkable
class LateContext(Protocol):
    """Rewriting a turn's full-text context after storing it, which every long-term store does: a turn's
    context holds the turns after it too, which arrive later, and loses a forgotten turn's words
    (search/context.py)."""

    async def set_index_contexts(self, user_id: str, contexts: Mapping[str, str]) -> int:
        """Give these existing turns a new index_context; a memory forgotten meanwhile stays forgotten.
        Returns how many were updated."""
        ...

    async def turns_around(self, user_id: str, memory_id: str, *, reach: int) -> list[Memory]:
        """The thread's turns from `reach` before this memory to `reach` after it, itself included,
        oldest first; empty when it is gone or belongs to no thread."""
        ...


class LongTermStore(LateContext, Protocol):
    """Every memory ever acknowledged, searchable. Reads never return superseded memories, except get(),
    list_memories asked for them, and reads as of a moment before the supersession."""

    async def put(self, memories: Sequence[Memory]) -> None:
        """Insert or replace by (user_id, id). Idempotent: writing the same memory twice stores it once.
        Raises LimitExceededError, storing none of them, when the write would grow a user's stored bytes
        past the store's max_stored_bytes (security.max_stored_bytes)."""
        ...

    async def stored_bytes(self, user_id: str) -> int:
        """The UTF-8 bytes of the content of every memory of the user (superseded ones too) and of the
        content and source text of their revisions, from a counter kept with each write and deletion
        (storage/usage.py): cheap, never a scan."""
        ...

    async def get(self, user_id: str, memory_id: str) -> Memory:
        """The memory, superseded or not. Raises NotFoundError when the user has none by that id."""
        ...

    # ---- search: the store finds candidates, search/ranking.py ranks them for every backend ------

    async def text_candidates(self, user_id: str, query: SearchQuery) -> TextCandidates:
        """The memories of `user_id` (one of the query's owners) that match the query's words and pass
        its filters, best first, one passage each with its full-text score; empty in vector mode. Run
        while the query is being embedded: it needs no vector."""
        ...

    async def vector_candidates(
        self, user_id: str, query: SearchQuery, vector: Sequence[float], text: TextCandidates
    ) -> VectorCandidates:
        """The passages nearest the query's `vector` that pass its filters, best first, and the cosines
        of the `text` candidates' passages (VectorCandidates.named). A memory with no vector yet is not
        among them."""
        ...

    async def hits(
        self, user_id: str, query: SearchQuery, ranked: Sequence[Ranked], vector: Sequence[float] | None
    ) -> list[Hit]:
        """The hits of the ranked memories (search/ranking.py fuse), in that order: the first
        query.per_owner that are still current and hold the query's quoted phrases, each with its
        passage's span and the query's cosine with it (Hit.cosine; None: no `vector`, or none yet)."""
        ...

    async def search(self, user_id: str, query: SearchQuery, vector: Sequence[float] | None) -> list[Hit]:
        """The best query.per_owner hits of `user_id`'s memory for the query's mode, in one call (every
        store: `search` below); `vector` is the query embedding (None for mode "text")."""
        ...

    async def list_memories(self, query: ListQuery) -> list[Memory]:
        """Up to query.limit memories passing its filters, without vectors, in (created_at, id) order
        (descending for "newest"), starting strictly after query.after. Superseded memories only with
        include_superseded; with as_of, only memories created at or before it, and those superseded
        after it count as current."""
        ...

    async def recent(
        self, user_id: str, thread_id: str, *, limit: int, types: Sequence[str] = ("turn",)
    ) -> list[Memory]:
        """The thread's newest `limit` memories of those types, returned oldest first."""
        ...

    async def list_threads(self, user_id: str) -> list[ThreadInfo]:
        """Threads that have memories (counts are of turns)."""
        ...

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> dict[str, int]:
        """Delete (or count) what the scope names, from every container/table; counts per memory type."""
        ...

    async def memories_of(self, user_id: str) -> list[Memory]:
        """Every memory of the user, superseded ones too, oldest first, without vectors. For export
        and proving that forgetting left nothing."""
        ...

    async def warm(self, user_id: str) -> None:
        """Build now whatever the user's first search would build (the embedded store's in-memory
        indexes); a store whose indexes live in its server does nothing."""
        ...

    # ---- learning: write-time dedup, reconciliation and the user profile -----------------------

    async def find_by_hash(self, user_id: str, content_hash: str, *, types: Sequence[str]) -> list[Memory]:
        """The user's active (not superseded) memories of those types with this content_hash."""
        ...

    async def similar(
        self, user_id: str, vector: list[float], *, types: Sequence[str], min_similarity: float, limit: int
    ) -> list[Hit]:
        """The user's active memories of those types whose cosine similarity to `vector` is at least
        min_similarity, most similar first; each Hit.score is that cosine similarity."""
        ...

    async def list_active(
        self, user_id: str, *, types: Sequence[str], limit: int, changed_since: datetime | None = None
    ) -> list[Memory]:
        """The user's active memories of those types across threads, most recently changed first
        (updated_at, else created_at); with changed_since, only those changed after it."""
        ...

    async def memory_ids(self, user_id: str, prefix: str, limit: int) -> list[str]:
        """Ids of the user's active memories that start with `prefix`, in id order, at most `limit`:
        an index range read for completion/complete, never a scan of the user's memories."""
        ...


class CandidateSearch(Protocol):
    """A backend's side of search (storage/sqlite/search.py, storage/cosmos/search.py): candidates, then
    the hits of the one ranking."""

    async def text_candidates(self, user_id: str, query: SearchQuery) -> TextCandidates: ...

    async def vector_candidates(
        self, user_id: str, query: SearchQuery, vector: Sequence[float], text: TextCandidates
    ) -> VectorCandidates: ...

    async def hits(
        self, user_id: str, query: SearchQuery, ranked: Sequence[Ranked], vector: Sequence[float] | None
    ) -> list[Hit]: ...


class SearchesBy:
    """A long-term store's search methods, given by its CandidateSearch (`_search`)."""

    _search: CandidateSearch

    async def text_candidates(self, user_id: str, query: SearchQuery) -> TextCandidates:
        return await self._search.text_candidates(user_id, query)

    async def vector_candidates(
        self, user_id: str, query: SearchQuery, vector: Sequence[float], text: TextCandidates
    ) -> VectorCandidates:
        return await self._search.vector_candidates(user_id, query, vector, text)

    async def hits(
        self, user_id: str, query: SearchQuery, ranked: Sequence[Ranked], vector: Sequence[float] | None
    ) -> list[Hit]:
        return await self._search.hits(user_id, query, ranked, vector)

    async def search(self, user_id: str, query: SearchQuery, vector: Sequence[float] | None) -> list[Hit]:
        text = await self.text_candidates(user_id, query)
        near = None
        if vector is not None and query.mode != "text":
            near = await self.vector_candidates(user_id, query, vector, text)
        return await self.hits(user_id, query, fuse(query, text, near, candidate_pool(query)), vector)
