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
