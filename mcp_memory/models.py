"""Backend-neutral data model: what a memory, a thread's working memory and a search are.

Every store speaks these types; nothing here knows about SQLite, Redis or Cosmos DB.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

Role = Literal["user", "assistant", "tool", "system"]
MemoryType = Literal["turn", "summary", "fact", "user_summary"]
SearchMode = Literal["hybrid", "vector", "text"]
MEMORY_TYPES: tuple[MemoryType, ...] = ("turn", "summary", "fact", "user_summary")
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")

THREAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def _role(value: object) -> object:
    # Several agent frameworks call the model "agent"; it is the same speaker as "assistant".
    return "assistant" if value == "agent" else value


AnyRole = Annotated[Role, BeforeValidator(_role)]


def utcnow() -> datetime:
    return datetime.now(UTC)


def normalize_content(text: str) -> str:
    """The form two texts must share to count as the same memory: NFKC, case-folded, spaces folded."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_content(text).encode()).hexdigest()


def summary_id(user_id: str, thread_id: str) -> str:
    """The one long-term id of a thread's running summary: rewritten in place, never duplicated."""
    return f"summary_{user_id}_{thread_id}"


class Memory(BaseModel):
    """One long-term memory: a turn, a thread summary, a fact or a user profile."""

    model_config = ConfigDict(extra="forbid")

    id: str
    user_id: str
    thread_id: str | None = None
    role: AnyRole | None = None
    type: MemoryType = "turn"
    content: str
    embedding: list[float] | None = Field(default=None, repr=False)
    # Text full-text search indexes beside the content, at a lower weight: the turns before it in its
    # thread and its date (what a later question may use to find it). Never shown to clients.
    index_context: str | None = Field(default=None, repr=False)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None
    token_count: int = 0
    content_hash: str = ""
    # Soft deletion (issue: reconciliation): superseded memories are kept for history, never searched.
    superseded_by: str | None = None
    supersede_reason: str | None = None
    superseded_at: datetime | None = None

    def model_post_init(self, __context: Any) -> None:
        if not self.content_hash:
            self.content_hash = content_hash(self.content)

    def public(self) -> dict[str, Any]:
        """The JSON a client sees: everything but the vector."""
        return self.model_dump(mode="json", exclude={"embedding", "index_context"})


class Message(BaseModel):
    """One message in a thread's working memory; its id is the id of its long-term turn."""

    id: str
    role: AnyRole
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    token_count: int = 0


class WorkingMemory(BaseModel):
    """A thread's live context: the running summary of older messages plus recent ones verbatim."""

    user_id: str
    thread_id: str
    messages: list[Message] = Field(default_factory=list)
    summary: str = ""
    summary_token_count: int = 0
    # Bumped by every summary rewrite so a summarizer can tell whether its snapshot is still current.
    summary_version: int = 0
    context_window: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    updated_at: datetime | None = None

    @property
    def token_count(self) -> int:
        return self.summary_token_count + sum(m.token_count for m in self.messages)


class ThreadTotals(BaseModel):
    """What an atomic append reports back: the numbers that decide whether to summarize."""

    token_count: int
    message_count: int
    context_window: int | None


class ThreadInfo(BaseModel):
    thread_id: str
    message_count: int = 0
    token_count: int = 0
    updated_at: datetime | None = None


class SearchQuery(BaseModel):
    """One search, carried unchanged from the tool to the store."""

    user_id: str
    text: str
    mode: SearchMode = "hybrid"
    thread_id: str | None = None
    types: list[MemoryType] | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 10
    fusion: Literal["score", "rrf"] = "score"
    rrf_k: int = 60
    text_weight: float = 1.0
    vector_weight: float = 1.0
    context_weight: float = 0.4  # BM25 weight of a memory's indexed context relative to its own words
    # Phrases the user quoted: every hit must contain each one verbatim (case-insensitive).
    phrases: list[str] = Field(default_factory=list)


class Hit(BaseModel):
    memory: Memory
    score: float


class Scope(BaseModel):
    """What to forget: one memory, one thread, or all of a user's memories."""

    user_id: str
    memory_id: str | None = None
    thread_id: str | None = None
    everything: bool = False
