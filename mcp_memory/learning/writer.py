"""Every learned or edited long-term memory is written here: write-time dedup, then one revision a change.

Exact duplicates (same content_hash as an active fact) are skipped before anything is embedded;
near duplicates (cosine >= the threshold) update the existing fact, newest wording wins; anything
else is a new fact. Each write appends an immutable revision holding the content after it.

Revisions count toward the user's stored bytes (security.max_stored_bytes) like the memories, so a
change that adds to them is checked first, for the memory and its revision together, and refused
before anything is written: a refusal leaves neither a changed memory nor a revision behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp_memory.learning.parsing import FactKind
from mcp_memory.llm.embedder import Embedder, embed_passages, memory_vectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import (
    Memory,
    Revision,
    RevisionAction,
    RevisionCause,
    author_of,
    content_hash,
    utcnow,
)
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.learning_base import RevisionStore
from mcp_memory.storage.usage import Quota, content_bytes, refuse_without_room, revision_bytes

WriteAction = Literal["created", "updated", "unchanged"]
# What is checked against the quota. A supersession or a deletion never is: a user over a lowered
# limit must still be able to tidy up.
_GROWING: frozenset[RevisionAction] = frozenset({"create", "update", "restore"})


@dataclass(frozen=True)
class WriteOutcome:
    action: WriteAction
    memory: Memory


def fact_id() -> str:
    return f"fact_{uuid.uuid4().hex}"


def revision_of(
    memory: Memory,
    action: RevisionAction,
    cause: RevisionCause,
    *,
    source_text: str | None = None,
    labels: dict[str, str] | None = None,
) -> Revision:
    """The revision recording `memory` as it is now."""
    return Revision(
        user_id=memory.user_id,
        memory_id=memory.id,
        thread_id=memory.thread_id,
        memory_type=memory.type,
        action=action,
        cause=cause,
        content=memory.content,
        metadata=memory.metadata,
        superseded_by=memory.superseded_by,
        supersede_reason=memory.supersede_reason,
        source_text=source_text,
        labels=labels or {},
    )


def _bytes_of(revision: Revision) -> int:
    return revision_bytes(revision.content, revision.source_text)


@dataclass
class MemoryWriter:
    long_term: LongTermStore
    revisions: RevisionStore
    embedder: Embedder
    tokens: TokenCounter
    near_duplicate_similarity: float
    max_stored_bytes: Quota = None  # security.max_stored_bytes, or a space's own
    # Told of every memory written or rewritten (the knowledge graph links it to the entities it names).
    on_written: Callable[[Memory], Awaitable[object]] | None = None

    async def write_fact(  # noqa: PLR0913 - keyword-only provenance of a fact (its revision record)
        self,
        user_id: str,
        thread_id: str | None,
        text: str,
        *,
        kind: FactKind,
        confidence: float,
        source_turn_ids: Sequence[str],
        cause: RevisionCause,
        source_text: str | None = None,
        labels: dict[str, str] | None = None,
        origin: str = "extraction",
        metadata: dict[str, Any] | None = None,
    ) -> WriteOutcome:
        """Store one fact unless an active one already says it (exactly, or nearly: then update it).
        `metadata`: entries set in the fact's metadata (a None value removes one)."""
        same = await self.long_term.find_by_hash(user_id, content_hash(text), types=("fact",))
        if same:
            return WriteOutcome("unchanged", same[0])
        vector, passage_vectors = memory_vectors((await embed_passages(self.embedder, [text]))[0])
        near = await self.long_term.similar(
            user_id, vector, types=("fact",), min_similarity=self.near_duplicate_similarity, limit=1
        )
        if near:
            old = near[0].memory
            sources = list(dict.fromkeys([*old.metadata.get("source_turn_ids", []), *source_turn_ids]))
            merged = _with(
                {
                    **old.metadata,
                    "fact_type": kind,
                    "confidence": max(confidence, float(old.metadata.get("confidence", 0.0))),
                    "source_turn_ids": sources,
                },
                metadata,
            )
            updated = old.model_copy(
                update={
                    "content": text,
                    "content_hash": content_hash(text),
                    "embedding": vector,
                    "passage_embeddings": passage_vectors,
                    "metadata": merged,
                    "token_count": self.tokens.count(text),
                    "updated_at": utcnow(),
                }
            )
            labels = {**(labels or {}), "near_duplicate_similarity": f"{near[0].score:.3f}"}
            await self.save(updated, "update", cause, source_text=source_text or text, labels=labels)
            return WriteOutcome("updated", updated)
        memory = Memory(
            id=fact_id(),
            user_id=user_id,
            thread_id=thread_id,
            type="fact",
            content=text,
            embedding=vector,
            passage_embeddings=passage_vectors,
            token_count=self.tokens.count(text),
            metadata=_with(
                {
                    "fact_type": kind,
                    "confidence": round(confidence, 3),
                    "source_turn_ids": list(source_turn_ids),
                    "origin": origin,
                },
                metadata,
            ),
            author=author_of(user_id),
        )
        await self.save(memory, "create", cause, source_text=source_text or text, labels=labels)
        return WriteOutcome("created", memory)

    async def edit(  # noqa: PLR0913 - keyword-only provenance of an edit (its revision record)
        self,
        memory: Memory,
        content: str,
        *,
        action: RevisionAction,
        cause: RevisionCause,
        source_text: str | None = None,
        labels: dict[str, str] | None = None,
        metadata: dict[str, Any] | None = None,
        superseded: tuple[str | None, str | None] | None = None,
        baseline: Revision | None = None,
    ) -> Memory:
        """Rewrite a memory's content (re-embedded), optionally its metadata and supersede state. A
        baseline (the state before, for a memory without history) is recorded first."""
        vector, passage_vectors = memory_vectors((await embed_passages(self.embedder, [content]))[0])
        update: dict[str, Any] = {
            "content": content,
            "content_hash": content_hash(content),
            "embedding": vector,
            "passage_embeddings": passage_vectors,
            "token_count": self.tokens.count(content),
            "updated_at": utcnow(),
        }
        if metadata is not None:
            update["metadata"] = metadata
        if superseded is not None:
            by, reason = superseded
            update |= {
                "superseded_by": by,
                "supersede_reason": reason,
                "superseded_at": utcnow() if by else None,
            }
        edited = memory.model_copy(update=update)
        await self.save(edited, action, cause, source_text=source_text, labels=labels, baseline=baseline)
        return edited

    async def supersede(
        self, loser: Memory, winner: Memory, reason: Literal["duplicate", "contradict"]
    ) -> Memory:
        """Soft-delete `loser` in favour of `winner`: kept for history, hidden from every default read."""
        stored = await self.long_term.get(loser.user_id, loser.id)  # with its vector, which put() rewrites
        superseded = stored.model_copy(
            update={"superseded_by": winner.id, "supersede_reason": reason, "superseded_at": utcnow()}
        )
        await self.save(
            superseded,
            "supersede",
            "reconcile",
            source_text=winner.content,
            labels={"superseded_by": winner.id, "reason": reason},
        )
        return superseded

    async def save(
        self,
        memory: Memory,
        action: RevisionAction,
        cause: RevisionCause,
        *,
        source_text: str | None = None,
        labels: dict[str, str] | None = None,
        baseline: Revision | None = None,
    ) -> Revision:
        """put() the memory, then append its revision (the state after the change), after the baseline
        if one is given. Raises LimitExceededError, writing nothing, when the user has no room for them.

        put() checks the memory again inside its own write, exactly; the revisions are not checked
        again, so writers racing at the limit overshoot it by at most a revision each."""
        revisions = [
            *([baseline] if baseline else []),
            revision_of(memory, action, cause, source_text=source_text, labels=labels),
        ]
        adding = content_bytes(memory.content) + sum(_bytes_of(r) for r in revisions)
        await self._check_room(memory.user_id, action, adding)
        await self.long_term.put([memory])
        if self.on_written is not None and action in _GROWING:
            await self.on_written(memory)
        for revision in revisions[:-1]:
            await self.revisions.append(revision)
        return await self.revisions.append(revisions[-1])

    async def record(
        self,
        memory: Memory,
        action: RevisionAction,
        cause: RevisionCause,
        *,
        source_text: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> Revision:
        """Append a revision for a change already stored (e.g. a summary the service wrote). Raises
        LimitExceededError, appending nothing, when the user has no room for it."""
        revision = revision_of(memory, action, cause, source_text=source_text, labels=labels)
        await self._check_room(memory.user_id, action, _bytes_of(revision))
        return await self.revisions.append(revision)

    async def _check_room(self, user_id: str, action: RevisionAction, adding: int) -> None:
        if action in _GROWING:
            await refuse_without_room(self.long_term, user_id, adding, self.max_stored_bytes)


def _with(metadata: dict[str, Any], entries: dict[str, Any] | None) -> dict[str, Any]:
    """`metadata` with `entries` set, an entry of value None removed."""
    merged = dict(metadata)
    for key, value in (entries or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
