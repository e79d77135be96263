"""What each user's learning is waiting on and what it last did, for memory://learning/status and for
retries.

Kept in this process: a thread waits here when its extraction was refused by the LLM budget (with the
time it is tried again), or when the model failed or was missing (tried again on the next trigger).
A successful extraction of the thread clears it. The pending turns themselves are in the store, so
nothing here is needed to recover them: this only says why they wait and when the lane retries.
Also kept: the last extraction and reconciliation, and the last few failures of background work with
their reason (otherwise only in the server log, which the user cannot read).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mcp_memory.models import utcnow
from mcp_memory.views import (
    ExtractionReport,
    ExtractionSeen,
    LearningFailure,
    ReconcileReport,
    ReconciliationSeen,
    WaitingThread,
)

KEPT_FAILURES = 10  # per user: enough to see a pattern, few enough to read


@dataclass
class _UserLearning:
    waiting: dict[str, WaitingThread] = field(default_factory=dict)
    last_extraction: ExtractionSeen | None = None
    last_reconciliation: ReconciliationSeen | None = None
    failures: deque[LearningFailure] = field(default_factory=lambda: deque(maxlen=KEPT_FAILURES))


class StatusBoard:
    def __init__(self) -> None:
        self._users: dict[str, _UserLearning] = {}

    def wait(self, user_id: str, thread_id: str, reason: str, *, retry_at: float | None = None) -> None:
        user = self._users.setdefault(user_id, _UserLearning())
        previous = user.waiting.get(thread_id)
        user.waiting[thread_id] = WaitingThread(
            thread_id=thread_id,
            reason=reason,
            since=previous.since if previous else utcnow(),
            retry_at=None if retry_at is None else datetime.fromtimestamp(retry_at, UTC),
        )

    def extracted(self, user_id: str, report: ExtractionReport) -> None:
        user = self._users.setdefault(user_id, _UserLearning())
        user.waiting.pop(report.thread_id, None)
        user.last_extraction = ExtractionSeen(
            thread_id=report.thread_id,
            at=utcnow(),
            model=report.model,
            turns_read=report.turns_read,
            facts=sum(f.action != "unchanged" for f in report.facts),
        )

    def reconciled(self, user_id: str, report: ReconcileReport) -> None:
        self._users.setdefault(user_id, _UserLearning()).last_reconciliation = ReconciliationSeen(
            at=utcnow(),
            model=report.model,
            facts_reviewed=report.facts_reviewed,
            merged=len(report.merged),
            contradicted=len(report.contradicted),
        )

    def failed(self, user_id: str, work: str, reason: str, *, thread_id: str | None = None) -> None:
        """Background work that did not happen, and why (the oldest beyond KEPT_FAILURES are dropped)."""
        failure = LearningFailure(at=utcnow(), work=work, thread_id=thread_id, reason=reason)
        self._users.setdefault(user_id, _UserLearning()).failures.append(failure)

    def due(self, user_id: str, now: float) -> list[str]:
        """Threads whose retry time has come (the budget window they waited for is over)."""
        user = self._users.get(user_id)
        if user is None:
            return []
        return [
            w.thread_id
            for w in user.waiting.values()
            if w.retry_at is not None and w.retry_at.timestamp() <= now
        ]

    def waiting(self, user_id: str) -> list[WaitingThread]:
        user = self._users.get(user_id)
        return sorted(user.waiting.values(), key=lambda w: w.since) if user else []

    def last_extraction(self, user_id: str) -> ExtractionSeen | None:
        user = self._users.get(user_id)
        return user.last_extraction if user else None

    def last_reconciliation(self, user_id: str) -> ReconciliationSeen | None:
        user = self._users.get(user_id)
        return user.last_reconciliation if user else None

    def failures(self, user_id: str) -> list[LearningFailure]:
        """Newest first."""
        user = self._users.get(user_id)
        return list(reversed(user.failures)) if user else []

    def forget(self, user_id: str, thread_id: str | None = None) -> None:
        if thread_id is None:
            self._users.pop(user_id, None)
        elif (user := self._users.get(user_id)) is not None:
            user.waiting.pop(thread_id, None)
            kept = [f for f in user.failures if f.thread_id != thread_id]
            user.failures = deque(kept, maxlen=KEPT_FAILURES)
