"""MemoryService: every rule of the product, behind one object. Tools, resources, the demo and the
benchmarks all call these methods; stores only store, and nothing above the service touches them.

The service is its parts (parts.py) and these methods; each kind of rule has its own module, which the
method hands the call to: the turn's path (turns.py), the thread requests (thread_requests.py, around
threads.py's ThreadKeeper), forgetting (forgetting.py), export and import (import_export.py), search
(searching.py). A small method that needs no module of its own lives here.

Every method takes the user id first: the server binds it from configuration (stdio) or from the
authenticated principal, never from a tool argument.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mcp_memory import validation as check
from mcp_memory.errors import InvalidInputError, NotFoundError, shown
from mcp_memory.models import SHORT_ID, Memory, ThreadInfo
from mcp_memory.search.query import SearchQuery
from mcp_memory.security.spaces import SPACES_FILE
from mcp_memory.service import activity, browse
from mcp_memory.service.chat_exports import ChatFormat
from mcp_memory.service.contexts import TurnContextKeeper
from mcp_memory.service.forgetting import Forgetting
from mcp_memory.service.import_export import ImportExport
from mcp_memory.service.parts import ChangeListener, ServiceParts
from mcp_memory.service.searching import Searching
from mcp_memory.service.thread_requests import ThreadRequests
from mcp_memory.service.threads import Progress
from mcp_memory.service.turns import TurnPath
from mcp_memory.views import (
    AddTurnResult,
    ConversationImport,
    ExportResult,
    ForgetResult,
    ImportResult,
    MemoryPage,
    SearchResult,
    SummarizeResult,
    WorkingMemoryView,
)

__all__ = ["ChangeListener", "MemoryService"]


@dataclass
class MemoryService(ServiceParts):
    _turns: TurnPath = field(init=False, repr=False)
    _thread_requests: ThreadRequests = field(init=False, repr=False)
    _forgetting: Forgetting = field(init=False, repr=False)
    _import_export: ImportExport = field(init=False, repr=False)
    _members_seen: dict[str, dict[str, str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        contexts = TurnContextKeeper(self)  # shared: a turn's add and a turn's forget take turns
        self._turns = TurnPath(self, contexts)
        self._thread_requests = ThreadRequests(self)
        self._forgetting = Forgetting(self, contexts)
        self._import_export = ImportExport(self, contexts, self._turns, self._thread_requests)

    # ---- turns (turns.py) ----------------------------------------------------------------------

    async def add_turn(  # noqa: PLR0913 - add_turn's arguments, and the id a capture derives
        self,
        user_id: str,
        thread_id: str,
        role: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        context_window: int | None = None,
        *,
        created_at: str | datetime | None = None,
        progress: Progress | None = None,
        turn_id: str | None = None,
    ) -> AddTurnResult:
        """Store one message of a thread (`turn_id`: the id the caller derived, for a capture that must
        store each message exactly once: service/capture.py; else a new one)."""
        return await self._turns.add_turn(
            user_id,
            thread_id,
            role,
            content,
            metadata,
            context_window,
            created_at=created_at,
            progress=progress,
            turn_id=turn_id,
        )

    # ---- search (searching.py) -----------------------------------------------------------------

    async def search(self, query: SearchQuery) -> SearchResult:
        """search_memory for the query the tool built and checked (SearchQuery.of), over its owners: a
        user's personal memory and the spaces they read, or one of them; ranked by the store, scored,
        floored and fitted (service/searching.py)."""
        searching = Searching(
            self.settings, self.stores.long_term, self.query_vectors, self.tokens, self.vectors, self.graph
        )
        return await searching.run(query)

    # ---- threads (thread_requests.py) ----------------------------------------------------------

    async def get_working_memory(
        self, user_id: str, thread_id: str, recent: int | None = None
    ) -> WorkingMemoryView:
        return await self._thread_requests.get_working_memory(user_id, thread_id, recent)

    async def summarize_thread(
        self,
        user_id: str,
        thread_id: str,
        keep_recent: int | None = None,
        *,
        progress: Progress | None = None,
    ) -> SummarizeResult:
        return await self._thread_requests.summarize_thread(
            user_id, thread_id, keep_recent, progress=progress
        )

    async def set_thread_data(self, user_id: str, thread_id: str, data: dict[str, Any]) -> None:
        await self._thread_requests.set_thread_data(user_id, thread_id, data)

    async def list_threads(self, owners: str | Sequence[str]) -> list[ThreadInfo]:
        """The threads of `owners` (a user's personal memory, and the spaces they read), newest first;
        each says its space."""
        return await self._thread_requests.list_threads(owners)

    # ---- memories without a query (browse.py, activity.py) -------------------------------------

    async def get_memory(self, owners: str | Sequence[str], memory_id: str) -> Memory:
        """The memory by id, from whichever of `owners` holds it; to anyone else it does not exist."""
        memory_id = check.memory_id(memory_id)
        keys = [owners] if isinstance(owners, str) else list(owners)
        try:
            for key in keys[:-1]:
                with contextlib.suppress(NotFoundError):
                    return await self.stores.long_term.get(key, memory_id)
            return await self.stores.long_term.get(keys[-1], memory_id)
        except NotFoundError:
            if SHORT_ID.match(memory_id) is None:
                raise
        # A short id (a timeline's): the one memory whose id it begins.
        found = [
            (key, full) for key in keys for full in await self.stores.long_term.memory_ids(key, memory_id, 2)
        ]
        if len(found) > 1:
            raise InvalidInputError(
                f"memory_id {shown(memory_id)} begins more than one memory's id: give the whole id"
            )
        if not found:
            raise NotFoundError(f"no memory with id {shown(memory_id)}")
        return await self.stores.long_term.get(*found[0])

    async def list_memories(self, owners: str | Sequence[str], **filters: object) -> MemoryPage:
        """One page of the memories of `owners`, every filter checked first (browse.list_memories)."""
        return await browse.list_memories(self.stores.long_term, owners, **filters)

    async def facts_text(self, owners: str | Sequence[str]) -> str:
        """The facts of `owners` known now, one line each, newest first (memory://facts)."""
        return await browse.facts_text(self.stores.long_term, owners)

    async def memory_ids(self, owners: Sequence[str], prefix: str, limit: int) -> list[str]:
        """The ids starting with `prefix` of each owner's memories, at most `limit` of each, sorted."""
        found: list[str] = []
        for owner in owners:
            found += await self.stores.long_term.memory_ids(owner, prefix, limit)
        return sorted(found)

    async def memories_per_day(self, user_id: str) -> activity.DailyCounts:
        """How many memories of each type were made on each of the last 30 days (activity.py)."""
        return await activity.memories_per_day(self.stores.long_term, user_id)

    async def summarizations_per_thread(self, user_id: str) -> list[activity.ThreadSummarizations]:
        """The most summarized threads, most first (activity.py)."""
        return await activity.summarizations_per_thread(self.stores.long_term, user_id)

    # ---- health --------------------------------------------------------------------------------

    async def probe_working(self, user_id: str) -> None:
        """A cheap read of working memory (pass a user who owns nothing): raises when it cannot answer."""
        await self.stores.working.list_threads(user_id)

    async def probe_long_term(self, user_id: str) -> None:
        """A cheap read of long-term memory (pass a user who owns nothing): raises when it cannot answer."""
        await self.stores.long_term.list_threads(user_id)

    # ---- forgetting (forgetting.py) ------------------------------------------------------------

    async def forget(
        self,
        user_id: str,
        memory_id: str | None = None,
        thread_id: str | None = None,
        everything: bool = False,
        dry_run: bool = False,
    ) -> ForgetResult:
        return await self._forgetting.forget(user_id, memory_id, thread_id, everything, dry_run)

    async def forget_user(self, user_id: str, *, dry_run: bool = False) -> ForgetResult:
        """forget_user: everything of the user's personal memory and, in every configured space, what
        they wrote (their turns, the facts they remembered), each thread's summary that their turns went
        into (rebuilt from the turns that remain at its next summarization) and the working memory of
        those threads; what others wrote, and what the server learned in a space, stay (docs/security.md).
        One receipt for all of it. The spaces are the ones every request sees (the cached reader of
        security/spaces.py: a broken edit of the spaces file keeps the last good one)."""
        return await self._forgetting.forget_user(user_id, dry_run=dry_run)

    # ---- the audit trail -----------------------------------------------------------------------

    async def notice_memberships(self) -> None:
        """Record in each space's audit trail a change of its members or roles in the settings, the first
        time a request sees it (the spaces file is read again when it changes: security/spaces.py)."""
        members: dict[str, dict[str, str]] = {
            s.name: dict(s.members) for s in SPACES_FILE.spaces(self.settings.security)
        }
        if members != self._members_seen:
            await self.audit.memberships(members)
            self._members_seen = members

    # ---- export and import (import_export.py) --------------------------------------------------

    async def export_memories(self, user_id: str) -> ExportResult:
        return await self._import_export.export_memories(user_id)

    async def import_memories(self, user_id: str, jsonl: str, dry_run: bool = False) -> ImportResult:
        return await self._import_export.import_memories(user_id, jsonl, dry_run)

    async def import_conversations(
        self, user_id: str, text: str, source: ChatFormat, *, dry_run: bool = False
    ) -> ConversationImport:
        """A ChatGPT or Claude export (service/chat_exports.py) as threads of turns at their original
        times, through add_turn (so threads are summarized and learned from as if they had happened
        here). A message imported before (its metadata.source_id is in the thread) is skipped, so a
        second import of the same export adds nothing and a later export adds only what is new."""
        return await self._import_export.import_conversations(user_id, text, source, dry_run=dry_run)
