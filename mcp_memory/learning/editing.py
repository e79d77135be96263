"""Explicit memory edits: remember, update, history and rollback, each leaving a revision behind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_memory import redaction
from mcp_memory import validation as check
from mcp_memory.errors import InvalidInputError, shown
from mcp_memory.learning.parsing import FACT_KINDS
from mcp_memory.learning.writer import MemoryWriter, revision_of
from mcp_memory.models import Memory, Revision, RevisionCause, content_hash
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.learning_base import RevisionStore
from mcp_memory.views import HistoryResult, MemoryView, RevisionView, WrittenMemory

# Turns are the verbatim record of what was said; summaries are rewritten by summarization and
# mirrored in working memory. Facts and the profile are what a user corrects.
EDITABLE_TYPES = ("fact", "user_summary")
_BASELINE_CAUSE: dict[str, RevisionCause] = {
    "fact": "extraction",
    "user_summary": "profile",
    "summary": "summary",
}


@dataclass
class MemoryEditor:
    long_term: LongTermStore
    revisions: RevisionStore
    writer: MemoryWriter
    max_chars: int
    redact_secrets: bool = True  # security.redact_secrets: see redaction/

    async def remember(
        self, user_id: str, content: str, kind: str = "semantic", thread_id: str | None = None
    ) -> WrittenMemory:
        content = self._content(content)
        if kind not in FACT_KINDS:
            raise InvalidInputError(f"type {shown(kind)} is unknown: use one of {', '.join(FACT_KINDS)}")
        if thread_id is not None:
            thread_id = check.thread_id(thread_id)
        outcome = await self.writer.write_fact(
            user_id,
            thread_id,
            content,
            kind=kind,
            confidence=1.0,
            source_turn_ids=[],
            cause="user_edit",
            source_text=content,
            labels={"tool": "remember"},
            origin="user",
            metadata=self._redacted_kinds(content),
        )
        return WrittenMemory(**MemoryView.of(outcome.memory).model_dump(), action=outcome.action)

    async def update(self, user_id: str, memory_id: str, content: str) -> MemoryView:
        memory = await self._editable(user_id, memory_id)
        content = self._content(content)
        if memory.superseded_by is not None:
            raise InvalidInputError(
                f"memory {memory.id} was superseded by {memory.superseded_by} ({memory.supersede_reason}); "
                "update that one instead, or roll this one back to make it current again"
            )
        if content_hash(content) == memory.content_hash:
            return MemoryView.of(memory)
        edited = await self.writer.edit(
            memory,
            content,
            action="update",
            cause="user_edit",
            source_text=content,
            labels={"tool": "update_memory"},
            metadata=redaction.stamp(memory.metadata, content) if self.redact_secrets else None,
            baseline=await self._baseline(memory),
        )
        return MemoryView.of(edited)

    async def history(self, user_id: str, memory_id: str) -> HistoryResult:
        memory = await self.long_term.get(user_id, check.memory_id(memory_id))
        revisions = await self.revisions.history(user_id, memory.id)
        return HistoryResult(memory=MemoryView.of(memory), revisions=[RevisionView.of(r) for r in revisions])

    async def rollback(self, user_id: str, memory_id: str, revision_id: str) -> MemoryView:
        memory = await self._editable(user_id, memory_id)
        revision = await self.revisions.get(user_id, check.memory_id(revision_id))
        if revision.memory_id != memory.id:
            raise InvalidInputError(
                f"revision {revision.id} belongs to memory {revision.memory_id}, not {memory.id}; "
                "memory_history lists a memory's revisions"
            )
        restored = await self.writer.edit(
            memory,
            revision.content,
            action="restore",
            cause="rollback",
            source_text=revision.content,
            labels={"rolled_back_to": revision.id, "rolled_back_to_seq": str(revision.seq)},
            metadata=revision.metadata,
            superseded=(revision.superseded_by, revision.supersede_reason),
        )
        return MemoryView.of(restored)

    def _content(self, content: str) -> str:
        """The text to store: checked, credentials redacted (before whitespace is folded, so that a
        private key's lines are still lines), on one line."""
        content = check.content(content, self.max_chars)
        if self.redact_secrets:
            content = redaction.redact(content).text
        return " ".join(content.split())

    def _redacted_kinds(self, content: str) -> dict[str, Any] | None:
        """The server's redaction entry for a fact's metadata (None: remove a stale one)."""
        if not self.redact_secrets:
            return None
        return {redaction.REDACTED_KEY: redaction.stamp({}, content).get(redaction.REDACTED_KEY)}

    async def _editable(self, user_id: str, memory_id: str) -> Memory:
        memory = await self.long_term.get(user_id, check.memory_id(memory_id))
        if memory.type not in EDITABLE_TYPES:
            what = (
                "a turn is the verbatim record of what was said"
                if memory.type == "turn"
                else ("a thread summary is rewritten by summarization")
            )
            raise InvalidInputError(
                f"memory {memory.id} cannot be edited: {what}. Use remember to store a corrected fact instead"
            )
        return memory

    async def _baseline(self, memory: Memory) -> Revision | None:
        """A memory written before revisions existed gets its current state recorded first, so that
        rolling back to it stays possible. Written with the update, so a refused one leaves none."""
        if await self.revisions.history(memory.user_id, memory.id):
            return None
        cause = _BASELINE_CAUSE.get(memory.type, "extraction")
        return revision_of(memory, "create", cause, labels={"baseline": "true"})
