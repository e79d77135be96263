"""What the learning tools return: the JSON shapes of their structured output (a public contract)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..models import Memory, MemoryType
from ..storage.learning_base import Revision


class MemoryView(BaseModel):
    id: str
    type: MemoryType
    thread_id: str | None
    content: str
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


class ReconcileReport(BaseModel):
    model: str
    facts_reviewed: int
    merged: list[str] = Field(default_factory=list, description="Ids superseded as duplicates.")
    contradicted: list[str] = Field(default_factory=list, description="Ids superseded by a newer fact.")
    kept: list[str] = Field(default_factory=list, description="Ids that won a group.")
    profile_updated: bool = False


class ProfileView(BaseModel):
    id: str
    content: str
    updated_at: datetime | None
    facts_folded: int = 0
    details: dict[str, Any] = Field(default_factory=dict)


class BudgetView(BaseModel):
    limit: int | None = Field(description="Model calls per hour for this user, all kinds; null = unlimited.")
    used: int = Field(description="Calls used in the current hour.")
    background_limit: int = Field(description="The share of background learning within the limit.")
    background_used: int
    resets_at: datetime = Field(description="When the current hour's count starts again from zero.")


class WaitingThread(BaseModel):
    thread_id: str
    reason: str = Field(description='Why its turns wait, e.g. "LLM budget used up until 11:00 UTC".')
    since: datetime
    retry_at: datetime | None = Field(default=None, description="When it is tried again by itself, if known.")


class ExtractionSeen(BaseModel):
    thread_id: str
    at: datetime
    model: str
    turns_read: int
    facts: int = Field(description="Facts created or updated.")


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
