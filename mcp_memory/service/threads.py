"""Keeping each thread's working memory whole: rebuilt from long term when it is missing, and
summarized progressively when it passes its threshold.

Summarization runs under a per-thread lease and replaces exactly the messages it read (the store's
compact is a compare-and-swap on the summary version), so turns added meanwhile are always kept.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import anyio

from mcp_memory.config import Settings
from mcp_memory.errors import LimitExceededError, NotFoundError
from mcp_memory.learning.budget import BudgetUsedUp, LlmBudget
from mcp_memory.llm.embedder import Embedder, embed_passages, memory_vectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import Memory, Message, Scope, ThreadTotals, WorkingMemory, summary_id, utcnow
from mcp_memory.observability.metrics import Metrics
from mcp_memory.service.extractive import ExtractiveSummarizer
from mcp_memory.service.summarizer import Summarizer
from mcp_memory.service.summary_words import Folded, NothingFolded, said
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage import Stores
from mcp_memory.views import ContextUsage, SummarizeResult

log = logging.getLogger(__name__)


class LearningHooks(Protocol):
    """Learning (mcp_memory/learning): told what was stored; queues its work, never blocks."""

    def turn_stored(self, user_id: str, thread_id: str, turn_id: str) -> None: ...

    def summary_stored(self, user_id: str, thread_id: str, summary: Memory) -> None: ...

    async def forgotten(self, scope: Scope, *, dry_run: bool) -> int:
        """Forget the scope's revisions (and derived state); returns how many revisions."""
        ...


# Progress of a long operation: (done, total, message).
Progress = Callable[[float, float | None, str | None], Awaitable[None]]

REBUILD_TURNS = 50  # how many recent turns a missing thread gets back from long term
OPENING_CHARS = 100  # of a long message's first line, quoted in the summary's note about it


@dataclass
class ThreadKeeper:
    settings: Settings
    stores: Stores
    embedder: Embedder
    tokens: TokenCounter
    summarizer: Summarizer
    budget: LlmBudget  # the user's hourly model calls, shared with background learning
    learning: LearningHooks | None = None
    metrics: Metrics = field(default_factory=Metrics)
    # With one, a summary's vectors are written after it is stored, as a turn's (service/vectors.py):
    # summarizing does not wait for the embedder in add_turn.
    vectors: VectorWriter | None = None

    def window(self, context_window: int | None) -> int:
        """A thread's context window: the one its client named, else summary.default_context_window."""
        return context_window or self.settings.summary.default_context_window

    def threshold(self, window: int) -> int:
        return int(window * self.settings.summary.threshold)

    def usage(self, token_count: int, window: int) -> ContextUsage:
        threshold = self.threshold(window)
        return ContextUsage(
            token_count=token_count,
            context_window=window,
            threshold_tokens=threshold,
            percent_used=round(100.0 * token_count / window, 1),
            percent_until_summarization=round(max(0.0, 100.0 * (threshold - token_count) / threshold), 1),
        )

    async def totals(self, user_id: str, thread_id: str) -> ThreadTotals:
        memory = await self.stores.working.get(user_id, thread_id)
        if memory is None:
            return ThreadTotals(token_count=0, message_count=0, context_window=None)
        return ThreadTotals(
            token_count=memory.token_count,
            message_count=len(memory.messages),
            context_window=memory.context_window,
        )

    async def load(self, user_id: str, thread_id: str) -> WorkingMemory:
        memory = await self.stores.working.get(user_id, thread_id)
        if memory is not None:
            return memory
        # Expired or flushed: rebuild from long term so the client never sees a silently empty thread.
        rebuilt = await self.from_long_term(user_id, thread_id, context_window=None)
        if rebuilt is None:
            return WorkingMemory(user_id=user_id, thread_id=thread_id)
        await self.stores.working.restore(rebuilt)
        return await self.stores.working.get(user_id, thread_id) or rebuilt

    async def from_long_term(
        self, user_id: str, thread_id: str, context_window: int | None
    ) -> WorkingMemory | None:
        turns = await self.stores.long_term.recent(user_id, thread_id, limit=REBUILD_TURNS)
        try:
            summary = await self.stores.long_term.get(user_id, summary_id(user_id, thread_id))
        except NotFoundError:
            summary = None
        if not turns and summary is None:
            return None
        # Turns the summary already covers stay out of the rebuilt messages.
        through_id = summary.metadata.get("summarized_through") if summary else None
        ids = [t.id for t in turns]
        if through_id in ids:
            turns = turns[ids.index(through_id) + 1 :]
        elif summary and summary.metadata.get("summarized_through_created_at"):
            through = datetime.fromisoformat(summary.metadata["summarized_through_created_at"])
            turns = [t for t in turns if t.created_at > through]
        messages = [
            Message(
                id=t.id,
                role=t.role or "user",
                content=t.content,
                metadata=t.metadata,
                created_at=t.created_at,
                token_count=t.token_count,
                author=t.author,
            )
            for t in turns
        ]
        return WorkingMemory(
            user_id=user_id,
            thread_id=thread_id,
            messages=messages,
            summary=summary.content if summary else "",
            summary_token_count=summary.token_count if summary else 0,
            summary_version=int(summary.metadata.get("summary_version", 0)) if summary else 0,
            context_window=context_window
            or (
                int(summary.metadata["context_window"])
                if summary and summary.metadata.get("context_window")
                else None
            ),
        )

    async def restore_if_absent(self, user_id: str, thread_id: str, context_window: int | None) -> bool:
        """Before a turn is appended: a thread missing from working memory (new, expired, flushed) is
        first rebuilt from long term, which already holds this turn, so its history comes back with it.

        Never forget-and-rewrite a live thread: a concurrent writer's turn appended in between would be
        lost. Restore writes only while the thread is absent, and append skips an id the thread holds,
        so every writer racing here ends with its turn in the thread exactly once."""
        if await self.stores.working.exists(user_id, thread_id):
            return False
        rebuilt = await self.from_long_term(user_id, thread_id, context_window)
        if rebuilt is None or not await self.stores.working.restore(rebuilt):
            return False
        if rebuilt.summary or len(rebuilt.messages) > 1:
            log.info("thread %s was missing from working memory; rebuilt it from long term", thread_id)
        return True

    async def clear_summary(self, user_id: str, thread_id: str) -> None:
        memory = await self.stores.working.get(user_id, thread_id)
        if memory is not None and memory.summary:
            await self.stores.working.compact(
                user_id,
                thread_id,
                expected_version=memory.summary_version,
                removed_ids=[],
                summary="",
                summary_token_count=0,
            )

    async def summarize(
        self,
        user_id: str,
        thread_id: str,
        *,
        keep_recent: int | None,
        progress: Progress | None,
        force: bool = False,
    ) -> SummarizeResult | None:
        """Progressive summarization under a lease: fold the oldest messages into the running summary.

        Returns None when another summarizer holds the thread or the thread changed under us (the next
        turn retries). Messages appended while the summary was being written are never touched.
        """
        owner = uuid.uuid4().hex
        lease = max(self.settings.summary.lease_seconds, self.settings.llm.timeout_seconds * 3)
        if not await self.stores.working.try_lock(user_id, thread_id, owner, lease):
            return None
        try:
            memory = await self.stores.working.get(user_id, thread_id)
            if memory is None:
                return None
            return await self._summarize_held(memory, keep_recent=keep_recent, progress=progress, force=force)
        finally:
            with anyio.CancelScope(shield=True):
                await self.stores.working.unlock(user_id, thread_id, owner)

    async def _summarize_held(
        self, memory: WorkingMemory, *, keep_recent: int | None, progress: Progress | None, force: bool
    ) -> SummarizeResult | None:
        """summarize(), under the lease: the thread's oldest messages folded into its summary."""
        user_id, thread_id = memory.user_id, memory.thread_id
        window = self.window(memory.context_window)
        threshold = self.threshold(window)
        max_summary = max(32, int(threshold * self.settings.summary.summary_fraction))
        keep = self._kept(memory.messages, threshold, max_summary, keep_recent)
        older = memory.messages[: len(memory.messages) - keep]
        if not older:
            # Nothing old enough to fold in: when forced, report the thread as it is and write nothing
            # (an empty summary must never be stored).
            if not force:
                return None
            budget = int(threshold * self.settings.summary.keep_recent_fraction)
            return _as_it_is(
                memory,
                NothingFolded(len(memory.messages), memory.token_count, keep_recent, budget, threshold),
            )
        # A summary is never longer than what it replaces.
        max_summary = min(max_summary, memory.summary_token_count + sum(m.token_count for m in older))
        if progress:
            await progress(0, 2, f"summarizing {len(older)} messages")
        summarizer = await self._summarizer_within_budget(user_id, force=force)
        summary = await self._fold(summarizer, memory.summary, older, max_summary)
        summary_tokens = self.tokens.count(summary)
        done = await self.stores.working.compact(
            user_id,
            thread_id,
            expected_version=memory.summary_version,
            removed_ids=[m.id for m in older],
            summary=summary,
            summary_token_count=summary_tokens,
        )
        if not done:
            log.info("thread %s changed while it was summarized; the next turn retries", thread_id)
            return None
        self.metrics.summarized("extractive" if isinstance(summarizer, ExtractiveSummarizer) else "model")
        if progress:
            await progress(1, 2, "storing the summary in long-term memory")
        await self._store_summary(memory, older, summary, summary_tokens, window)
        if progress:
            await progress(2, 2, "summarized")
        tokens_after = summary_tokens + sum(m.token_count for m in memory.messages[len(older) :])
        by_model = not isinstance(summarizer, ExtractiveSummarizer)
        folded = Folded(
            len(older), sum(m.token_count for m in older), keep, memory.token_count, tokens_after, by_model
        )
        return SummarizeResult(
            thread_id=thread_id,
            summary=summary,
            summarized_count=len(older),
            kept_count=keep,
            tokens_before=memory.token_count,
            tokens_after=tokens_after,
            message=said(folded),
        )

    async def _fold(
        self, summarizer: Summarizer, previous: str, older: list[Message], max_tokens: int
    ) -> str:
        """The new summary: `older` folded into `previous`. A message longer than the whole summary
        can only be there as a digest, so the summary also says where it is kept whole (a note per such
        message, newest first while they fit in half the budget) and the digest gets the rest."""
        notes: list[str] = []
        used = 0
        for message in reversed(older):
            if message.token_count <= max_tokens:
                continue
            # With how it begins when that fits, else what and where only.
            fits = [
                (note, cost)
                for note in (kept_whole_note(message), kept_whole_note(message, opening=False))
                if used + (cost := self.tokens.count(note) + 1) <= max_tokens // 2
            ]
            if not fits:
                break
            notes.insert(0, fits[0][0])
            used += fits[0][1]
        digest = await summarizer.summarize(previous, older, max_tokens - used)
        return "\n".join(part for part in (digest, *notes) if part)

    async def _summarizer_within_budget(self, user_id: str, *, force: bool) -> Summarizer:
        """The configured summarizer, charged to the user's LLM budget. Past the budget, an explicit
        summarize_thread is refused; an automatic one uses the offline extractive summarizer, so turns
        keep being recorded."""
        if isinstance(self.summarizer, ExtractiveSummarizer):
            return self.summarizer
        try:
            await self.budget.charge(user_id, "a summary with the model", background=False)
        except BudgetUsedUp:
            if force:
                raise
            log.info("LLM quota used up for a user; summarizing this thread offline")
            return ExtractiveSummarizer(self.tokens.count)
        return self.summarizer

    def _kept(
        self, messages: list[Message], threshold: int, max_summary: int, keep_recent: int | None
    ) -> int:
        """How many of the newest messages stay verbatim."""
        if keep_recent is not None:
            return min(keep_recent, len(messages))
        budget = int(threshold * self.settings.summary.keep_recent_fraction)
        kept, used = 0, 0
        for message in reversed(messages):
            if used + message.token_count > budget:
                break
            kept, used = kept + 1, used + message.token_count
        # Always keep the newest message verbatim when it fits beside the summary under the threshold.
        if kept == 0 and messages and messages[-1].token_count + max_summary < threshold:
            kept = 1
        return kept

    async def _store_summary(
        self, before: WorkingMemory, older: list[Message], summary: str, tokens: int, window: int
    ) -> None:
        vector, passage_vectors = None, None
        if self.vectors is None:
            vector, passage_vectors = memory_vectors((await embed_passages(self.embedder, [summary]))[0])
        last = older[-1] if older else None
        stored = [
            Memory(
                id=summary_id(before.user_id, before.thread_id),
                user_id=before.user_id,
                thread_id=before.thread_id,
                role=None,
                type="summary",
                content=summary,
                embedding=vector,
                passage_embeddings=passage_vectors,
                token_count=tokens,
                updated_at=utcnow(),
                metadata={
                    "summarizer": self.summarizer.name,
                    "summary_version": before.summary_version + 1,
                    "summarized_through": last.id if last else None,
                    "summarized_through_created_at": last.created_at.isoformat() if last else None,
                    "context_window": window,
                },
            )
        ]
        try:
            await self.stores.long_term.put(stored)
        except LimitExceededError as e:
            # The thread is compacted already and its turns are all in long term: only this rewrite of
            # the summary is lost (a rebuild starts from the previous one). Failing add_turn for it
            # would report a stored turn as refused.
            log.warning("summary of thread %s not stored in long-term memory: %s", before.thread_id, e)
            return
        if self.vectors is not None:
            await self.vectors.add(stored[0])
        if self.learning is not None:
            self.learning.summary_stored(before.user_id, before.thread_id, stored[0])


def kept_whole_note(message: Message, *, opening: bool = True) -> str:
    """A summary's line for a message too long to summarize faithfully: what it was, where it is kept
    whole and (with `opening`) how its first line begins."""
    speaker = {"user": "The user", "assistant": "The assistant", "tool": "A tool"}.get(
        message.role, "The system"
    )
    note = (
        f"{speaker} sent a text of {len(message.content):,} characters ({message.token_count:,} tokens) "
        f"on {message.created_at:%Y-%m-%d %H:%M}, kept whole at memory://memories/{message.id}"
    )
    if not opening:
        return note + "."
    head = message.content.lstrip()[: OPENING_CHARS + 1]
    first = head.splitlines()[0] if head else ""
    begins = first if len(first) <= OPENING_CHARS else first[:OPENING_CHARS].rstrip() + "…"
    return f"{note}; it begins: {begins}"


def _as_it_is(memory: WorkingMemory, why: NothingFolded) -> SummarizeResult:
    """A forced summary with nothing to fold in: the thread as it is, and why."""
    return SummarizeResult(
        thread_id=memory.thread_id,
        summary=memory.summary,
        summarized_count=0,
        kept_count=len(memory.messages),
        tokens_before=memory.token_count,
        tokens_after=memory.token_count,
        message=said(why),
    )
