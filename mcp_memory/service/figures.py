"""What the service reads out for the operator's gauges when Prometheus scrapes (mcp/routes.py)."""

from __future__ import annotations

from mcp_memory.observability.metrics import Figures
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore


def figures_of(service: MemoryService) -> Figures:
    """The embedding backlog and, on the embedded store, its in-memory search indexes."""
    figures = Figures(embedding_backlog=service.vectors.waiting if service.vectors is not None else 0)
    store = service.stores.long_term
    if isinstance(store, SqliteLongTermStore):
        indexes = store.indexes
        figures.index_memory_bytes = indexes.memory_bytes()
        figures.index_memory_budget_bytes = service.settings.long_term.index_memory_mb * 2**20
        figures.index_users = indexes.users_held()
        figures.index_memories = indexes.memories_held()
        stats = indexes.stats
        figures.index_events = {
            "build": stats.builds,
            "load": stats.loads,
            "save": stats.saves,
            "eviction": stats.evictions,
        }
    return figures
