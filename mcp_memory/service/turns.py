"""The turn's path: add_turn checks a message, stores it in long-term memory with its full-text
context, appends it to its thread's working memory, and starts the thread's summary when the turn took
the thread over its threshold (service/threads.py keeps the thread; service/summaries.py lets a summary
finish after the reply).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio

from mcp_memory import redaction, safety
from mcp_memory import validation as check
from mcp_memory.errors import BackendUnavailableError, InvalidInputError, shown
from mcp_memory.llm.embedder import embed_passages, memory_vectors
from mcp_memory.models import Memory, Message, ThreadTotals, author_of, utcnow
from mcp_memory.service.contexts import TurnContextKeeper
from mcp_memory.service.parts import ServiceParts
from mcp_memory.service.threads import Progress
from mcp_memory.views import AddTurnResult, SummarizeResult, TurnView, WorkingMemoryUsage


@dataclass
class TurnPath:
    parts: ServiceParts
    contexts: TurnContextKeeper

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
        thread_id = check.thread_id(thread_id)
        role_ = check.role(role)
        content = check.content(content, self.parts.settings.max_content_chars)
        metadata = check.metadata(metadata)
        if self.parts.settings.security.redact_secrets:  # before anything else sees them: see redaction/
            content, metadata = await _redacted(content, metadata)
        context_window = check.context_window(context_window)
        said_at = check.created_at(created_at, utcnow())
        if said_at is not None:
            await self._check_in_order(user_id, thread_id, said_at)
        if self.parts.settings.security.flag_instructions:
            metadata = safety.stamp(metadata, content)  # data, never instructions: see safety.py

        tokens = await self.parts.tokens.count_off_loop(content)
        vectors = await self._turn_vectors(content)
        message = Message(
            id=turn_id or f"turn_{uuid.uuid4().hex}",
            role=role_,
            content=content,
            metadata=metadata,
            created_at=said_at or utcnow(),
            token_count=tokens,
            author=author_of(user_id),
        )
        turn = await self._store_turn(user_id, thread_id, message, vectors)
        if self.parts.vectors is not None:
            await self.parts.vectors.add(turn)  # waits only while the backlog is full
        created, totals = await self._keep_working(user_id, thread_id, message, context_window)
        if self.parts.graph is not None:
            await self.parts.graph.link_memory(turn)  # the entities it names (service/graph/)
        if self.parts.learning is not None:
            self.parts.learning.turn_stored(user_id, thread_id, turn.id)  # queued: no latency here
        if created:
            await self.parts.changed(user_id, None)

        window = self.parts.threads.window(totals.context_window)
        summarized, totals = await self._summarize_if_full(user_id, thread_id, totals, progress)
        await self.parts.changed(user_id, thread_id)
        return AddTurnResult(
            turn=TurnView(
                id=turn.id,
                thread_id=thread_id,
                role=role_,
                content=content,
                metadata=metadata,
                created_at=turn.created_at,
                token_count=tokens,
                space=turn.space,
                author=turn.written_by,
            ),
            working_memory=WorkingMemoryUsage(
                **self.parts.threads.usage(totals.token_count, window).model_dump(),
                message_count=totals.message_count,
            ),
            summarized=summarized,
        )

    async def _summarize_if_full(
        self, user_id: str, thread_id: str, totals: ThreadTotals, progress: Progress | None
    ) -> tuple[bool, ThreadTotals]:
        """Summarize the thread when this turn took it over its threshold: whether a summary started,
        and the thread's totals after it (unchanged while the summary goes on after the reply)."""
        threads = self.parts.threads
        if totals.token_count <= threads.threshold(threads.window(totals.context_window)):
            return False, totals
        summarized, written = await self._summarize_soon(user_id, thread_id, progress)
        if written:  # else the reply counts the thread as it is: the summary is still running
            totals = await threads.totals(user_id, thread_id)
        return summarized, totals

    async def _check_in_order(self, user_id: str, thread_id: str, said_at: datetime) -> None:
        """A replayed turn goes after the thread's latest: working memory keeps turns in the order they
        arrive, long term (and a rebuild, and summaries' summarized_through_created_at) by created_at,
        so an earlier time would put the two out of step."""
        latest = await self.parts.stores.long_term.recent(user_id, thread_id, limit=1)
        if latest and said_at < latest[-1].created_at:
            raise InvalidInputError(
                f"created_at {said_at.isoformat()} is before the latest turn of thread {shown(thread_id)} "
                f"({latest[-1].created_at.isoformat()}): replay a conversation's turns in order, "
                "or into a new thread"
            )

    async def _turn_vectors(self, content: str) -> tuple[list[float] | None, list[list[float]] | None]:
        """A turn's vector, and one a passage for a long turn (search/passages.py); none with a vector
        writer, which embeds the turn after it is acknowledged (service/vectors.py)."""
        if self.parts.vectors is not None:
            return None, None
        return memory_vectors((await embed_passages(self.parts.embedder, [content]))[0])

    async def _store_turn(
        self,
        user_id: str,
        thread_id: str,
        message: Message,
        vectors: tuple[list[float] | None, list[list[float]] | None],
    ) -> Memory:
        """The turn, in long-term memory with its full-text context (and its neighbours' rewritten)."""
        vector, passage_vectors = vectors
        async with self.contexts.lock(user_id, thread_id):
            contexts = await self.contexts.of_new_turn(
                user_id, thread_id, message.content, message.created_at
            )
            turn = Memory(
                id=message.id,
                user_id=user_id,
                thread_id=thread_id,
                role=message.role,
                type="turn",
                content=message.content,
                embedding=vector,
                passage_embeddings=passage_vectors,
                index_context=contexts.own,
                metadata=message.metadata,
                created_at=message.created_at,
                token_count=message.token_count,
                author=message.author,
            )
            # Long term first: once it is there, nothing acknowledged can be lost with working memory.
            # Over the storage quota, put() refuses (LimitExceededError) before anything is stored.
            # The audit record is written in the same transaction (audit/context.py).
            async with self.parts.audit.change(
                user_id, "add", thread_id=thread_id, tool="add_turn"
            ) as record:
                record.note([turn.id], {"turn": 1})
                await self.parts.stores.long_term.put([turn])
            await self.contexts.rewrite(user_id, contexts.rewritten)
        return turn

    async def _keep_working(
        self, user_id: str, thread_id: str, message: Message, context_window: int | None
    ) -> tuple[bool, ThreadTotals]:
        """The turn, appended to the thread's working memory (restored first when absent): whether the
        thread was created, and its totals."""
        try:
            created = await self.parts.threads.restore_if_absent(user_id, thread_id, context_window)
            # Skipped by the store when the restore (ours or a concurrent writer's) already holds this turn.
            totals = await self.parts.stores.working.append(
                user_id, thread_id, message, context_window=context_window
            )
        except BackendUnavailableError as e:
            raise BackendUnavailableError(
                f"{e} The turn was saved to long-term memory as {message.id}, but the thread's working "
                "memory was not updated; retry later.",
                backend=e.backend,
            ) from e
        return created, totals

    async def _summarize_soon(
        self, user_id: str, thread_id: str, progress: Progress | None
    ) -> tuple[bool, bool]:
        """The summary this turn started (service/summaries.py): whether it was started (False when
        another request or replica is summarizing the thread) and whether it is written already (False
        when it goes on after the reply)."""
        if self.parts.summaries is None:
            written = (
                await self.parts.threads.summarize(user_id, thread_id, keep_recent=None, progress=progress)
                is not None
            )
            return written, written
        replying = True

        async def report(done: float, total: float | None, message: str | None) -> None:
            if replying and progress is not None:  # the client hears of it only while the request lasts
                await progress(done, total, message)

        async def summarize() -> SummarizeResult | None:
            result = await self.parts.threads.summarize(user_id, thread_id, keep_recent=None, progress=report)
            if result is not None and not replying:
                await self.parts.changed(user_id, thread_id)  # the reply went before the summary
            return result

        try:
            started = await self.parts.summaries.start(
                (user_id, thread_id), summarize, self.parts.settings.summary.inline_seconds
            )
        finally:
            replying = False
        written = started.done and started.result is not None
        return written or not started.done, written


# Redacting a turn this long or longer runs on a worker thread (about 1 ms per 3,000 characters), as
# does the first, which loads detect-secrets (a few hundred ms).
REDACT_OFF_LOOP_CHARS = 8_192


async def _redacted(content: str, metadata: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The turn's text and metadata with credentials and <private> spans replaced (redaction/)."""
    if len(content) < REDACT_OFF_LOOP_CHARS and redaction.loaded():
        return redaction.redact_memory(content, metadata)
    return await anyio.to_thread.run_sync(redaction.redact_memory, content, metadata)
