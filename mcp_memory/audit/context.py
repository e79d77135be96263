"""Who is acting in this request, and the record a change is making: context variables every layer
reads without passing them down.

The MCP surface says who is acting (`acting`), once per request. A change opens a `Draft` (through
`Auditor.change`); the first durable write made while it is open (a long-term store's put or forget, a
revision, a graph edit) writes the record inside its own transaction (`pending`, `recorded_in`), so on
SQLite a change never commits without its record nor a record without its change. Later writes of the
same change add nothing: one change, one record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mcp_memory.audit.records import MAX_IDS


@dataclass(frozen=True)
class Actor:
    """Who acts: the verified user id and the credential's name (a token's, or the IdP client id)."""

    user_id: str
    client: str | None = None
    tool: str | None = None


@runtime_checkable
class Sink(Protocol):
    """Where a draft's record goes inside a transaction: a SQLite data file's audit log."""

    @property
    def db(self) -> object: ...

    def prepare(self, draft: Draft) -> object | None: ...

    def append_in(self, conn: Any, draft: Draft, prepared: Any = None) -> object: ...


@dataclass
class Draft:
    """The record a change is making; filled in until the transaction that writes it."""

    ledger: str
    actor: Actor
    action: str
    sink: Sink | None = None  # the data file whose transactions carry the record, if any
    thread_id: str | None = None
    memory_ids: list[str] = field(default_factory=list)
    more_ids: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    outcome: str = "ok"
    recorded: bool = False
    closed: bool = False  # the change is over: a background write it started records nothing
    sealed: bool = False  # what it touches is all noted already: the stores' notes are not added
    revision: int = 0  # bumped by each note: what a log prepared before may be out of date

    def note(self, ids: Iterable[str] = (), counts: dict[str, int] | None = None) -> None:
        """Add what the change touched (ids are deduplicated and capped at MAX_IDS, the rest counted)."""
        if self.recorded or self.sealed:
            return
        self.revision += 1
        known = set(self.memory_ids)
        for memory_id in ids:
            if memory_id in known:
                continue
            known.add(memory_id)
            if len(self.memory_ids) < MAX_IDS:
                self.memory_ids.append(memory_id)
            else:
                self.more_ids += 1
        if counts:
            for kind, n in counts.items():
                self.counts[kind] = self.counts.get(kind, 0) + n

    def seal(self, ids: Iterable[str] = (), counts: dict[str, int] | None = None) -> None:
        """Note everything the change will touch, planned ahead (a forget of many memories, an import),
        and take no more notes: the steps inside note again what they do."""
        self.note(ids, counts)
        self.sealed = True

    def fields(self) -> dict[str, Any]:
        return {
            "ledger": self.ledger,
            "actor": self.actor.user_id,
            "client": self.actor.client,
            "action": self.action,
            "tool": self.actor.tool,
            "thread_id": self.thread_id,
            "memory_ids": list(self.memory_ids),
            "more_ids": self.more_ids,
            "counts": dict(sorted(self.counts.items())),
            "members": dict(sorted(self.members.items())),
            "outcome": self.outcome,
        }


_actor: ContextVar[Actor | None] = ContextVar("mcp_memory_audit_actor", default=None)
_draft: ContextVar[Draft | None] = ContextVar("mcp_memory_audit_draft", default=None)


@contextmanager
def acting(actor: Actor) -> Iterator[None]:
    """Everything inside is done by `actor` (the MCP surface sets it per request, a command for itself)."""
    token = _actor.set(actor)
    try:
        yield
    finally:
        _actor.reset(token)


def current_actor() -> Actor | None:
    return _actor.get()


def open_change() -> Draft | None:
    """The change open in this context, whether its record is written yet or not."""
    draft = _draft.get()
    return draft if draft is not None and not draft.closed else None


def pending() -> Draft | None:
    """The open change's draft, if its record is still to be written."""
    draft = _draft.get()
    return draft if draft is not None and not draft.recorded and not draft.closed else None


def note(ids: Iterable[str] = (), counts: dict[str, int] | None = None) -> None:
    """What a store's write touched, for the open change's record (nothing when none is open)."""
    draft = pending()
    if draft is not None:
        draft.note(ids, counts)


def pending_in(db: object) -> Draft | None:
    """The open draft whose record belongs in a transaction of `db` (the audit log's data file)."""
    draft = pending()
    return draft if draft is not None and draft.sink is not None and draft.sink.db is db else None


def enter(draft: Draft) -> Token[Draft | None]:
    """Open `draft` for the writes that follow in this context (Auditor.change, which checks first that
    no change is open: a change inside another is that one's)."""
    return _draft.set(draft)


def leave(draft: Draft, token: Token[Draft | None]) -> None:
    """The change is over: writes it started in the background record nothing."""
    draft.closed = True
    _draft.reset(token)
