"""Learning: the collaborator MemoryService calls after a turn or a summary is stored, and on forget.

Hooks only queue work (never await), so add_turn's latency does not change. Background jobs then
count turns in the store, extract facts every N turns and on every summary, reconcile every K
extractions and keep the user profile current. Which model answers: the configured LLM, else the
client's own through MCP sampling (a handshake-era session that offers it), else nobody: extraction
and reconciliation are off (the tools say so) and the profile is built offline from the facts.

Every model call is charged to the user's LLM budget first (budget.py). One refused for an extraction
leaves the thread's turns pending and the thread waiting (status.py): it is extracted again when the
budget window ends, or on the user's first turn after that, whichever comes first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import anyio

from mcp_memory.config import Settings
from mcp_memory.errors import (
    BackendUnavailableError,
    LimitExceededError,
    MemoryServerError,
)
from mcp_memory.learning.budget import BudgetUsedUp, LlmBudget
from mcp_memory.learning.editing import MemoryEditor
from mcp_memory.learning.extraction import (
    LOOKBACK_BATCHES,
    ExtractionBatch,
    Extractor,
    mark_key,
    turns_after_mark,
)
from mcp_memory.learning.profile import ProfileWriter, profile_id
from mcp_memory.learning.reconcile import ReconcileBatch, Reconciler
from mcp_memory.learning.status import StatusBoard
from mcp_memory.learning.triggers import Triggers, turns_key
from mcp_memory.learning.worker import Job, Worker
from mcp_memory.learning.writer import MemoryWriter
from mcp_memory.llm.chat import ChatModel
from mcp_memory.llm.metered import MeteredChat, provider_of
from mcp_memory.llm.prompts import RenderedPrompt
from mcp_memory.llm.sampling import SamplingSessions
from mcp_memory.models import Memory, Scope, space_of, utcnow
from mcp_memory.observability.metrics import Metrics
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.learning_base import RevisionStore, TriggerCounters
from mcp_memory.views import ExtractionReport, LearningStatus, ReconcileReport

log = logging.getLogger(__name__)

_DAY = 86_400.0
NO_MODEL = "no model to learn with: no LLM is configured and no client that offers sampling is connected"


@dataclass
class Learning:
    settings: Settings
    long_term: LongTermStore
    revisions: RevisionStore
    counters: TriggerCounters
    writer: MemoryWriter
    extractor: Extractor
    reconciler: Reconciler
    profiles: ProfileWriter
    editor: MemoryEditor
    triggers: Triggers
    worker: Worker
    chat: ChatModel | None
    sampling: SamplingSessions | None
    budget: LlmBudget
    status: StatusBoard = field(default_factory=StatusBoard)
    metrics: Metrics = field(default_factory=Metrics)
    count_tokens: Callable[[str], int] = len  # the server's tokenizer, for the metrics' token counts
    _wakeups: set[str] = field(default_factory=set)  # users with a retry timer set

    def __post_init__(self) -> None:
        # Jobs that fail where no step below records why (storage errors, bugs) show in the status too.
        self.worker.on_failure = self._job_failed

    def _job_failed(self, job: Job, reason: str) -> None:
        if job.lane:  # "" is the server's own upkeep, nobody's learning
            self.status.failed(job.lane, "background job", f"{job.name}: {reason}")

    def model_for(self, user_id: str) -> ChatModel | None:
        """Who answers background work for this user now: the configured LLM, else sampling, else None."""
        if self.chat is not None:
            return self.chat
        if self.sampling is not None and self.settings.learning.sampling:
            return self.sampling.chat_for(user_id)
        return None

    # ---- hooks: called on the request path, so they only queue ----------------------------------

    def turn_stored(self, user_id: str, thread_id: str, turn_id: str) -> None:
        self._retry_due(user_id)
        turn = Job(f"learning from turn {turn_id}", lambda: self._after_turn(user_id, thread_id), user_id)
        # A full queue keeps one extraction of the thread instead: it reads this turn from the store.
        self.worker.submit(turn, when_full=self._extraction_job(user_id, thread_id))

    def summary_stored(self, user_id: str, thread_id: str, summary: Memory) -> None:
        version = summary.metadata.get("summary_version", 1)
        self.worker.submit(
            Job(
                f"learning from the summary of thread {thread_id}",
                lambda: self._after_summary(summary),
                user_id,
                key=f"summary:{thread_id}:{version}",
            )
        )

    async def forgotten(self, scope: Scope, *, dry_run: bool) -> int:
        """After the stores forgot `scope`: its revisions go too (the right to be forgotten wins over
        history), and a profile that may hold forgotten facts is dropped and rebuilt."""
        count = await self.revisions.forget(scope, dry_run=dry_run)
        if dry_run or scope.everything:
            if not dry_run:
                self.status.forget(scope.user_id)
                await self.counters.forget(scope.user_id)
            return count
        if scope.memory_id is None and scope.thread_id is not None:
            self.status.forget(scope.user_id, scope.thread_id)
            await self.counters.forget(scope.user_id, prefix=turns_key(scope.thread_id))
            await self.counters.forget(scope.user_id, prefix=mark_key(scope.thread_id))
        if space_of(scope.user_id) is None and (
            scope.memory_id is None or scope.memory_id.startswith("fact_")
        ):
            profile = Scope(user_id=scope.user_id, memory_id=profile_id(scope.user_id))
            await self.long_term.forget(profile)
            count += await self.revisions.forget(profile)
            self.worker.submit(
                Job(
                    f"rebuilding the profile of {scope.user_id}",
                    lambda: self._refresh_profile_in_background(scope.user_id),
                    scope.user_id,
                    key="profile",
                )
            )
        return count

    # ---- background jobs -------------------------------------------------------------------------

    async def _after_turn(self, user_id: str, thread_id: str) -> None:
        if await self.triggers.turn_added(user_id, thread_id):
            await self._extract_in_background(user_id, thread_id)

    async def _after_summary(self, summary: Memory) -> None:
        version = int(summary.metadata.get("summary_version", 1))
        try:
            await self.writer.record(summary, "create" if version <= 1 else "update", "summary")
        except LimitExceededError as e:
            # The summary is stored already (threads._store_summary decides that); only its history
            # entry is skipped, and extraction below is checked on its own.
            log.warning("revision of the summary of thread %s not recorded: %s", summary.thread_id, e)
        if self.settings.learning.extract_on_summary and summary.thread_id:
            await self._extract_in_background(summary.user_id, summary.thread_id)

    def _extraction_job(self, user_id: str, thread_id: str) -> Job:
        return Job(
            f"extracting facts from thread {thread_id}",
            lambda: self._extract_in_background(user_id, thread_id),
            user_id,
            key=f"extract:{thread_id}",
        )

    async def _extract_in_background(self, user_id: str, thread_id: str) -> None:
        model = self.model_for(user_id)
        if model is None:
            self.status.wait(user_id, thread_id, NO_MODEL)
            return
        batch = await self.extractor.prepare(user_id, thread_id)
        if batch is None:
            return
        try:
            answer = await self.ask(
                model,
                user_id,
                batch.prompt,
                f"extraction of thread {thread_id}",
                purpose="extraction",
                json_mode=True,
            )
            await self.finish_extraction(batch, answer, model.name)
        except BudgetUsedUp as e:
            until = datetime.fromtimestamp(e.resets_at, UTC)
            reason = f"LLM budget used up until {until:%Y-%m-%d %H:%M} UTC"
            self.status.wait(user_id, thread_id, reason, retry_at=e.resets_at)
            self._wake_at(user_id, e.resets_at)
            log.info("thread %s: waiting for the LLM budget; its turns stay pending", thread_id)
            return
        except MemoryServerError as e:
            # Handled: the turns stay pending for the next extraction, and the status says why.
            self.status.wait(user_id, thread_id, f"model failed: {e}")
            self.status.failed(user_id, "extraction", str(e), thread_id=thread_id)
            log.warning("extraction of thread %s failed; its turns stay pending: %s", thread_id, e)
            return
        if len(batch.turns) == self.settings.learning.max_turns_per_extraction:
            # A full batch: more turns may be pending behind it; continue without waiting for a trigger.
            self.worker.submit(self._extraction_job(user_id, thread_id))

    def _wake_at(self, user_id: str, at: float) -> None:
        """Retry the user's waiting threads when the budget window ends (one timer per user)."""
        if user_id in self._wakeups:
            return
        self._wakeups.add(user_id)

        async def wake() -> None:
            self._wakeups.discard(user_id)
            self._retry_due(user_id)

        self.worker.after(
            max(0.0, at - self.budget.clock()),
            Job(f"waking the learning of {user_id}", wake, user_id, key="wake"),
        )

    def _retry_due(self, user_id: str) -> None:
        for thread_id in self.status.due(user_id, self.budget.clock()):
            self.worker.submit(self._extraction_job(user_id, thread_id))

    async def ask(
        self,
        model: ChatModel,
        user_id: str,
        prompt: RenderedPrompt,
        what: str,
        *,
        purpose: str,
        json_mode: bool = False,
        max_tokens: int | None = None,
        background: bool = True,
    ) -> str:
        """One model call for the user: charged to the budget (BudgetUsedUp when spent), and bounded
        in time whatever the model, so a silent one fails instead of holding its lane forever. `purpose`
        (extraction, reconciliation, profile) labels it in the metrics."""
        await self.budget.charge(user_id, what, background=background)
        llm = self.settings.llm
        # Each attempt has the model's own timeout; one attempt more covers the SDK's back-off.
        deadline = llm.timeout_seconds * (llm.max_retries + 2)
        metered = MeteredChat(model, self.metrics, self.count_tokens, purpose=purpose)
        try:
            with anyio.fail_after(deadline):
                return await metered.complete(
                    prompt.system,
                    prompt.user,
                    json_mode=json_mode,
                    max_tokens=max_tokens or self.settings.learning.max_answer_tokens,
                )
        except TimeoutError as e:
            raise BackendUnavailableError(
                f"{model.name} did not answer within {deadline:g} s", backend=provider_of(model)
            ) from e

    async def finish_extraction(self, batch: ExtractionBatch, answer: str, model: str) -> ExtractionReport:
        """Store an extraction answer, then count it toward the next reconciliation."""
        report = await self.extractor.apply(batch, answer, model=model)
        for fact in report.facts:
            self.metrics.fact_written(fact.action)
        self.status.extracted(batch.user_id, report)
        changed = any(f.action != "unchanged" for f in report.facts)
        if changed and await self.triggers.extraction_done(batch.user_id):
            self.worker.submit(
                Job(
                    f"maintaining the memories of {batch.user_id}",
                    lambda: self._maintain(batch.user_id),
                    batch.user_id,
                    key="maintain",
                )
            )
        elif changed and self.model_for(batch.user_id) is None:
            await self.refresh_profile(batch.user_id)  # offline, no model call
        return report

    async def _maintain(self, user_id: str) -> None:
        model = self.model_for(user_id)
        if model is None:
            await self._refresh_profile_in_background(user_id)
            return
        batch = await self.reconciler.prepare(user_id)
        if batch is not None:
            try:
                answer = await self.ask(
                    model, user_id, batch.prompt, "reconciliation", purpose="reconciliation", json_mode=True
                )
                await self.finish_reconcile(batch, answer, model.name)
            except BudgetUsedUp as e:
                self.status.failed(user_id, "reconciliation", str(e))
                log.info("user %s: LLM budget used up; reconciliation waits for the next trigger", user_id)
                return
            except MemoryServerError as e:
                self.status.failed(user_id, "reconciliation", str(e))
                log.warning(
                    "reconciliation for user %s failed; it runs again at the next trigger: %s", user_id, e
                )
                return
        await self._refresh_profile_in_background(user_id)

    async def refresh_profile(self, user_id: str) -> Memory | None:
        """Fold newer facts into the profile: with the user's model when there is one, else offline. A
        shared space has no profile: a profile is one person's, and stays in their personal memory."""
        if not self.settings.learning.profile or space_of(user_id) is not None:
            return None
        model = self.model_for(user_id)
        if model is None:
            return await self.profiles.rebuild_offline(user_id)
        batch = await self.profiles.prepare(user_id)
        if batch is None:
            return None
        try:
            answer = await self.ask(
                model,
                user_id,
                batch.prompt,
                "the profile update",
                purpose="profile",
                max_tokens=self.settings.learning.profile_max_tokens * 2 + 32,
            )
        except BudgetUsedUp as e:
            self.status.failed(user_id, "profile", str(e))
            log.info("user %s: LLM budget used up; the profile is updated at the next trigger", user_id)
            return None
        return await self.profiles.apply(batch, answer, model=model.name)

    async def _refresh_profile_in_background(self, user_id: str) -> None:
        try:
            await self.refresh_profile(user_id)
        except MemoryServerError as e:
            # Handled: the profile stays as it was until the next trigger, and the status says why.
            self.status.failed(user_id, "profile", str(e))
            log.warning(
                "the profile update for user %s failed; it is tried at the next trigger: %s", user_id, e
            )

    async def status_of(self, user_id: str) -> LearningStatus:
        """memory://learning/status: who learns, the budget, and what waits and why."""
        model = self.model_for(user_id)
        return LearningStatus(
            model="llm" if self.chat is not None else "sampling" if model is not None else "none",
            model_name=model.name if model is not None else None,
            budget=await self.budget.view(user_id),
            queued_jobs=self.worker.waiting(user_id),
            waiting=[
                w.model_copy(update={"pending_turns": await self._pending_turns(user_id, w.thread_id)})
                for w in self.status.waiting(user_id)
            ],
            last_extraction=self.status.last_extraction(user_id),
            last_reconciliation=self.status.last_reconciliation(user_id),
            failures=self.status.failures(user_id),
        )

    async def _pending_turns(self, user_id: str, thread_id: str) -> int:
        """Turns after the thread's extraction mark, within the window extraction looks back over."""
        mark = await self.counters.read(user_id, mark_key(thread_id))
        window = self.settings.learning.max_turns_per_extraction * LOOKBACK_BATCHES
        return len(turns_after_mark(await self.long_term.recent(user_id, thread_id, limit=window), mark))

    async def prune_revisions(self) -> None:
        before = utcnow() - timedelta(days=self.settings.learning.revision_retention_days)
        removed = await self.revisions.prune(before)
        if removed:
            log.info("revision retention: deleted %d revisions older than %s", removed, f"{before:%Y-%m-%d}")

    # ---- on demand (tools): the caller supplies the answer, from a model or from sampling ---------

    async def prepare_extraction(self, user_id: str, thread_id: str) -> ExtractionBatch | None:
        return await self.extractor.prepare(user_id, thread_id)

    async def prepare_reconcile(self, user_id: str) -> ReconcileBatch | None:
        return await self.reconciler.prepare(user_id)

    async def finish_reconcile(self, batch: ReconcileBatch, answer: str, model: str) -> ReconcileReport:
        report = await self.reconciler.apply(batch, answer, model=model)
        self.status.reconciled(batch.user_id, report)
        return report
