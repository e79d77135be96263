"""Storage backends behind their protocols; `open_stores` and `open_learning_stores` pick them from the
settings.

Backends are imported only when chosen, so the Redis and Cosmos clients stay optional extras.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_memory.audit.log import AuditLog
from mcp_memory.config import Settings
from mcp_memory.errors import ConfigError
from mcp_memory.models import EmbeddingSpec
from mcp_memory.private_files import make_private
from mcp_memory.security.spaces import stored_bytes_quota
from mcp_memory.storage.base import LongTermStore, WorkingForgetCount, WorkingMemoryStore
from mcp_memory.storage.graph_base import GraphStore
from mcp_memory.storage.learning_base import RevisionStore, TriggerCounters

if TYPE_CHECKING:
    from mcp_memory.storage.sqlite.db import SqliteDatabase

__all__ = [
    "LongTermStore",
    "Stores",
    "WorkingForgetCount",
    "WorkingMemoryStore",
    "needs_extra",
    "open_audit_log",
    "open_graph_store",
    "open_learning_stores",
    "open_stores",
]

log = logging.getLogger(__name__)

# The third-party packages the optional extras install (pyproject.toml), by top-level import name.
EXTRA_PACKAGES = frozenset({"redis", "azure", "aiohttp"})
REDIS_WORKING = ("working memory on Redis", "redis")
COSMOS_LONG_TERM = ("long-term memory on Azure Cosmos DB", "cosmos")


@contextmanager
def needs_extra(what: tuple[str, str]) -> Iterator[None]:
    """Wraps the lazy import of an optional backend: a missing extra package becomes one ConfigError
    naming the command that installs it, e.g. "working memory on Redis needs the redis extra: ...".
    `what` is (the feature, the extra's name), e.g. REDIS_WORKING."""
    feature, extra = what
    try:
        yield
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in EXTRA_PACKAGES:
            raise  # our own module missing is a broken install, not a missing extra
        raise ConfigError(f"{feature} needs the {extra} extra: pip install 'mcp-memory[{extra}]'") from e


@dataclass(frozen=True)
class Stores:
    working: WorkingMemoryStore
    long_term: LongTermStore
    description: str  # e.g. "working memory: redis, long term: sqlite (/path/memory.db)"
    # The SQLite file, when a store is in it: a forget erases what it deleted from the disk through it.
    local_file: SqliteDatabase | None = None


def repair_modes(settings: Settings) -> None:
    """At every start, whatever the backends: what another user could read under the data directory
    (left by an older version, a copy, an editor) is made this user's alone, in one log line."""
    changed = make_private(settings.data_dir)
    if changed:
        shown = ", ".join(str(p.relative_to(settings.data_dir)) or "." for p in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        log.warning(
            "made %d files and folders under %s private to this user (0600/0700): %s%s",
            len(changed),
            settings.data_dir,
            shown,
            more,
        )


@asynccontextmanager
async def open_stores(settings: Settings, embedding: EmbeddingSpec) -> AsyncIterator[Stores]:
    working_backend = settings.working.resolved_backend
    long_term_backend = settings.long_term.resolved_backend
    repair_modes(settings)
    async with AsyncExitStack() as stack:
        db = None
        if "sqlite" in (working_backend, long_term_backend):
            from mcp_memory.storage.sqlite.db import SqliteDatabase

            db = await stack.enter_async_context(SqliteDatabase.open(settings.sqlite_path))

        working: WorkingMemoryStore
        match working_backend:
            case "sqlite":
                from mcp_memory.storage.sqlite.working import SqliteWorkingMemoryStore

                assert db is not None
                working = SqliteWorkingMemoryStore(db)
            case "redis":
                with needs_extra(REDIS_WORKING):
                    from mcp_memory.storage.redis.working import RedisWorkingMemoryStore

                working = await stack.enter_async_context(RedisWorkingMemoryStore.open(settings.working))

        long_term: LongTermStore
        match long_term_backend:
            case "sqlite":
                from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

                assert db is not None
                long_term = await stack.enter_async_context(
                    SqliteLongTermStore.open(
                        db,
                        embedding,
                        index_memory=settings.long_term.index_memory_mb * 2**20,
                        ann_min_memories=settings.long_term.ann_min_memories,
                        ann_expansion=settings.long_term.ann_expansion,
                        max_stored_bytes=stored_bytes_quota(settings.security),
                    )
                )
            case "cosmos":
                with needs_extra(COSMOS_LONG_TERM):
                    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

                long_term = await stack.enter_async_context(
                    CosmosLongTermStore.open(
                        settings.long_term.cosmos,
                        embedding,
                        max_stored_bytes=stored_bytes_quota(settings.security),
                    )
                )

        where = f" ({settings.sqlite_path})" if db is not None else ""
        yield Stores(
            working=working,
            long_term=long_term,
            description=f"working memory: {working_backend}, long term: {long_term_backend}{where}",
            local_file=db,
        )


async def open_learning_stores(
    settings: Settings, stores: Stores, stack: AsyncExitStack
) -> tuple[RevisionStore, TriggerCounters]:
    """Where revisions and trigger counters live: with the data they belong to, shared by every replica
    whenever the stores are. Counters: Redis when working memory is there, else Cosmos DB when long term
    is there, else the SQLite file. Revisions: Cosmos DB when long term is there, else the SQLite file.
    forget() reaches them wherever they are, through Learning.forgotten."""
    revisions: RevisionStore | None = None
    counters: TriggerCounters | None = None
    if settings.working.resolved_backend == "redis":
        with needs_extra(REDIS_WORKING):
            from mcp_memory.storage.redis.counters import RedisTriggerCounters

        counters = await stack.enter_async_context(RedisTriggerCounters.open(settings.working))
    if settings.long_term.resolved_backend == "cosmos":
        with needs_extra(COSMOS_LONG_TERM):
            from mcp_memory.storage.cosmos.counters import CosmosTriggerCounters
            from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
            from mcp_memory.storage.cosmos.revisions import CosmosRevisionStore

        if isinstance(stores.long_term, CosmosLongTermStore):
            timeout = stores.long_term.settings.timeout_seconds
            container = await stores.long_term.open_learning_container()
            # Revisions count toward the same stored bytes as the memories, in the long-term store's usage.
            revisions = CosmosRevisionStore(container, stores.long_term.usage, timeout_seconds=timeout)
            counters = counters or CosmosTriggerCounters(container, timeout_seconds=timeout)
    if revisions is not None and counters is not None:
        return revisions, counters

    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
    from mcp_memory.storage.sqlite.revisions import SqliteRevisionStore, SqliteTriggerCounters

    if isinstance(stores.long_term, SqliteLongTermStore):
        db = stores.long_term.db
    else:
        # Working memory on Redis, long term on a store without a revision store of its own.
        from mcp_memory.storage.sqlite.db import SqliteDatabase

        log.warning("revisions are kept in the local file %s (one replica only)", settings.sqlite_path)
        db = await stack.enter_async_context(SqliteDatabase.open(settings.sqlite_path))
    return revisions or SqliteRevisionStore(db), counters or SqliteTriggerCounters(db)


async def open_audit_log(
    settings: Settings, stores: Stores, stack: AsyncExitStack, on_retry: Callable[[], None] | None = None
) -> AuditLog | None:
    """Where the audit trail lives: with long-term memory (audit/). In the SQLite file, each record in
    its change's transaction; on Cosmos DB, in the learning container, written with the change.
    `on_retry` hears of each append that found another writer's record where it meant to put its own."""
    if not settings.audit.enabled:
        return None
    if settings.long_term.resolved_backend == "cosmos":
        with needs_extra(COSMOS_LONG_TERM):
            from mcp_memory.storage.cosmos.audit import CosmosAuditLog
            from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

        if isinstance(stores.long_term, CosmosLongTermStore):
            container = await stores.long_term.open_learning_container()
            return CosmosAuditLog(
                container, timeout_seconds=stores.long_term.settings.timeout_seconds, on_retry=on_retry
            )
        return None

    from mcp_memory.storage.sqlite.audit import SqliteAuditLog
    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

    if isinstance(stores.long_term, SqliteLongTermStore):
        return SqliteAuditLog(stores.long_term.db, on_retry=on_retry)
    return None


async def open_graph_store(settings: Settings, stores: Stores, stack: AsyncExitStack) -> GraphStore:
    """Where the knowledge graph lives: beside the long-term memories its observations are, in the
    Cosmos DB container of revisions when long term is on Cosmos DB, else in the SQLite file."""
    if settings.long_term.resolved_backend == "cosmos":
        with needs_extra(COSMOS_LONG_TERM):
            from mcp_memory.storage.cosmos.graph import CosmosGraphStore
            from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

        if isinstance(stores.long_term, CosmosLongTermStore):
            container = await stores.long_term.open_learning_container()
            return CosmosGraphStore(container, timeout_seconds=stores.long_term.settings.timeout_seconds)

    from mcp_memory.storage.sqlite.graph import SqliteGraphStore
    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

    if isinstance(stores.long_term, SqliteLongTermStore):
        return SqliteGraphStore(stores.long_term.db)
    from mcp_memory.storage.sqlite.db import SqliteDatabase

    return SqliteGraphStore(await stack.enter_async_context(SqliteDatabase.open(settings.sqlite_path)))
