"""Learning: the collaborator MemoryService calls after a turn or a summary is stored, and on forget.

Hooks only queue work (never await), so add_turn's latency does not change. Background jobs then
count turns in the store, extract facts every N turns and on every summary, reconcile every K
extractions and keep the user profile current. Which model answers: the configured LLM, else the
client's own through MCP sampling (a handshake-era session that offers it), else nobody: extraction
and reconciliation are off (the tools say so) and the profile is built offline from the facts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from ..config import Settings
from ..llm.chat import ChatModel
from ..llm.sampling import SamplingSessions
from ..models import Memory, Scope, utcnow
from ..storage.base import LongTermStore
from ..storage.learning_base import RevisionStore, TriggerCounters
from .editing import MemoryEditor
from .extraction import ExtractionBatch, Extractor, mark_key
from .profile import ProfileBatch, ProfileWriter, profile_id
from .reconcile import ReconcileBatch, Reconciler
from .triggers import Triggers, turns_key
from .views import ExtractionReport, ReconcileReport
from .worker import Job, Worker
from .writer import MemoryWriter

log = logging.getLogger(__name__)

_DAY = 86_400.0


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

    def model_for(self, user_id: str) -> ChatModel | None:
        """Who answers background work for this user now: the configured LLM, else sampling, else None."""
        if self.chat is not None:
            return self.chat
        if self.sampling is not None and self.settings.learning.sampling:
            return self.sampling.chat_for(user_id)
        return None

    # ---- hooks: called on the request path, so they only queue ----------------------------------

    def turn_stored(self, user_id: str, thread_id: str, turn_id: str) -> None:
        self.worker.submit(Job(f"learning from turn {turn_id}", lambda: self._after_turn(user_id, thread_id)))

    def summary_stored(self, user_id: str, thread_id: str, summary: Memory) -> None:
        self.worker.submit(
            Job(f"learning from the summary of thread {thread_id}", lambda: self._after_summary(summary))
        )

    async def forgotten(self, scope: Scope, *, dry_run: bool) -> int:
        """After the stores forgot `scope`: its revisions go too (the right to be forgotten wins over
        history), and a profile that may hold forgotten facts is dropped and rebuilt."""
        count = await self.revisions.forget(scope, dry_run=dry_run)
        if dry_run or scope.everything:
            if not dry_run:
                await self.counters.forget(scope.user_id)
            return count
        if scope.memory_id is None and scope.thread_id is not None:
            await self.counters.forget(scope.user_id, prefix=turns_key(scope.thread_id))
            await self.counters.forget(scope.user_id, prefix=mark_key(scope.thread_id))
        if scope.memory_id is None or scope.memory_id.startswith("fact_"):
            profile = Scope(user_id=scope.user_id, memory_id=profile_id(scope.user_id))
            await self.long_term.forget(profile)
            count += await self.revisions.forget(profile)
            self.worker.submit(
                Job(f"rebuilding the profile of {scope.user_id}", lambda: self.refresh_profile(scope.user_id))
            )
        return count

    # ---- background jobs -------------------------------------------------------------------------

    async def _after_turn(self, user_id: str, thread_id: str) -> None:
        if await self.triggers.turn_added(user_id, thread_id):
            await self._extract_in_background(user_id, thread_id)

    async def _after_summary(self, summary: Memory) -> None:
        version = int(summary.metadata.get("summary_version", 1))
        await self.writer.record(summary, "create" if version <= 1 else "update", "summary")
        if self.settings.learning.extract_on_summary and summary.thread_id:
            await self._extract_in_background(summary.user_id, summary.thread_id)

    async def _extract_in_background(self, user_id: str, thread_id: str) -> None:
        model = self.model_for(user_id)
        if model is None:
            log.debug("thread %s: no model for fact extraction; its turns stay pending", thread_id)
            return
        batch = await self.extractor.prepare(user_id, thread_id)
        if batch is None or not await self.triggers.spend(user_id, f"extraction of thread {thread_id}"):
            return
        answer = await model.complete(
            batch.prompt.system,
            batch.prompt.user,
            json_mode=True,
            max_tokens=self.settings.learning.max_answer_tokens,
        )
        await self.finish_extraction(batch, answer, model.name)
        if len(batch.turns) == self.settings.learning.max_turns_per_extraction:
            # A full batch: more turns may be pending behind it; continue without waiting for a trigger.
            self.worker.submit(
                Job(
                    f"extracting more of thread {thread_id}",
                    lambda: self._extract_in_background(user_id, thread_id),
                )
            )

    async def finish_extraction(self, batch: ExtractionBatch, answer: str, model: str) -> ExtractionReport:
        """Store an extraction answer, then count it toward the next reconciliation."""
        report = await self.extractor.apply(batch, answer, model=model)
        changed = any(f.action != "unchanged" for f in report.facts)
        if changed and await self.triggers.extraction_done(batch.user_id):
            self.worker.submit(
                Job(f"maintaining the memories of {batch.user_id}", lambda: self._maintain(batch.user_id))
            )
        elif changed and self.model_for(batch.user_id) is None:
            await self.refresh_profile(batch.user_id)  # offline, no model call
        return report

    async def _maintain(self, user_id: str) -> None:
        model = self.model_for(user_id)
        if model is None:
            await self.refresh_profile(user_id)
            return
        batch = await self.reconciler.prepare(user_id)
        if batch is not None and await self.triggers.spend(user_id, "reconciliation"):
            answer = await model.complete(
                batch.prompt.system,
                batch.prompt.user,
                json_mode=True,
                max_tokens=self.settings.learning.max_answer_tokens,
            )
            await self.reconciler.apply(batch, answer, model=model.name)
        await self.refresh_profile(user_id)

    async def refresh_profile(self, user_id: str) -> Memory | None:
        """Fold newer facts into the profile: with the user's model when there is one, else offline."""
        if not self.settings.learning.profile:
            return None
        model = self.model_for(user_id)
        if model is None:
            return await self.profiles.rebuild_offline(user_id)
        batch = await self.profiles.prepare(user_id)
        if batch is None or not await self.triggers.spend(user_id, "profile update"):
            return None
        answer = await model.complete(
            batch.prompt.system,
            batch.prompt.user,
            max_tokens=self.settings.learning.profile_max_tokens * 2 + 32,
        )
        return await self.profiles.apply(batch, answer, model=model.name)

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
        return await self.reconciler.apply(batch, answer, model=model)

    async def prepare_profile(self, user_id: str) -> ProfileBatch | None:
        return await self.profiles.prepare(user_id)
