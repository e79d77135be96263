"""Long-term memory that learns: facts, dedup, reconciliation, the user profile, revisions.

`open_learning()` wires the parts for the service's lifetime; `Learning` is what the service and the
MCP tools call. One job per module: parsing (tolerant JSON), writer (dedup + revisions), extraction,
reconcile, profile, editing (remember/update/history/rollback), triggers (every-N counters), budget
(the hourly LLM budget), status (what waits and why), worker (the per-user background lanes), engine
(the orchestration). Where revisions and counters are stored: storage.open_learning_stores.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from mcp_memory.config import Settings
from mcp_memory.learning.budget import LlmBudget
from mcp_memory.learning.editing import MemoryEditor
from mcp_memory.learning.engine import Learning
from mcp_memory.learning.extraction import Extractor
from mcp_memory.learning.profile import ProfileWriter
from mcp_memory.learning.reconcile import Reconciler
from mcp_memory.learning.templates import LearningPrompts
from mcp_memory.learning.triggers import Triggers
from mcp_memory.learning.worker import Job, Worker
from mcp_memory.learning.writer import MemoryWriter
from mcp_memory.llm.chat import ChatModel
from mcp_memory.llm.embedder import Embedder
from mcp_memory.llm.sampling import SamplingSessions
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.observability.metrics import Metrics
from mcp_memory.security.spaces import stored_bytes_quota
from mcp_memory.storage import Stores, open_learning_stores

__all__ = ["Learning", "LlmBudget", "open_learning"]

log = logging.getLogger(__name__)

_DAY = 86_400.0
_NEEDED = ("find_by_hash", "similar", "list_active")


@asynccontextmanager
async def open_learning(
    settings: Settings,
    stores: Stores,
    embedder: Embedder,
    tokens: TokenCounter,
    chat: ChatModel | None,
    sampling: SamplingSessions | None = None,
    metrics: Metrics | None = None,
) -> AsyncIterator[Learning | None]:
    """Learning for the service's lifetime, with its background lane; None when the long-term backend
    lacks what it needs (logged)."""
    missing = [name for name in _NEEDED if not callable(getattr(stores.long_term, name, None))]
    if missing:
        log.warning(
            "learning (facts, revisions, profile) is off: the long-term store lacks %s", ", ".join(missing)
        )
        yield None
        return
    prompts = LearningPrompts.load(settings.prompts_dir)  # a broken template fails at start
    async with AsyncExitStack() as stack:
        revisions, counters = await open_learning_stores(settings, stores, stack)
        worker = await stack.enter_async_context(
            Worker.running(
                queue_size=settings.learning.queue_size,
                concurrency=settings.learning.concurrency,
                grace_seconds=settings.learning.shutdown_grace_seconds,
            )
        )
        s = settings.learning
        writer = MemoryWriter(
            stores.long_term,
            revisions,
            embedder,
            tokens,
            s.near_duplicate_similarity,
            max_stored_bytes=stored_bytes_quota(settings.security),
        )
        learning = Learning(
            settings=settings,
            long_term=stores.long_term,
            revisions=revisions,
            counters=counters,
            writer=writer,
            extractor=Extractor(stores.long_term, counters, writer, prompts, s),
            reconciler=Reconciler(stores.long_term, writer, prompts, s),
            profiles=ProfileWriter(stores.long_term, writer, embedder, tokens, prompts, s),
            editor=MemoryEditor(
                stores.long_term,
                revisions,
                writer,
                settings.max_content_chars,
                redact_secrets=settings.security.redact_secrets,
            ),
            triggers=Triggers(counters, s),
            worker=worker,
            chat=chat,
            sampling=sampling,
            budget=LlmBudget.of(settings, counters, metrics),
            metrics=metrics or Metrics(),
            count_tokens=tokens.count,
        )
        worker.every(_DAY, Job("revision retention", learning.prune_revisions, key="revision retention"))
        yield learning
