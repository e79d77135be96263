"""What a client asks of its threads: their working memory, a summary now, their data, the list of
them. ThreadKeeper (threads.py) keeps each thread whole; these are the requests' rules around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_memory import redaction
from mcp_memory import validation as check
from mcp_memory.errors import BackendUnavailableError, NotFoundError, shown
from mcp_memory.models import ThreadInfo, space_of, utcnow
from mcp_memory.service.parts import ServiceParts
from mcp_memory.service.threads import Progress
from mcp_memory.views import SummarizeResult, WorkingMemoryView


@dataclass
class ThreadRequests:
    parts: ServiceParts

    async def get_working_memory(
        self, user_id: str, thread_id: str, recent: int | None = None
    ) -> WorkingMemoryView:
        thread_id = check.thread_id(thread_id)
        if recent is not None:
            recent = check.count(recent, "recent", low=0, high=10_000)
        await self.parts.summary_settled(user_id, thread_id)
        memory = await self.parts.threads.load(user_id, thread_id)
        window = self.parts.threads.window(memory.context_window)
        messages = memory.messages if recent is None else memory.messages[len(memory.messages) - recent :]
        return WorkingMemoryView(
            thread_id=thread_id,
            summary=memory.summary,
            messages=messages,
            message_count=len(memory.messages),
            data=memory.data,
            **self.parts.threads.usage(memory.token_count, window).model_dump(),
        )

    async def summarize_thread(
        self,
        user_id: str,
        thread_id: str,
        keep_recent: int | None = None,
        *,
        progress: Progress | None = None,
    ) -> SummarizeResult:
        thread_id = check.thread_id(thread_id)
        if keep_recent is not None:
            keep_recent = check.count(keep_recent, "keep_recent", low=0, high=10_000)
        await self.parts.summary_settled(user_id, thread_id)
        memory = await self.parts.threads.load(user_id, thread_id)
        if not memory.messages and not memory.summary:
            raise NotFoundError(f"thread {shown(thread_id)} has no messages to summarize")
        async with self.parts.audit.change(
            user_id, "summarize", thread_id=thread_id, tool="summarize_thread"
        ):
            result = await self.parts.threads.summarize(
                user_id, thread_id, keep_recent=keep_recent, progress=progress, force=True
            )
        if result is None:
            raise BackendUnavailableError(
                f"thread {thread_id!r} is being summarized by another request right now; try again shortly"
            )
        await self.parts.changed(user_id, thread_id)
        return result

    async def set_thread_data(self, user_id: str, thread_id: str, data: dict[str, Any]) -> None:
        thread_id = check.thread_id(thread_id)
        data = check.metadata(data, "data")
        if self.parts.settings.security.redact_secrets:
            data = redaction.redact_values(data)
        await self.parts.stores.working.set_data(user_id, thread_id, data)
        await self.parts.changed(user_id, thread_id)

    async def list_threads(self, owners: str | Sequence[str]) -> list[ThreadInfo]:
        """The threads of `owners` (a user's personal memory, and the spaces they read), newest first;
        each says its space."""
        live: dict[tuple[str | None, str], ThreadInfo] = {}
        for key in [owners] if isinstance(owners, str) else owners:
            space = space_of(key)
            for thread in await self.parts.stores.working.list_threads(key):
                live[space, thread.thread_id] = thread.model_copy(update={"space": space})
            # Threads whose working memory expired still exist in long term.
            for thread in await self.parts.stores.long_term.list_threads(key):
                live.setdefault((space, thread.thread_id), thread.model_copy(update={"space": space}))
        newest_first = sorted(
            (t for t in live.values() if t.updated_at), key=lambda t: t.updated_at or utcnow(), reverse=True
        )
        return newest_first + [t for t in live.values() if not t.updated_at]
