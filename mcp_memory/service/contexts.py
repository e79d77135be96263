"""Each turn's full-text context (search/context.py says why), kept true as turns come and go: a new
turn's is built from the turns before it, and theirs are rewritten to hold it; a forgotten turn's words
leave the contexts of the turns around it.

Writes to one thread's contexts (add_turn, forgetting a turn) take turns in this process: a forget
between an add's read of its neighbours and its rewrite of their contexts would otherwise let the
forgotten words back in. One lock per thread, made when a write needs it and dropped when none holds
or waits for it: writes to other threads, of this user or another, never wait on it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

import anyio

from mcp_memory.models import Memory
from mcp_memory.search.context import TurnContexts, contexts_without, turn_contexts
from mcp_memory.service.parts import ServiceParts


@dataclass
class _ThreadLock:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    users: int = 0  # holding or waiting


@dataclass
class TurnContextKeeper:
    parts: ServiceParts
    _locks: dict[tuple[str, str | None], _ThreadLock] = field(default_factory=dict, repr=False)

    @asynccontextmanager
    async def lock(self, user_id: str, thread_id: str | None) -> AsyncIterator[None]:
        """This thread's context writes, one at a time in this process."""
        key = (user_id, thread_id)
        held = self._locks.setdefault(key, _ThreadLock())
        held.users += 1
        try:
            async with held.lock:
                yield
        finally:
            held.users -= 1
            if not held.users:
                del self._locks[key]

    def reach(self) -> dict[str, int]:
        """How many turns before and after a turn its full-text context holds."""
        search = self.parts.settings.search
        return {"before": search.context_turns, "after": search.context_turns_after}

    async def of_new_turn(self, user_id: str, thread_id: str, content: str, moment: datetime) -> TurnContexts:
        """The new turn's full-text context, and the new contexts of the turns just before it, which now
        have a turn after them."""
        reach = self.reach()
        wanted = sum(reach.values())
        long_term = self.parts.stores.long_term
        earlier = await long_term.recent(user_id, thread_id, limit=wanted) if wanted else []
        return turn_contexts(earlier, content, moment, **reach)

    async def turns_around(self, memory: Memory) -> list[Memory]:
        reach = sum(self.reach().values())
        return await self.parts.stores.long_term.turns_around(memory.user_id, memory.id, reach=reach)

    def without(self, around: list[Memory], forgotten: Memory) -> dict[str, str]:
        """The new contexts of the turns `around` a forgotten turn, without its words."""
        return contexts_without(around, forgotten.id, **self.reach())

    async def rewrite(self, user_id: str, contexts: dict[str, str]) -> None:
        if contexts:
            await self.parts.stores.long_term.set_index_contexts(user_id, contexts)
