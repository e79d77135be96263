"""The audit log a backend keeps (`AuditLog`), what a reader asks of it (`AuditQuery`), and the
`Auditor` the service and the MCP surface record through.

Where the trail lives: with long-term memory. On SQLite in the same data file, each record written in
the transaction of the change it describes (audit/context.py); on Cosmos DB in the learning container,
written with the change, right after it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Protocol

from pydantic import BaseModel, Field

from mcp_memory.audit.context import Actor, Draft, Sink, current_actor, enter, leave, open_change
from mcp_memory.audit.records import AuditRecord, Verification
from mcp_memory.errors import BackendUnavailableError, MemoryServerError
from mcp_memory.models import SPACE_MARK

PRUNE_EVERY_SECONDS = 3600.0  # how often a record's write also drops the records past retention
COMMAND_ACTOR = Actor(user_id="cli:operator", client="mcp-memory", tool=None)
SERVICE_ACTOR = Actor(user_id="cli:service", client="in-process", tool=None)  # outside requests, commands
SETTINGS_ACTOR = Actor(user_id="cli:settings", client="security.spaces", tool=None)  # membership seen


class AuditQuery(BaseModel):
    """A page of the trail, newest first: one ledger (None: all of them, admins only) and filters."""

    ledger: str | None = None
    actor: str | None = None
    action: str | None = None
    thread_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before: int | None = Field(
        default=None, description="One ledger's page: only records older than this seq (the cursor)."
    )
    before_at: datetime | None = Field(
        default=None, description="Every ledger's page, newest first by time: only records older than this."
    )
    limit: int = 50


class AuditLog(Protocol):
    """Tamper-evident chains of records, one per ledger (audit/records.py), shared by every replica that
    shares the store. `on_retry` (a metric) hears of each append that found another writer's record
    where it meant to put its own, and tried again."""

    async def append(self, draft: Draft) -> AuditRecord:
        """Write the draft's record now, in a transaction of its own (reads, refusals, late changes)."""
        ...

    async def page(self, query: AuditQuery) -> list[AuditRecord]:
        """Up to query.limit records matching it, newest first."""
        ...

    def since(self, ledger: str | None, since: datetime | None) -> AsyncIterator[AuditRecord]:
        """Every record of one ledger, oldest first (by seq); of every ledger, each ledger's in that
        order: for export."""
        ...

    async def verify(self, ledger: str | None = None) -> Verification:
        """Walk one ledger's chain (None: every chain, and the archive) from its anchor; the first
        record that does not match, if any, and its ledger."""
        ...

    async def prune(self, before: datetime) -> int:
        """Drop records older than `before` (retention), keeping each chain verifiable from what is left."""
        ...

    async def pseudonymize(self, user_id: str, *, own_trail_only: bool = False) -> int:
        """Replace the user's id by its stable pseudonym in every record (or, with own_trail_only, in the
        records of their personal memory's trail); the chain still verifies."""
        ...


class Auditor:
    """Records changes and reads of memory in the audit log; off (records nothing) without one."""

    def __init__(
        self,
        log: AuditLog | None,
        *,
        default_actor: Actor,
        reads: bool = True,
        retention_days: float | None = None,
        on_record: Callable[[str, str], None] | None = None,
    ) -> None:
        self.log = log
        self._sink = _as_sink(log)  # once: a runtime Protocol check costs tens of microseconds
        self._default = default_actor
        self._reads = reads
        self._retention = retention_days
        self._pruned_at = -PRUNE_EVERY_SECONDS
        self._on_record = on_record or (lambda action, outcome: None)

    @property
    def enabled(self) -> bool:
        return self.log is not None

    def actor(self, tool: str | None = None) -> Actor:
        found = current_actor() or self._default
        return found if tool is None or found.tool else Actor(found.user_id, found.client, tool)

    @asynccontextmanager
    async def change(
        self,
        ledger: str,
        action: str,
        *,
        thread_id: str | None = None,
        tool: str | None = None,
        at_end: bool = False,
    ) -> AsyncIterator[Draft]:
        """One change to `ledger`'s memory: its record is written with the change's first durable
        write (SQLite), else when it ends (Cosmos DB, or no write at all: a refused change, with the
        product error that refused it as its outcome). `at_end`: a change of many writes (a chat
        import, a model's extraction) recorded once, when it ends, with all it touched. Inside another
        change, that change records it."""
        outer = open_change()
        if self.log is None or outer is not None:
            yield outer or Draft(ledger=str(ledger), actor=self.actor(tool), action=action)
            return
        draft = Draft(
            ledger=str(ledger),
            actor=self.actor(tool),
            action=action,
            sink=None if at_end else self._sink,
            thread_id=thread_id,
        )
        token = enter(draft)
        try:
            yield draft
        except BackendUnavailableError:
            raise  # the store is failing: a record could not be written either
        except MemoryServerError as e:
            if not draft.recorded:
                draft.outcome = f"refused: {type(e).__name__}"
                await self._append(draft)
            raise
        finally:
            leave(draft, token)
        if draft.recorded:
            await self._recorded(draft)
        else:
            await self._append(draft)

    async def read(
        self,
        ledger: str,
        ids: Iterable[str],
        *,
        counts: dict[str, int] | None = None,
        tool: str | None = None,
    ) -> None:
        """A read of a space's memories: which ones were returned (a personal read is not recorded)."""
        if self.log is None or not self._reads or not str(ledger).startswith(SPACE_MARK):
            return
        draft = Draft(ledger=str(ledger), actor=self.actor(tool), action="read")
        draft.note(ids, counts)
        await self._append(draft)

    async def memberships(self, spaces: Mapping[str, Mapping[str, str]]) -> int:
        """Each space whose members or roles differ from its last membership record gets a new one (its
        members now, and counts of who was added, removed or changed role): settings-driven changes, as
        the server sees them. Returns how many spaces changed."""
        if self.log is None:
            return 0
        changed = 0
        for name, members in spaces.items():
            ledger = SPACE_MARK + name
            last = await self.log.page(AuditQuery(ledger=ledger, action="membership", limit=1))
            before = last[0].members if last else {}
            now = dict(members)
            if now == before:
                continue
            draft = Draft(ledger=ledger, actor=SETTINGS_ACTOR, action="membership")
            draft.members = now
            draft.note(counts=_membership_counts(before, now))
            await self._append(draft)
            changed += 1
        return changed

    async def pseudonymize(self, user_id: str, *, own_trail_only: bool = False) -> int:
        """A forgotten user's id, replaced by its stable pseudonym throughout the trail (forget_user), or
        in their personal memory's trail only (their own forget of everything)."""
        if self.log is None:
            return 0
        return await self.log.pseudonymize(user_id, own_trail_only=own_trail_only)

    async def _append(self, draft: Draft) -> None:
        assert self.log is not None
        await self.log.append(draft)
        draft.recorded = True
        await self._recorded(draft)

    async def _recorded(self, draft: Draft) -> None:
        """Counted; and, at most every PRUNE_EVERY_SECONDS, records past retention dropped."""
        self._on_record(draft.action, draft.outcome)
        now = time.monotonic()
        if (
            self.log is not None
            and self._retention is not None
            and now - self._pruned_at > PRUNE_EVERY_SECONDS
        ):
            self._pruned_at = now
            await self.log.prune(datetime.now(UTC) - timedelta(days=self._retention))


def _membership_counts(before: Mapping[str, str], now: Mapping[str, str]) -> dict[str, int]:
    counts = {
        "added": sum(1 for m in now if m not in before),
        "removed": sum(1 for m in before if m not in now),
        "role changed": sum(1 for m, role in now.items() if m in before and before[m] != role),
    }
    return {kind: n for kind, n in counts.items() if n}


def _as_sink(log: object) -> Sink | None:
    """The log itself when it writes records inside its data file's transactions (SQLite)."""
    return log if isinstance(log, Sink) else None
