"""What the learning tools return: memories written, their revisions, what learning did and is doing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from mcp_memory.models import Memory, MemoryType, Revision


class MemoryView(BaseModel):
    id: str
    type: MemoryType
    space: str | None = Field(
        default=None, description="The shared space it is in; null: your personal memory."
    )
    author: str | None = Field(
        default=None, description="The user who wrote it (null: the server, e.g. a summary)."
    )
    thread_id: str | None = None
    content: str | None = Field(
        default=None, description="Left out where it is the text you sent, or repeats the last revision."
    )
    fact_type: str | None = Field(default=None, description="semantic, preference, procedural or episodic.")
    confidence: float | None = None
    created_at: datetime
    updated_at: datetime | None
    superseded_by: str | None = None
    supersede_reason: str | None = None

    @classmethod
    def of(cls, memory: Memory) -> MemoryView:
        return cls(
            id=memory.id,
            type=memory.type,
            thread_id=memory.thread_id,
            content=memory.content,
            fact_type=memory.metadata.get("fact_type"),
            confidence=memory.metadata.get("confidence"),
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            superseded_by=memory.superseded_by,
            supersede_reason=memory.supersede_reason,
            space=memory.space,
            author=memory.written_by,
        )


class WrittenMemory(MemoryView):
    action: str = Field(
        description="created, updated (a near duplicate was rewritten) or unchanged (exact duplicate)."
    )


class RevisionView(BaseModel):
    id: str
    seq: int = Field(description="1 for the memory's first revision, then 2, 3, ...")
    action: str = Field(description="create, update, supersede, delete or restore.")
    cause: str = Field(description="extraction, reconcile, user_edit, rollback, forget, summary or profile.")
    content: str = Field(description="The memory's content after this change.")
    superseded_by: str | None = None
    supersede_reason: str | None = None
    source_text: str | None = Field(default=None, description="The text that led to the change.")
    labels: dict[str, str] = Field(default_factory=dict)
    created_at: datetime

    @classmethod
    def of(cls, revision: Revision) -> RevisionView:
        return cls(**revision.model_dump(include=set(cls.model_fields)))


class HistoryResult(BaseModel):
    memory: MemoryView
    revisions: list[RevisionView] = Field(description="Every revision, oldest first.")


class ExtractionReport(BaseModel):
    thread_id: str
    model: str = Field(description="Who extracted: the configured model's name, or sampling.")
    turns_read: int
    facts: list[WrittenMemory]
    entities: list[str] = Field(
        default_factory=list, description="Entities the model named, kept in the knowledge graph."
    )


class ReconcileReport(BaseModel):
    model: str
    facts_reviewed: int
    merged: list[str] = Field(default_factory=list, description="Ids superseded as duplicates.")
    contradicted: list[str] = Field(default_factory=list, description="Ids superseded by a newer fact.")
    kept: list[str] = Field(default_factory=list, description="Ids that won a group.")
    profile_updated: bool = False


class BudgetView(BaseModel):
    limit: int | None = Field(description="Model calls per hour for this user, all kinds; null = unlimited.")
    used: int = Field(description="Calls used in the current hour.")
    background_limit: int = Field(description="The share of background learning within the limit.")
    background_used: int
    resets_at: datetime = Field(description="When the current hour's count starts again from zero.")
    remaining: int | None = Field(default=None, description="Calls left this hour; null = unlimited.")
    background_remaining: int = Field(default=0, description="Background calls left this hour.")

    def model_post_init(self, context: Any, /) -> None:
        # Derived, so every view of the budget says what is left the same way.
        self.remaining = None if self.limit is None else max(0, self.limit - self.used)
        self.background_remaining = max(0, self.background_limit - self.background_used)


class WaitingThread(BaseModel):
    thread_id: str
    reason: str = Field(description='Why its turns wait, e.g. "LLM budget used up until 11:00 UTC".')
    since: datetime
    retry_at: datetime | None = Field(default=None, description="When it is tried again by itself, if known.")
    pending_turns: int = Field(
        default=0, description="Turns stored since the thread's last extraction (counted up to a window)."
    )


class ExtractionSeen(BaseModel):
    thread_id: str
    at: datetime
    model: str
    turns_read: int
    facts: int = Field(description="Facts created or updated.")


class ReconciliationSeen(BaseModel):
    at: datetime
    model: str
    facts_reviewed: int
    merged: int = Field(description="Facts superseded as duplicates.")
    contradicted: int = Field(description="Facts superseded by a newer one that contradicts them.")


class LearningFailure(BaseModel):
    at: datetime
    work: str = Field(description="What failed: extraction, reconciliation, profile or background job.")
    thread_id: str | None = None
    reason: str = Field(description='Why, e.g. "stub-chat failed: InternalServerError".')


class LearningStatus(BaseModel):
    """memory://learning/status: the principal's own learning, as this server replica sees it."""

    model: str = Field(description="Who learns: llm (the configured one), sampling (your client) or none.")
    model_name: str | None = None
    budget: BudgetView
    queued_jobs: int = Field(description="Background jobs of this user queued or deferred here.")
    waiting: list[WaitingThread] = Field(
        default_factory=list, description="Threads whose pending turns wait, and why."
    )
    last_extraction: ExtractionSeen | None = None
    last_reconciliation: ReconciliationSeen | None = None
    failures: list[LearningFailure] = Field(
        default_factory=list, description="The latest failed background work, newest first, with its reason."
    )
