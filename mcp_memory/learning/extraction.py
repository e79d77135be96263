"""Fact extraction: a thread's not-yet-extracted turns in, contextual typed facts out.

Split in two so the same code serves a configured LLM (prepare, complete, apply in one go) and MCP
sampling inside a tool call (the SDK asks the client between prepare and apply). Which turns are
done is a per-thread mark in the trigger-counter store, moved (compare-and-set) only after a batch
is stored: a batch that fails (timeout, 429, malformed answer) leaves its turns pending, and they
are read again by the next extraction of the thread, within the max_turns_per_extraction window.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from mcp_memory.config import LearningSettings
from mcp_memory.errors import NotFoundError
from mcp_memory.learning.parsing import ExtractedEntity, ExtractedRelation, parse_facts, parse_graph
from mcp_memory.learning.templates import LearningPrompts
from mcp_memory.learning.writer import MemoryWriter
from mcp_memory.llm.prompts import RenderedPrompt
from mcp_memory.models import Memory, summary_id, utcnow
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.learning_base import TriggerCounters
from mcp_memory.views import ExtractionReport, MemoryView, WrittenMemory

log = logging.getLogger(__name__)

LOOKBACK_BATCHES = 5
_TURN_CHARS = 2000  # a long turn (pasted code, tool output) is cut: facts sit in the first lines
_SOURCE_CHARS = 1000


def mark_key(thread_id: str) -> str:
    # Ends with "/", which no thread id contains: forgetting thread "t1" by prefix spares "t10".
    return f"extracted:{thread_id}/"


# Takes the owner, and the entities and relations an extraction answer named.
GraphSink = Callable[[str, list[ExtractedEntity], list[ExtractedRelation]], Awaitable[object]]


@dataclass(frozen=True)
class ExtractionBatch:
    user_id: str
    thread_id: str
    turns: list[Memory]
    labels: list[str]  # T1, T2, ... as shown to the model
    prompt: RenderedPrompt
    mark_before: str | None
    mark_after: str


@dataclass
class Extractor:
    long_term: LongTermStore
    counters: TriggerCounters
    writer: MemoryWriter
    prompts: LearningPrompts
    settings: LearningSettings
    # Where the entities and relations an answer names go (the knowledge graph: service/graph/).
    on_graph: GraphSink | None = None

    async def prepare(self, user_id: str, thread_id: str) -> ExtractionBatch | None:
        """The prompt for the thread's pending turns, or None when no user turn is pending."""
        mark = await self.counters.read(user_id, mark_key(thread_id))
        window = self.settings.max_turns_per_extraction
        # The oldest pending turns first, so a lane that fell behind catches up batch by batch; a
        # thread more than LOOKBACK batches behind loses its oldest pending turns to extraction.
        turns = await self.long_term.recent(user_id, thread_id, limit=window * LOOKBACK_BATCHES)
        pending = turns_after_mark(turns, mark)[:window]
        if not any(t.role == "user" for t in pending):
            return None
        labels = [f"T{i + 1}" for i in range(len(pending))]
        lines = [
            f"[{label}] {t.created_at:%Y-%m-%d %H:%M} {t.role}: {_clip(t.content, _TURN_CHARS)}"
            for label, t in zip(labels, pending, strict=True)
        ]
        prompt = self.prompts.extract.render(
            turns="\n".join(lines),
            context=await self._context(user_id, thread_id) or "(none)",
            today=f"{utcnow():%Y-%m-%d}",
            max_facts=self.settings.max_facts_per_extraction,
        )
        last = pending[-1]
        after = json.dumps({"through": last.id, "at": last.created_at.isoformat()})
        return ExtractionBatch(user_id, thread_id, pending, labels, prompt, mark, after)

    async def apply(self, batch: ExtractionBatch, answer: str, *, model: str) -> ExtractionReport:
        """Store the facts of a model's answer. Raises MalformedAnswerError (nothing stored) when it is not
        the JSON asked for."""
        facts = parse_facts(answer, batch.labels)
        entities, relations = parse_graph(answer)
        if self.on_graph is not None and (entities or relations):
            # Before the facts, so each fact links to the entities it names (service/graph/).
            await self.on_graph(batch.user_id, entities, relations)
        kept = sorted(
            (f for f in facts if f.confidence >= self.settings.min_confidence), key=lambda f: -f.confidence
        )[: self.settings.max_facts_per_extraction]
        written: list[WrittenMemory] = []
        for fact in kept:
            sources = [batch.turns[i] for i in fact.source_turns]
            said = " / ".join(_clip(t.content, 300) for t in sources)
            outcome = await self.writer.write_fact(
                batch.user_id,
                batch.thread_id,
                fact.text,
                kind=fact.kind,
                confidence=fact.confidence,
                source_turn_ids=[t.id for t in sources],
                cause="extraction",
                source_text=_clip(said, _SOURCE_CHARS) or fact.text,
                labels={"model": model},
            )
            written.append(WrittenMemory(**MemoryView.of(outcome.memory).model_dump(), action=outcome.action))
        if not await self.counters.compare_and_set(
            batch.user_id, mark_key(batch.thread_id), batch.mark_before, batch.mark_after
        ):
            # Another replica extracted an overlapping batch meanwhile; dedup made the overlap harmless.
            log.info(
                "thread %s: extraction mark moved concurrently; kept the other writer's", batch.thread_id
            )
        log.info(
            "thread %s: %d facts from %d turns (%s)",
            batch.thread_id,
            len(written),
            len(batch.turns),
            ", ".join(f"{w.action}" for w in written) or "none",
        )
        return ExtractionReport(
            thread_id=batch.thread_id,
            model=model,
            turns_read=len(batch.turns),
            facts=written,
            entities=[e.name for e in entities] if self.on_graph is not None else [],
        )

    async def _context(self, user_id: str, thread_id: str) -> str:
        try:
            return (await self.long_term.get(user_id, summary_id(user_id, thread_id))).content
        except NotFoundError:
            return ""


def turns_after_mark(turns: list[Memory], mark: str | None) -> list[Memory]:
    if mark is None:
        return turns
    done = json.loads(mark)
    ids = [t.id for t in turns]
    if done.get("through") in ids:
        return turns[ids.index(done["through"]) + 1 :]
    through = datetime.fromisoformat(done["at"])
    return [t for t in turns if t.created_at > through]


def _clip(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"
