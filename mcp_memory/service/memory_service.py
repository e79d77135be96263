"""MemoryService: every rule of the product lives here. Tools, resources, the demo and the benchmarks
all call these methods; stores only store.

Every method takes the user id first: the server binds it from configuration (stdio) or from the
authenticated principal, never from a tool argument.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeGuard

import anyio

from mcp_memory import redaction, safety
from mcp_memory import validation as check
from mcp_memory.audit import COMMAND_ACTOR, Auditor, Draft
from mcp_memory.config import Settings
from mcp_memory.errors import BackendUnavailableError, InvalidInputError, NotFoundError, PermissionDeniedError
from mcp_memory.learning.budget import LlmBudget
from mcp_memory.llm.embedder import Embedder, embed_passages, memory_vectors
from mcp_memory.llm.query_vectors import QueryVectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import (
    SHORT_ID,
    Memory,
    Message,
    Owner,
    Scope,
    ThreadInfo,
    ThreadTotals,
    author_of,
    space_key,
    space_of,
    utcnow,
)
from mcp_memory.observability.metrics import Metrics
from mcp_memory.search.context import TurnContexts, contexts_without, thread_contexts, turn_contexts
from mcp_memory.search.query import SearchQuery
from mcp_memory.security.spaces import SPACES_FILE, stored_bytes_quota
from mcp_memory.service import portability
from mcp_memory.service.chat_exports import ChatFormat, Conversation, parse_conversations
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.searching import Searching
from mcp_memory.service.summaries import SummaryRunner
from mcp_memory.service.summarizer import Summarizer
from mcp_memory.service.threads import LearningHooks, Progress, ThreadKeeper
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.service.warmup import Warmup
from mcp_memory.storage import Stores
from mcp_memory.storage.usage import refuse_without_room, revision_bytes
from mcp_memory.views import (
    AddTurnResult,
    ConversationImport,
    ExportResult,
    ForgetResult,
    ImportResult,
    LongTermForgetView,
    SearchResult,
    SummarizeResult,
    TurnView,
    WorkingForgetView,
    WorkingMemoryUsage,
    WorkingMemoryView,
)

log = logging.getLogger(__name__)

# Called after a thread changes (thread id, or None when the list of threads changed, or GRAPH_CHANGE
# when the owner's knowledge graph changed).
ChangeListener = Callable[[str, str | None], Awaitable[None]]


CONTEXT_LOCK_STRIPES = 64


@dataclass
class MemoryService:
    settings: Settings
    stores: Stores
    embedder: Embedder
    tokens: TokenCounter
    summarizer: Summarizer
    on_change: ChangeListener | None = None
    learning: LearningHooks | None = None
    warmup: Warmup | None = None  # the start-up build of the search indexes (long_term.warm_on_start)
    # Every model call's hourly budget, in learning's shared counter store (else this process's).
    llm_budget: LlmBudget | None = None
    # Embeds turns after add_turn acknowledges them, when the embedder and the store allow it.
    vectors: VectorWriter | None = None
    # The knowledge graph (service/graph/): its observations are memories here, so forget reaches it.
    graph: KnowledgeGraph | None = None
    metrics: Metrics = field(default_factory=Metrics)  # the server's (observability/metrics.py)
    # Summaries that may finish after add_turn's reply (service/summaries.py); None: always before it.
    summaries: SummaryRunner | None = None
    # The audit trail (audit/): every change and every read of a space, recorded; off without a log.
    audit: Auditor = field(default_factory=lambda: Auditor(None, default_actor=COMMAND_ACTOR))
    threads: ThreadKeeper = field(init=False)
    query_vectors: QueryVectors = field(init=False)  # search queries' vectors, the recent ones kept
    # Writes to one thread's full-text contexts (add_turn, forgetting a turn) take turns in this
    # process: a forget between an add's read of its neighbours and its rewrite of their contexts would
    # otherwise let the forgotten words back in. Striped: a fixed number of locks, whatever the threads.
    _context_locks: tuple[anyio.Lock, ...] = field(init=False, repr=False)
    _members_seen: dict[str, dict[str, str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.query_vectors = QueryVectors(
            self.embedder, self.settings.search.cached_queries, self.metrics.query_vector
        )
        self._context_locks = tuple(anyio.Lock() for _ in range(CONTEXT_LOCK_STRIPES))
        self.threads = ThreadKeeper(
            self.settings,
            self.stores,
            self.embedder,
            self.tokens,
            self.summarizer,
            self.llm_budget or LlmBudget.in_process(self.settings, self.metrics),
            self.learning,
            self.metrics,
            self.vectors,
        )

    # ---- turns ---------------------------------------------------------------------------------

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
        content = check.content(content, self.settings.max_content_chars)
        metadata = check.metadata(metadata)
        if self.settings.security.redact_secrets:  # before anything else sees them: see redaction/
            content, metadata = await _redacted(content, metadata)
        context_window = check.context_window(context_window)
        said_at = check.created_at(created_at, utcnow())
        if said_at is not None:
            await self._check_in_order(user_id, thread_id, said_at)
        if self.settings.security.flag_instructions:
            metadata = safety.stamp(metadata, content)  # data, never instructions: see safety.py

        tokens = await self.tokens.count_off_loop(content)
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
        if self.vectors is not None:
            await self.vectors.add(turn)  # waits only while the backlog is full
        created, totals = await self._keep_working(user_id, thread_id, message, context_window)
        if self.graph is not None:
            await self.graph.link_memory(turn)  # the entities it names (service/graph/)
        if self.learning is not None:
            self.learning.turn_stored(user_id, thread_id, turn.id)  # queued: no latency here
        if created:
            await self._changed(user_id, None)

        window = self._window(totals)
        summarized, totals = await self._summarize_if_full(user_id, thread_id, totals, progress)
        await self._changed(user_id, thread_id)
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
                **self.threads.usage(totals.token_count, window).model_dump(),
                message_count=totals.message_count,
            ),
            summarized=summarized,
        )

    def _window(self, totals: ThreadTotals) -> int:
        return totals.context_window or self.settings.summary.default_context_window

    async def _summarize_if_full(
        self, user_id: str, thread_id: str, totals: ThreadTotals, progress: Progress | None
    ) -> tuple[bool, ThreadTotals]:
        """Summarize the thread when this turn took it over its threshold: whether a summary started,
        and the thread's totals after it (unchanged while the summary goes on after the reply)."""
        if totals.token_count <= self.threads.threshold(self._window(totals)):
            return False, totals
        summarized, written = await self._summarize_soon(user_id, thread_id, progress)
        if written:  # else the reply counts the thread as it is: the summary is still running
            totals = await self.threads.totals(user_id, thread_id)
        return summarized, totals

    async def _check_in_order(self, user_id: str, thread_id: str, said_at: datetime) -> None:
        """A replayed turn goes after the thread's latest: working memory keeps turns in the order they
        arrive, long term (and a rebuild, and summaries' summarized_through_created_at) by created_at,
        so an earlier time would put the two out of step."""
        latest = await self.stores.long_term.recent(user_id, thread_id, limit=1)
        if latest and said_at < latest[-1].created_at:
            raise InvalidInputError(
                f"created_at {said_at.isoformat()} is before the latest turn of thread {thread_id!r} "
                f"({latest[-1].created_at.isoformat()}): replay a conversation's turns in order, "
                "or into a new thread"
            )

    async def _turn_vectors(self, content: str) -> tuple[list[float] | None, list[list[float]] | None]:
        """A turn's vector, and one a passage for a long turn (search/passages.py); none with a vector
        writer, which embeds the turn after it is acknowledged (service/vectors.py)."""
        if self.vectors is not None:
            return None, None
        return memory_vectors((await embed_passages(self.embedder, [content]))[0])

    async def _store_turn(
        self,
        user_id: str,
        thread_id: str,
        message: Message,
        vectors: tuple[list[float] | None, list[list[float]] | None],
    ) -> Memory:
        """The turn, in long-term memory with its full-text context (and its neighbours' rewritten)."""
        vector, passage_vectors = vectors
        async with self._context_lock(user_id, thread_id):
            contexts = await self._index_contexts(user_id, thread_id, message.content, message.created_at)
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
            async with self.audit.change(user_id, "add", thread_id=thread_id, tool="add_turn") as record:
                record.note([turn.id], {"turn": 1})
                await self.stores.long_term.put([turn])
            await self._rewrite_contexts(user_id, contexts.rewritten)
        return turn

    async def _keep_working(
        self, user_id: str, thread_id: str, message: Message, context_window: int | None
    ) -> tuple[bool, ThreadTotals]:
        """The turn, appended to the thread's working memory (restored first when absent): whether the
        thread was created, and its totals."""
        try:
            created = await self.threads.restore_if_absent(user_id, thread_id, context_window)
            # Skipped by the store when the restore (ours or a concurrent writer's) already holds this turn.
            totals = await self.stores.working.append(
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
        if self.summaries is None:
            written = (
                await self.threads.summarize(user_id, thread_id, keep_recent=None, progress=progress)
                is not None
            )
            return written, written
        replying = True

        async def report(done: float, total: float | None, message: str | None) -> None:
            if replying and progress is not None:  # the client hears of it only while the request lasts
                await progress(done, total, message)

        async def summarize() -> SummarizeResult | None:
            result = await self.threads.summarize(user_id, thread_id, keep_recent=None, progress=report)
            if result is not None and not replying:
                await self._changed(user_id, thread_id)  # the reply went before the summary
            return result

        try:
            started = await self.summaries.start(
                (user_id, thread_id), summarize, self.settings.summary.inline_seconds
            )
        finally:
            replying = False
        written = started.done and started.result is not None
        return written or not started.done, written

    async def _summary_settled(self, user_id: str, thread_id: str) -> None:
        if self.summaries is not None:
            await self.summaries.settled((user_id, thread_id))

    # ---- search --------------------------------------------------------------------------------

    async def search(self, query: SearchQuery) -> SearchResult:
        """search_memory for the query the tool built and checked (SearchQuery.of), over its owners: a
        user's personal memory and the spaces they read, or one of them; ranked by the store, scored,
        floored and fitted (service/searching.py)."""
        searching = Searching(
            self.settings, self.stores.long_term, self.query_vectors, self.tokens, self.vectors, self.graph
        )
        return await searching.run(query)

    # ---- working memory ------------------------------------------------------------------------

    async def get_working_memory(
        self, user_id: str, thread_id: str, recent: int | None = None
    ) -> WorkingMemoryView:
        thread_id = check.thread_id(thread_id)
        if recent is not None:
            recent = check.count(recent, "recent", low=0, high=10_000)
        await self._summary_settled(user_id, thread_id)
        memory = await self.threads.load(user_id, thread_id)
        window = memory.context_window or self.settings.summary.default_context_window
        messages = memory.messages if recent is None else memory.messages[len(memory.messages) - recent :]
        return WorkingMemoryView(
            thread_id=thread_id,
            summary=memory.summary,
            messages=messages,
            message_count=len(memory.messages),
            data=memory.data,
            **self.threads.usage(memory.token_count, window).model_dump(),
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
        await self._summary_settled(user_id, thread_id)
        memory = await self.threads.load(user_id, thread_id)
        if not memory.messages and not memory.summary:
            raise NotFoundError(f"thread {thread_id!r} has no messages to summarize")
        async with self.audit.change(user_id, "summarize", thread_id=thread_id, tool="summarize_thread"):
            result = await self.threads.summarize(
                user_id, thread_id, keep_recent=keep_recent, progress=progress, force=True
            )
        if result is None:
            raise BackendUnavailableError(
                f"thread {thread_id!r} is being summarized by another request right now; try again shortly"
            )
        await self._changed(user_id, thread_id)
        return result

    async def set_thread_data(self, user_id: str, thread_id: str, data: dict[str, Any]) -> None:
        thread_id = check.thread_id(thread_id)
        data = check.metadata(data, "data")
        if self.settings.security.redact_secrets:
            data = redaction.redact_values(data)
        await self.stores.working.set_data(user_id, thread_id, data)
        await self._changed(user_id, thread_id)

    async def list_threads(self, owners: str | Sequence[str]) -> list[ThreadInfo]:
        """The threads of `owners` (a user's personal memory, and the spaces they read), newest first;
        each says its space."""
        live: dict[tuple[str | None, str], ThreadInfo] = {}
        for key in [owners] if isinstance(owners, str) else owners:
            space = space_of(key)
            for thread in await self.stores.working.list_threads(key):
                live[space, thread.thread_id] = thread.model_copy(update={"space": space})
            # Threads whose working memory expired still exist in long term.
            for thread in await self.stores.long_term.list_threads(key):
                live.setdefault((space, thread.thread_id), thread.model_copy(update={"space": space}))
        newest_first = sorted(
            (t for t in live.values() if t.updated_at), key=lambda t: t.updated_at or utcnow(), reverse=True
        )
        return newest_first + [t for t in live.values() if not t.updated_at]

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
                f"memory_id {memory_id!r} begins more than one memory's id: give the whole id"
            )
        if not found:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        return await self.stores.long_term.get(*found[0])

    async def notice_memberships(self) -> None:
        """Record in each space's audit trail a change of its members or roles in the settings, the first
        time a request sees it (the spaces file is read again when it changes: security/spaces.py)."""
        members: dict[str, dict[str, str]] = {
            s.name: dict(s.members) for s in SPACES_FILE.spaces(self.settings.security)
        }
        if members != self._members_seen:
            await self.audit.memberships(members)
            self._members_seen = members

    # ---- forgetting ----------------------------------------------------------------------------

    async def forget(
        self,
        user_id: str,
        memory_id: str | None = None,
        thread_id: str | None = None,
        everything: bool = False,
        dry_run: bool = False,
    ) -> ForgetResult:
        named = [n for n, v in (("memory_id", memory_id), ("thread_id", thread_id)) if v is not None]
        if everything:
            named.append("everything")
        if len(named) != 1:
            raise InvalidInputError(
                "forget takes exactly one scope: memory_id, thread_id or everything=true"
                + (f" (got {' and '.join(named)})" if named else "")
            )
        memory: Memory | None = None
        if memory_id is not None:
            memory = await self.stores.long_term.get(user_id, check.memory_id(memory_id))
            _may_forget(user_id, memory)
            scope = Scope(user_id=user_id, memory_id=memory.id, thread_id=memory.thread_id)
            kind = "memory"
        elif _a_writer_in_a_space(user_id):  # a thread or everything: their own part of it
            thread = None if thread_id is None else check.thread_id(thread_id)
            return await self._forget_own_part(user_id, thread, dry_run)
        elif thread_id is not None:
            scope = Scope(user_id=user_id, thread_id=check.thread_id(thread_id))
            kind = "thread"
        else:
            scope = Scope(user_id=user_id, everything=True)
            kind = "everything"

        if scope.thread_id is not None and not dry_run:
            await self._summary_settled(user_id, scope.thread_id)  # not written after the forget
        if dry_run:
            return await self._forget_scope(scope, kind, memory, dry_run=True)
        async with self.audit.change(user_id, "forget", thread_id=scope.thread_id, tool="forget") as record:
            result = await self._forget_scope(scope, kind, memory, dry_run=False)
            record.note([scope.memory_id] if scope.memory_id else (), result.long_term.by_type)
        if kind == "everything" and space_of(user_id) is None:
            # Nothing of them stays: their personal trail keeps its shape under their pseudonym.
            await self.audit.pseudonymize(user_id, own_trail_only=True)
        return result

    async def _forget_scope(
        self, scope: Scope, kind: str, memory: Memory | None, *, dry_run: bool
    ) -> ForgetResult:
        """Removes (or, with dry_run, counts) what the scope names (`memory`: the one memory it names)."""
        user_id = scope.user_id
        summary_memory = memory if memory is not None and memory.type == "summary" else None
        one_turn = memory is not None and memory.type == "turn" and memory.thread_id is not None
        async with self._context_lock(user_id, scope.thread_id) if one_turn else contextlib.nullcontext():
            around = (
                await self._turns_around(memory) if memory is not None and one_turn and not dry_run else []
            )
            working = await self.stores.working.forget(scope, dry_run=dry_run)
            long_term = await self.stores.long_term.forget(scope, dry_run=dry_run)
            if around and memory is not None:  # the turns whose context held the forgotten turn's words
                await self._rewrite_contexts(user_id, contexts_without(around, memory.id, **self._reach()))
        if self.learning is not None:
            await self.learning.forgotten(scope, dry_run=dry_run)  # revisions go too
        graph = await self.graph.forgotten(scope, dry_run=dry_run) if self.graph is not None else 0
        if summary_memory is not None and summary_memory.thread_id and not dry_run:
            await self.threads.clear_summary(user_id, summary_memory.thread_id)
        if not dry_run:
            await self._changed(user_id, scope.thread_id if kind != "everything" else None)
            if kind != "memory":
                await self._changed(user_id, None)
        return ForgetResult(
            scope=kind,
            dry_run=dry_run,
            working_memory=WorkingForgetView(threads=working.threads, messages=working.messages),
            long_term=LongTermForgetView(memories=sum(long_term.values()), by_type=long_term),
            stores={
                f"working memory ({self.settings.working.resolved_backend})": working.messages,
                f"long term ({self.settings.long_term.resolved_backend})": sum(long_term.values()),
                f"knowledge graph ({self.settings.long_term.resolved_backend})": graph,
            },
            forgotten_at=utcnow(),
        )

    async def forget_user(self, user_id: str, *, dry_run: bool = False) -> ForgetResult:
        """forget_user: everything of the user's personal memory and, in every configured space, what
        they wrote (their turns, the facts they remembered), each thread's summary that their turns went
        into (rebuilt from the turns that remain at its next summarization) and the working memory of
        those threads; what others wrote, and what the server learned in a space, stay (docs/security.md).
        One receipt for all of it. The spaces are the ones every request sees (the cached reader of
        security/spaces.py: a broken edit of the spaces file keeps the last good one)."""
        async with self._audited(user_id, "forget_user", dry_run) as record:
            result = await self.forget(user_id, everything=True, dry_run=dry_run)
            record.note(counts=result.long_term.by_type)
        for space in SPACES_FILE.spaces(self.settings.security):
            written = await self._written_by(space_key(space.name), user_id)
            if not written:
                continue
            async with self._audited(space_key(space.name), "forget_user", dry_run) as record:
                record.seal((m.id for m in written), dict(Counter(m.type for m in written)))
                for memory in written:
                    with contextlib.suppress(NotFoundError):  # forgotten meanwhile, or with its summary
                        _merge(result, await self.forget(space_key(space.name), memory.id, dry_run=dry_run))
        if not dry_run:
            await self.audit.pseudonymize(user_id)  # the trail keeps its shape; the chain verifies
        return result

    def _audited(self, ledger: str, action: str, dry_run: bool) -> AbstractAsyncContextManager[Draft]:
        """The change's audit record; a dry run changes nothing and records nothing."""
        if dry_run:
            return contextlib.nullcontext(Draft(ledger=ledger, actor=COMMAND_ACTOR, action=action))
        return self.audit.change(ledger, action)

    async def _written_by(self, key: str, user_id: str) -> list[Memory]:
        """What the user wrote in the space under `key`, and the summaries of the threads they spoke in."""
        return _part_of(await self.stores.long_term.memories_of(key), user_id)

    async def _forget_own_part(self, writer: Owner, thread_id: str | None, dry_run: bool) -> ForgetResult:
        """A writer's forget of a thread (or of everything) in a space: what they wrote there (turns,
        facts, observations) and the summaries their turns went into, rebuilt from the turns that remain
        at the thread's next summarization, as forget_user does. What others wrote stays, counted in the
        receipt; an owner's forget removes everything instead."""
        memories = await self.stores.long_term.memories_of(writer)
        in_scope = [m for m in memories if thread_id is None or m.thread_id == thread_id]
        theirs = _part_of(in_scope, writer.author)
        receipt = _receipt("thread" if thread_id is not None else "everything", dry_run)
        async with self._audited(writer, "forget", dry_run) as record:
            record.thread_id = thread_id
            record.seal((m.id for m in theirs), dict(Counter(m.type for m in theirs)))
            for memory in theirs:
                with contextlib.suppress(NotFoundError):  # forgotten meanwhile, or with its summary
                    _merge(receipt, await self.forget(str(writer), memory.id, dry_run=dry_run))
        gone = {m.id for m in theirs}
        receipt.left_by_others = dict(Counter(m.type for m in in_scope if m.id not in gone))
        return receipt

    # ---- export and import ---------------------------------------------------------------------

    async def export_memories(self, user_id: str) -> ExportResult:
        # Observations leave inside the graph line (portability.py), with the entity they belong to.
        memories = [m for m in await self.stores.long_term.memories_of(user_id) if m.type != "observation"]
        graph = await self.graph.read_graph(user_id) if self.graph is not None else None
        revisions = await portability.revisions_of(self._revision_store(), user_id, memories)
        threads = []
        for info in await self.stores.working.list_threads(user_id):
            memory = await self.stores.working.get(user_id, info.thread_id)
            if memory is not None:
                threads.append(memory)
        lines = portability.export_lines(user_id, memories, revisions, threads, graph)
        counts = json.loads(lines[0])["counts"]
        return ExportResult(
            format=portability.EXPORT_FORMAT, lines=len(lines), counts=counts, jsonl="\n".join(lines) + "\n"
        )

    async def import_memories(self, user_id: str, jsonl: str, dry_run: bool = False) -> ImportResult:
        parsed = portability.parse(jsonl)
        if self.settings.security.redact_secrets:  # before anything is stored: see redaction/
            parsed = await anyio.to_thread.run_sync(portability.redacted, parsed)
        # An observation comes with its entity in the graph line, under an id of the importer's own.
        memories = [
            m
            for m in portability.to_memories(user_id, parsed, self.settings.max_content_chars)
            if m.type != "observation"
        ]
        result = ImportResult(
            dry_run=dry_run,
            memories=len(memories),
            by_type=dict(Counter(m.type for m in memories)),
            revisions=len(parsed.revisions),
            threads=len(parsed.threads),
            flagged=sum(1 for m in memories if safety.FLAGS_KEY in m.metadata),
            imported_at=utcnow(),
        )
        if not dry_run and parsed.graph is not None and self.graph is not None:
            graph = parsed.graph.model_dump(by_alias=True)
            await self.graph.create_entities(user_id, graph["entities"], limited=False)
            await self.graph.create_relations(user_id, graph["relations"], limited=False)
        if dry_run or not memories:
            return result
        # Imported turns are found by the turns around them too, as turns added one by one are.
        turns = [m for m in memories if m.type == "turn" and m.thread_id is not None]
        contexts = thread_contexts(turns, **self._reach())
        for turn in turns:
            turn.index_context = contexts[turn.id]
        for start in range(0, len(memories), 64):
            batch = memories[start : start + 64]
            vectors = await embed_passages(self.embedder, [m.content for m in batch])
            for memory, passage_vectors in zip(batch, vectors, strict=True):
                memory.embedding, memory.passage_embeddings = memory_vectors(passage_vectors)
                memory.token_count = self.tokens.count(memory.content)
        async with self.audit.change(user_id, "import", tool="import_memories") as record:
            record.seal((m.id for m in memories), result.by_type)
            await self._store_import(user_id, parsed, memories)
        for thread in parsed.threads:
            rebuilt = await self.threads.from_long_term(user_id, thread.thread_id, thread.context_window)
            if rebuilt is not None:
                rebuilt.data = thread.data
                await self.stores.working.restore(rebuilt)  # only when the thread is not live already
        await self._changed(user_id, None)
        return result

    async def _store_import(
        self, user_id: str, parsed: portability.ParsedImport, memories: list[Memory]
    ) -> None:
        """History first, then one put of every memory: the put checks the whole import against the
        storage quota with the history already counted, so a refused import takes its history back and
        leaves nothing behind."""
        store: Any = self._revision_store()
        history = await portability.pending_revisions(store, user_id, parsed, memories)
        size = sum(revision_bytes(r.content, r.source_text) for r in history)
        limit = stored_bytes_quota(self.settings.security)
        await refuse_without_room(self.stores.long_term, user_id, size, limit)  # before any write
        for revision in history:
            await store.append(revision)
        try:
            await self.stores.long_term.put(memories)
        except BaseException:
            with anyio.CancelScope(shield=True):
                for memory_id in dict.fromkeys(r.memory_id for r in history):  # they had none before
                    await store.forget(Scope(user_id=user_id, memory_id=memory_id))
            raise

    async def import_conversations(
        self, user_id: str, text: str, source: ChatFormat, *, dry_run: bool = False
    ) -> ConversationImport:
        """A ChatGPT or Claude export (service/chat_exports.py) as threads of turns at their original
        times, through add_turn (so threads are summarized and learned from as if they had happened
        here). A message imported before (its metadata.source_id is in the thread) is skipped, so a
        second import of the same export adds nothing and a later export adds only what is new."""
        conversations = parse_conversations(text, source)
        report = ConversationImport(format=source, conversations=len(conversations))
        if dry_run:
            report.messages = sum(len(c.messages) for c in conversations)
            return report
        # Many turns: one record of them all, written when the import ends (audit/log.py).
        async with self.audit.change(user_id, "import", tool="import_conversations", at_end=True):
            await self._import_conversations(user_id, conversations, source, report)
        report.skipped = report.messages - report.imported
        return report

    async def _import_conversations(
        self, user_id: str, conversations: list[Conversation], source: ChatFormat, report: ConversationImport
    ) -> None:
        for conversation in conversations:
            report.messages += len(conversation.messages)
            if not conversation.messages:
                continue
            thread = conversation.thread_id
            known = await self.stores.long_term.recent(user_id, thread, limit=1_000_000)
            done = {m.metadata.get("source_id") for m in known}
            floor = known[-1].created_at if known else None
            new = [m for m in conversation.messages if m.source_id not in done]
            for message in new:
                # Times never go back within a thread (add_turn's rule); a message without one takes
                # the one before it, or the conversation's.
                said_at = message.created_at or floor or conversation.created_at or utcnow()
                floor = max(said_at, floor) if floor is not None else said_at
                await self.add_turn(
                    user_id,
                    thread,
                    message.role,
                    message.content,
                    {"source": source, "source_id": message.source_id},
                    created_at=floor,
                )
            if new:
                report.threads += 1
                report.imported += len(new)
                if conversation.title:  # redacted there, as each message is in add_turn
                    await self.set_thread_data(
                        user_id, thread, {"title": conversation.title, "source": source}
                    )

    def _revision_store(self) -> object | None:
        # Revisions live in learning's store when learning is on, else in the backend's own, if any.
        return getattr(self.learning, "revisions", None) or getattr(self.stores, "revisions", None)

    # ---- internals -----------------------------------------------------------------------------

    def _context_lock(self, user_id: str, thread_id: str | None) -> anyio.Lock:
        stripe = zlib.crc32(f"{user_id}\x00{thread_id}".encode()) % CONTEXT_LOCK_STRIPES
        return self._context_locks[stripe]

    def _reach(self) -> dict[str, int]:
        """How many turns before and after a turn its full-text context holds."""
        search = self.settings.search
        return {"before": search.context_turns, "after": search.context_turns_after}

    async def _turns_around(self, memory: Memory) -> list[Memory]:
        reach = sum(self._reach().values())
        return await self.stores.long_term.turns_around(memory.user_id, memory.id, reach=reach)

    async def _rewrite_contexts(self, user_id: str, contexts: dict[str, str]) -> None:
        if contexts:
            await self.stores.long_term.set_index_contexts(user_id, contexts)

    async def _index_contexts(
        self, user_id: str, thread_id: str, content: str, moment: datetime
    ) -> TurnContexts:
        """The new turn's full-text context (search/context.py says why), and the new contexts of the
        turns just before it, which now have a turn after them."""
        reach = self._reach()
        wanted = sum(reach.values())
        earlier = await self.stores.long_term.recent(user_id, thread_id, limit=wanted) if wanted else []
        return turn_contexts(earlier, content, moment, **reach)

    async def _changed(self, user_id: str, thread_id: str | None) -> None:
        if self.on_change is not None:
            await self.on_change(user_id, thread_id)


# Redacting a turn this long or longer runs on a worker thread (about 1 ms per 3,000 characters), as
# does the first, which loads detect-secrets (a few hundred ms).
REDACT_OFF_LOOP_CHARS = 8_192


async def _redacted(content: str, metadata: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The turn's text and metadata with credentials and <private> spans replaced (redaction/)."""
    if len(content) < REDACT_OFF_LOOP_CHARS and redaction.loaded():
        return redaction.redact_memory(content, metadata)
    return await anyio.to_thread.run_sync(redaction.redact_memory, content, metadata)


def _may_forget(key: str, memory: Memory) -> None:
    """In a space, a writer forgets one memory only if they wrote it; anyone's needs the owner role. (A
    thread or everything by a writer is their own part of it: _forget_own_part. A reader never gets
    here: writing needs the writer role.)"""
    if not _a_writer_in_a_space(key) or memory.author == key.author:
        return
    raise PermissionDeniedError(
        f"forgetting memory {memory.id!r}, which {_by(memory)} in space {key.space!r} needs the owner "
        f"role; you are a {key.role} there and may forget only what you wrote"
    )


def _by(memory: Memory) -> str:
    if memory.author is None:
        return "the server wrote"
    return f"{memory.author} wrote"


def _merge(receipt: ForgetResult, more: ForgetResult) -> None:
    receipt.working_memory.threads += more.working_memory.threads
    receipt.working_memory.messages += more.working_memory.messages
    receipt.long_term.memories += more.long_term.memories
    for kind, count in more.long_term.by_type.items():
        receipt.long_term.by_type[kind] = receipt.long_term.by_type.get(kind, 0) + count
    for store, count in more.stores.items():
        receipt.stores[store] = receipt.stores.get(store, 0) + count


def _receipt(scope: str, dry_run: bool) -> ForgetResult:
    """A receipt with nothing in it yet, for forgets made of several."""
    return ForgetResult(
        scope=scope,
        dry_run=dry_run,
        working_memory=WorkingForgetView(threads=0, messages=0),
        long_term=LongTermForgetView(memories=0, by_type={}),
        forgotten_at=utcnow(),
    )


def _part_of(memories: list[Memory], author: str) -> list[Memory]:
    """What `author` wrote among `memories`, and the summaries of the threads their turns are in."""
    written = [m for m in memories if m.author == author]
    threads = {m.thread_id for m in written if m.type == "turn" and m.thread_id}
    return written + [m for m in memories if m.type == "summary" and m.thread_id in threads]


def _a_writer_in_a_space(key: str) -> TypeGuard[Owner]:
    return isinstance(key, Owner) and key.space is not None and not key.may("owner")
