"""Reconciliation: one model pass over a user's newest active facts finds duplicates and contradictions.

The model only groups; the rule of who wins is ours and fixed: the most recently stated fact
(updated_at, else created_at) wins, and confidence breaks a tie. Losers are superseded, never
deleted: superseded_by, supersede_reason (duplicate | contradict) and superseded_at are set, a
revision records it, and every default read hides them. A duplicate group's merged wording, when
the model gives one, becomes the winner's new content (its own revision).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from mcp_memory.config import LearningSettings
from mcp_memory.learning.parsing import parse_groups
from mcp_memory.learning.templates import LearningPrompts
from mcp_memory.learning.writer import MemoryWriter
from mcp_memory.llm.prompts import RenderedPrompt
from mcp_memory.models import Memory, utcnow
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import ReconcileReport

log = logging.getLogger(__name__)


def changed_at(memory: Memory) -> float:
    return (memory.updated_at or memory.created_at).timestamp()


@dataclass(frozen=True)
class ReconcileBatch:
    user_id: str
    facts: dict[str, Memory]  # label (F1, F2, ...) -> fact, newest first
    prompt: RenderedPrompt


@dataclass
class Reconciler:
    long_term: LongTermStore
    writer: MemoryWriter
    prompts: LearningPrompts
    settings: LearningSettings

    async def prepare(self, user_id: str) -> ReconcileBatch | None:
        """The prompt over the user's newest active facts, or None with fewer than two."""
        facts = await self.long_term.list_active(
            user_id, types=("fact",), limit=self.settings.reconcile_max_facts
        )
        if len(facts) < 2:
            return None
        labelled = {f"F{i + 1}": fact for i, fact in enumerate(facts)}
        lines = [
            f"{label} [stated {(f.updated_at or f.created_at):%Y-%m-%d %H:%M}, "
            f"confidence {float(f.metadata.get('confidence', 0.5)):.2f}] {' '.join(f.content.split())}"
            for label, f in labelled.items()
        ]
        prompt = self.prompts.reconcile.render(facts="\n".join(lines), today=f"{utcnow():%Y-%m-%d}")
        return ReconcileBatch(user_id, labelled, prompt)

    async def apply(self, batch: ReconcileBatch, answer: str, *, model: str) -> ReconcileReport:
        """Supersede the losers of every group in the answer. Raises MalformedAnswerError (nothing changed)
        when the answer is not the JSON asked for."""
        groups = parse_groups(answer, list(batch.facts))
        report = ReconcileReport(model=model, facts_reviewed=len(batch.facts))
        for group in groups:
            members = [batch.facts[label] for label in group.ids]
            winner = max(members, key=lambda m: (changed_at(m), float(m.metadata.get("confidence", 0.0))))
            losers = [m for m in members if m.id != winner.id]
            if group.kind == "duplicate":
                confidence = max(float(m.metadata.get("confidence", 0.0)) for m in members)
                sources = [s for m in members for s in m.metadata.get("source_turn_ids", [])]
                metadata = {
                    **winner.metadata,
                    "confidence": confidence,
                    "source_turn_ids": list(dict.fromkeys(sources)),
                }
                content = group.merged or winner.content
                stored = await self.long_term.get(winner.user_id, winner.id)
                winner = await self.writer.edit(
                    stored,
                    content,
                    action="update",
                    cause="reconcile",
                    source_text=" / ".join(m.content for m in members),
                    labels={"model": model, "merged": ",".join(m.id for m in losers)},
                    metadata=metadata,
                )
            reason: Literal["duplicate", "contradict"] = (
                "duplicate" if group.kind == "duplicate" else "contradict"
            )
            for loser in losers:
                await self.writer.supersede(loser, winner, reason)
                (report.merged if reason == "duplicate" else report.contradicted).append(loser.id)
            report.kept.append(winner.id)
        log.info(
            "user %s: reconciled %d facts: %d merged, %d contradicted",
            batch.user_id,
            len(batch.facts),
            len(report.merged),
            len(report.contradicted),
        )
        return report
