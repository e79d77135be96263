"""Backend-neutral data model: what a memory, a thread's working memory and a search's hit are.

Every store speaks these types; nothing here knows about SQLite, Redis or Cosmos DB.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from mcp.shared.subscriptions import ServerEvent
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from mcp_memory.errors import EmbeddingMismatchError

Role = Literal["user", "assistant", "tool", "system"]
MemoryType = Literal["turn", "summary", "fact", "user_summary", "observation"]
SearchMode = Literal["hybrid", "vector", "text"]
# An observation is one line said about an entity of the knowledge graph (graph/): a memory search finds.
MEMORY_TYPES: tuple[MemoryType, ...] = ("turn", "summary", "fact", "user_summary", "observation")
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")

THREAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}\Z")
# A shared space's name. Never a user id: the key a space's memories are stored under starts with
# SPACE_MARK, which no user id holds.
SPACE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
SPACE_MARK = "@"
GROUP_MEMBER = "group:"  # a space member that is every holder of a token naming this group
SpaceRole = Literal["reader", "writer", "owner"]
SPACE_ROLES: tuple[SpaceRole, ...] = ("reader", "writer", "owner")  # each may do all the one before may


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


class Owner(str):
    """Whose memory a call reads or writes, and who is making it: one value every layer passes down.

    The string itself is the key every store is keyed by: the user id for a user's personal memory,
    "@" + the name for a shared space (so a space's thread, summary, facts, quota and Cosmos DB
    partition are its own, as a user's are). `author` is the user acting (recorded on what they
    write to a space); `role` is what they may do there (a user owns their personal memory).
    The server builds an Owner from the verified principal (security/spaces.py); a plain user id string
    stands for that user's personal memory, as everywhere before spaces.
    """

    space: str | None
    author: str
    role: SpaceRole

    def __new__(cls, user_id: str, space: str | None = None, role: SpaceRole = "owner") -> Owner:
        owner = super().__new__(cls, user_id if space is None else space_key(space))
        owner.author = user_id
        owner.space = space
        owner.role = role if space is not None else "owner"
        return owner

    def may(self, role: SpaceRole) -> bool:
        return SPACE_ROLES.index(self.role) >= SPACE_ROLES.index(role)


def space_key(space: str) -> str:
    """The key a space's memories are stored under."""
    return SPACE_MARK + space


def space_of(key: str) -> str | None:
    """The space a store key belongs to; None for a user's personal memory."""
    return key[len(SPACE_MARK) :] if key.startswith(SPACE_MARK) else None


# The metadata key of a display name a turn of a shared space keeps beside its author's user id (the name
# their identity provider gave them), so a teammate's recall can say who it came from.
AUTHOR_NAME = "author_name"


def author_of(key: str) -> str | None:
    """Who is writing under this key, recorded on memories in a space (a personal memory's author is
    its owner, so nothing is recorded)."""
    return key.author if isinstance(key, Owner) and key.space is not None else None


# A memory id of a type and 20 or more hex digits (turn_..., fact_..., rev_...), and its short form: the
# type and the first SHORT_HEX digits (48 bits: unique among millions; a read checks that it is).
_HEX_ID = re.compile(r"^([a-z]+_)([0-9a-f]{20,})$")
SHORT_HEX = 12
SHORT_ID = re.compile(rf"^[a-z]+_[0-9a-f]{{{SHORT_HEX},19}}$")


def short_id(memory_id: str) -> str:
    """How a timeline shows an id: `turn_3fa9c2d1e0b4` for `turn_3fa9c2d1e0b4...`; other ids whole."""
    found = _HEX_ID.match(memory_id)
    return memory_id if found is None else found.group(1) + found.group(2)[:SHORT_HEX]


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
    # A memory longer than one passage (search/passages.py) has a vector for each passage, in order, and
    # is ranked by its best; `embedding` is then its first passage's. None: one passage (`embedding`).
    passage_embeddings: list[list[float]] | None = Field(default=None, repr=False)
    # Text full-text search indexes beside the content, at a lower weight: the turns before it in its
    # thread and its date (what a later question may use to find it). Never shown to clients.
    index_context: str | None = Field(default=None, repr=False)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None
    token_count: int = 0
    content_hash: str = ""
    # Soft deletion: a memory reconciliation supersedes is kept for history, never searched.
    superseded_by: str | None = None
    supersede_reason: str | None = None
    superseded_at: datetime | None = None
    # Who wrote a memory of a shared space (user_id is then "@" + the space); None in personal memory
    # (written by its owner) and for what the server wrote in a space (summaries, learned facts).
    author: str | None = None

    def model_post_init(self, __context: Any) -> None:
        if not self.content_hash:
            self.content_hash = content_hash(self.content)

    @property
    def space(self) -> str | None:
        return space_of(self.user_id)

    @property
    def written_by(self) -> str | None:
        """Who wrote it: the author in a space, the owner in personal memory."""
        return self.author if self.space is not None else self.user_id

    def public(self) -> dict[str, Any]:
        """The JSON a client sees: everything but the vector, with the space (null: personal memory)
        and who wrote it."""
        shown = self.model_dump(
            mode="json", exclude={"embedding", "passage_embeddings", "index_context", "author"}
        )
        return {**shown, "space": self.space, "author": self.written_by}


class Message(BaseModel):
    """One message in a thread's working memory; its id is the id of its long-term turn."""

    id: str
    role: AnyRole
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    token_count: int = 0
    author: str | None = None  # who added it to a shared space's thread; None in personal memory


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
    space: str | None = None  # the shared space the thread is in; None: personal memory
    message_count: int = 0
    token_count: int = 0
    updated_at: datetime | None = None


class Hit(BaseModel):
    memory: Memory
    score: float
    # The memory's passage that matched best, (start, end) character offsets into its content; None for a
    # memory of one passage (the whole matched).
    passage: tuple[int, int] | None = None
    # The query's cosine with that passage (the memory's best), as the store's vector index computed it, in
    # a search with a query vector; None: none (a text search, or a memory with no vector yet).
    cosine: float | None = None


class Scope(BaseModel):
    """What to forget: one memory, one thread, or all of a user's memories."""

    user_id: str
    memory_id: str | None = None
    thread_id: str | None = None
    everything: bool = False


class EmbeddingSpec(BaseModel):
    """Which model made the stored vectors. Stored with the data; a mismatch refuses to start."""

    model: str
    dimension: int

    def check_stored(self, model: object, dimension: object, where: str, instead: str) -> None:
        """Refuse data embedded by another model: its vectors cannot be compared with ours."""
        if model != self.model or str(dimension) != str(self.dimension):
            raise EmbeddingMismatchError(
                f"the memories in {where} were embedded with {model} ({dimension} dimensions) but the "
                f"configured embedder is {self.model} ({self.dimension}); configure the original embedder "
                f"or use {instead}"
            )

    def check_vectors(self, memories: Sequence[Memory]) -> None:
        for memory in memories:
            if memory.embedding is not None and len(memory.embedding) != self.dimension:
                raise EmbeddingMismatchError(
                    f"memory {memory.id} has a {len(memory.embedding)}-dimension vector; the store holds "
                    f"{self.dimension}"
                )


# A change notification and the user whose memory changed: the bus, the 2025-protocol subscriptions and
# the Redis relay deliver each one only to that user's sessions. An event about no one's memory in
# particular (the tool list changed) has no user and reaches every session.
@dataclass(frozen=True)
class UserEvent:
    user_id: str | None  # None: not about one user's memory; every session may hear it
    event: ServerEvent

    def concerns(self, user_id: str) -> bool:
        return self.user_id is None or self.user_id == user_id


RevisionAction = Literal["create", "update", "supersede", "delete", "restore"]
RevisionCause = Literal[
    "extraction", "reconcile", "user_edit", "rollback", "forget", "summary", "profile", "graph"
]


def revision_id() -> str:
    return f"rev_{uuid.uuid4().hex}"


class Revision(BaseModel):
    """One immutable change of one long-term memory: the state after it, and why it happened."""

    id: str = Field(default_factory=revision_id)
    user_id: str
    memory_id: str
    thread_id: str | None = None
    memory_type: MemoryType
    # 1, 2, 3 ... per memory, assigned by the store when the revision is appended.
    seq: int = 0
    action: RevisionAction
    cause: RevisionCause
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    superseded_by: str | None = None
    supersede_reason: str | None = None
    # The text that led to the change: the extracted fact, the user's words, the reconcile verdict.
    source_text: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)


ListOrder = Literal["newest", "oldest"]


class ListQuery(BaseModel):
    """One page of browsing a user's long-term memories without a query, carried to the store.

    Pages are keyset pages on (created_at, id) in the chosen order: `after` is the key of the last
    memory of the previous page, so a memory written between pages neither repeats nor shifts one.
    """

    user_id: str
    types: list[MemoryType] | None = None
    thread_id: str | None = None
    kind: str | None = None  # a fact's kind (metadata.fact_type); only facts have one
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False
    # Memory as it stood then: nothing created later; a memory superseded since counts as current.
    as_of: datetime | None = None
    order: ListOrder = "newest"
    limit: int = 20
    after: tuple[datetime, str] | None = None


# ---- the knowledge graph (service/graph/) -----------------------------------------------------------
# Entities with observations, and relations between entity names: the model of the reference MCP memory
# server (@modelcontextprotocol/server-memory), stored per owner (a user or a space) like memories are.


# What a change listener hears, in place of a thread id, when an owner's knowledge graph changed.
GRAPH_CHANGE = "~graph"


def observation_id(owner: str, entity: str, content: str) -> str:
    """The long-term id of one observation: the same entity and words are one memory, however often said."""
    digest = hashlib.sha256(f"{owner}\0{entity}\0{content}".encode()).hexdigest()[:32]
    return f"obs_{digest}"


class GraphObservation(BaseModel):
    """One observation of an entity: its exact words, and the long-term memory that makes it searchable."""

    content: str
    memory_id: str
    created_at: datetime = Field(default_factory=utcnow)
    author: str | None = None  # who wrote it in a shared space; None in personal memory


class GraphEntity(BaseModel):
    name: str
    entity_type: str
    observations: list[GraphObservation] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    author: str | None = None


class GraphRelation(BaseModel):
    source: str  # the reference's `from`
    target: str  # its `to`
    relation_type: str
    created_at: datetime = Field(default_factory=utcnow)
    author: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.relation_type)
