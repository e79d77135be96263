"""What MemoryService is made of: its settings, its stores and the collaborators its rules use.

MemoryService (memory_service.py) is these parts and the methods the surface calls; each method's rules
live in a module of their own (turns.py, thread_requests.py, forgetting.py, import_export.py), which is
given the service's parts and reads them at every call, so a part replaced on the service (a test's
vector writer, a benchmark's settings) is the one they use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from mcp_memory.audit import COMMAND_ACTOR, Auditor
from mcp_memory.config import Settings
from mcp_memory.learning.budget import LlmBudget
from mcp_memory.llm.embedder import Embedder
from mcp_memory.llm.query_vectors import QueryVectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.observability.metrics import Metrics
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.summaries import SummaryRunner
from mcp_memory.service.summarizer import Summarizer
from mcp_memory.service.threads import LearningHooks, ThreadKeeper
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.service.warmup import Warmup
from mcp_memory.storage import Stores

# Called after a thread changes (thread id, or None when the list of threads changed, or GRAPH_CHANGE
# when the owner's knowledge graph changed).
ChangeListener = Callable[[str, str | None], Awaitable[None]]


@dataclass
class ServiceParts:
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

    def __post_init__(self) -> None:
        self.query_vectors = QueryVectors(
            self.embedder, self.settings.search.cached_queries, self.metrics.query_vector
        )
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

    async def changed(self, user_id: str, thread_id: str | None) -> None:
        """Tell the service's listener (on_change) that a thread, or the list of threads, changed."""
        if self.on_change is not None:
            await self.on_change(user_id, thread_id)

    async def summary_settled(self, user_id: str, thread_id: str) -> None:
        """Wait for a summary of the thread still running after add_turn's reply (service/summaries.py)."""
        if self.summaries is not None:
            await self.summaries.settled((user_id, thread_id))
