"""Opens everything the memory service needs, in order, and closes it in reverse.

The server (mcp/host.py) and the CLI's export, import and forget-user commands open the service here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from threadpoolctl import threadpool_limits

from mcp_memory.audit import SERVICE_ACTOR, Auditor
from mcp_memory.config import Settings, load_tokens, reference_memory_file
from mcp_memory.learning import Learning, open_learning
from mcp_memory.llm import open_chat_model, open_embedder
from mcp_memory.llm.embedder import Embedder
from mcp_memory.llm.metered import MeteredChat
from mcp_memory.llm.sampling import SamplingSessions
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import GRAPH_CHANGE
from mcp_memory.observability.metrics import Metrics
from mcp_memory.search.when import prepare as prepare_time_words
from mcp_memory.service.graph import GraphListener, KnowledgeGraph
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.parts import ChangeListener
from mcp_memory.service.recall import default_floor
from mcp_memory.service.summaries import SummaryRunner
from mcp_memory.service.summarizer import build_summarizer
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.service.warmup import Warmup
from mcp_memory.storage import Stores, open_audit_log, open_graph_store, open_stores
from mcp_memory.storage.base import LateVectors

log = logging.getLogger(__name__)

# Embedders that run in this process: a remote one (OpenAI, Azure) may fail, and then add_turn must
# fail with it rather than acknowledge a turn whose vector may never come.
IN_PROCESS_EMBEDDERS = frozenset({"local", "hash"})


@asynccontextmanager
async def open_service(
    settings: Settings,
    on_change: ChangeListener | None = None,
    sampling: SamplingSessions | None = None,
    metrics: Metrics | None = None,
) -> AsyncIterator[MemoryService]:
    """Everything the service needs, opened in order and closed in reverse; events are counted in
    `metrics` (the server's), or in a registry of the service's own."""
    metrics = metrics or Metrics()
    async with AsyncExitStack() as stack:
        # One BLAS thread: a search does one mat-vec, and OpenBLAS waking its sleeping worker threads
        # between requests costs more than the mat-vec itself.
        stack.enter_context(threadpool_limits(limits=1, user_api="blas"))
        tokens = await _token_counter(settings)
        embedder = await stack.enter_async_context(open_embedder(settings.embedding))
        stores = await stack.enter_async_context(open_stores(settings, embedder.spec))
        vectors = await _vector_writer(stack, settings, embedder, stores, metrics)
        # Summaries that outlast their add_turn (service/summaries.py); closed before the stores.
        summaries = await stack.enter_async_context(
            SummaryRunner.running(settings.learning.shutdown_grace_seconds)
        )
        warmup = await _warmup(stack, settings, stores)
        chat = await stack.enter_async_context(open_chat_model(settings.llm))
        summary_chat = None if chat is None else MeteredChat(chat, metrics, tokens.count, purpose="summary")
        summarizer = build_summarizer(summary_chat, tokens.count, settings.prompts_dir)
        # Facts, revisions, the profile; its background lane closes before the stores do.
        learning = await stack.enter_async_context(
            open_learning(settings, stores, embedder, tokens, chat, sampling, metrics)
        )
        graph = KnowledgeGraph(
            settings.graph,
            await open_graph_store(settings, stores, stack),
            stores.long_term,
            embedder,
            tokens,
            settings.max_content_chars,
            revisions=learning.revisions if learning is not None else None,
            on_change=_graph_listener(on_change),
            similarity_floor=_similarity_floor(settings, embedder),
            redact_secrets=settings.security.redact_secrets,
        )
        if learning is not None:
            await _connect_graph(settings, graph, learning)
        auditor = Auditor(
            await open_audit_log(settings, stores, stack, metrics.audit_chain_retried),
            default_actor=SERVICE_ACTOR,  # a call outside any request or command (a test, an embedding app)
            reads=settings.audit.reads,
            retention_days=settings.audit.retention_days,
            on_record=metrics.audit_recorded,
        )
        log.info(
            "memory service ready for user %s: %s; embeddings: %s; summaries: %s",
            settings.user_id,
            stores.description,
            embedder.spec.model,
            summarizer.name,
        )
        yield MemoryService(
            settings=settings,
            stores=stores,
            embedder=embedder,
            tokens=tokens,
            summarizer=summarizer,
            on_change=on_change,
            learning=learning,
            warmup=warmup,
            llm_budget=learning.budget if learning is not None else None,
            vectors=vectors,
            graph=graph,
            metrics=metrics,
            summaries=summaries,
            audit=auditor,
        )


async def _token_counter(settings: Settings) -> TokenCounter:
    tokens = await anyio.to_thread.run_sync(
        lambda: TokenCounter.load(settings.token_encoding, cache_dir=settings.data_dir / "tiktoken")
    )
    # The date parser loads its language data on first use: here, not in the first search.
    await anyio.to_thread.run_sync(prepare_time_words)
    return tokens


async def _vector_writer(
    stack: AsyncExitStack, settings: Settings, embedder: Embedder, stores: Stores, metrics: Metrics
) -> VectorWriter | None:
    """Turns are embedded after they are acknowledged (service/vectors.py), by an embedder in this
    process and when the store takes vectors late; closed before the stores."""
    if settings.embedding.provider in IN_PROCESS_EMBEDDERS and isinstance(stores.long_term, LateVectors):
        return await stack.enter_async_context(
            VectorWriter.running(embedder, stores.long_term, metrics=metrics)
        )
    return None


async def _warmup(stack: AsyncExitStack, settings: Settings, stores: Stores) -> Warmup | None:
    """The start-up build of the search indexes of every user a token names (long_term.warm_on_start)."""
    if not settings.long_term.warm_on_start:
        return None
    users = [settings.user_id, *(t.user_id for t in load_tokens(settings.security))]
    return await stack.enter_async_context(Warmup.running(stores.long_term, users))


def _graph_listener(on_change: ChangeListener | None) -> GraphListener:
    async def graph_changed(owner: str) -> None:
        if on_change is not None:
            await on_change(owner, GRAPH_CHANGE)

    return graph_changed


def _similarity_floor(settings: Settings, embedder: Embedder) -> float:
    """search_nodes' cosine floor: recall's, set or the default for this embedder (service/recall.py)."""
    if settings.learning.recall_min_similarity is None:
        return default_floor(embedder.spec.model)
    return settings.learning.recall_min_similarity


async def _connect_graph(settings: Settings, graph: KnowledgeGraph, learning: Learning) -> None:
    """Learning feeds the graph; a reference server's file (MEMORY_FILE_PATH) is adopted once."""
    learning.writer.on_written = graph.link_memory  # facts link to the entities they name
    learning.extractor.on_graph = graph.learn  # entities and relations extracted with the facts
    reference_file = reference_memory_file()  # MEMORY_FILE_PATH, the reference memory server's setting
    if reference_file is not None:
        await graph.adopt_reference_file(settings.user_id, reference_file, learning.counters)
