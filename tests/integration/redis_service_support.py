"""Helpers for the tests of MemoryService on Redis working memory: settings, an opened service, and
spies that record what the working store and the summarizer did (the service is the code under test,
the stores and the summarizer stay real)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from mcp_memory.config import Settings
from mcp_memory.models import Message
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.summarizer import Summarizer
from mcp_memory.storage import Stores, WorkingMemoryStore
from tests.services.redis_server import redis_settings

USER = "tester"


def service_settings(
    base: Settings,
    redis_url: str,
    data_dir: Path | None = None,
    *,
    key_prefix: str | None = None,
    **working: Any,
) -> Settings:
    """`base` (the embedded default with the hashing embedder) with Redis working memory on a fresh prefix
    (or `key_prefix`, to share one deployment between replicas) and long term in `data_dir`."""
    options: dict[str, Any] = dict(working)
    if key_prefix is not None:
        options["key_prefix"] = key_prefix
    return base.model_copy(
        update={
            "working": redis_settings(redis_url, **options),
            "data_dir": data_dir or base.data_dir,
        }
    )


class RecordingWorkingStore:
    """The real working store, recording the ids every successful compaction removed and every lease
    the store refused (counted, and `lease_refused` set). Everything else goes straight through."""

    def __init__(self, inner: WorkingMemoryStore, lease_refused: anyio.Event | None = None) -> None:
        self.inner = inner
        self.compacted: list[list[str]] = []
        self.leases_refused = 0
        self.lease_refused = lease_refused or anyio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def compact(self, user_id: str, thread_id: str, *, removed_ids: Sequence[str], **rest: Any) -> bool:
        done = await self.inner.compact(user_id, thread_id, removed_ids=removed_ids, **rest)
        if done:
            self.compacted.append(list(removed_ids))
        return done

    async def try_lock(self, user_id: str, thread_id: str, owner: str, ttl_seconds: float) -> bool:
        taken = await self.inner.try_lock(user_id, thread_id, owner, ttl_seconds)
        if not taken:
            self.leases_refused += 1
            self.lease_refused.set()
        return taken

    @property
    def summarized_ids(self) -> set[str]:
        return {i for removed in self.compacted for i in removed}


class SlowSummarizer:
    """The real summarizer, entered through a gate that counts how many summarize at once (across every
    service that shares this instance) and holds each call, like an LLM call in flight, until `release`
    is set."""

    def __init__(self, inner: Summarizer, release: anyio.Event) -> None:
        self.inner = inner
        self.release = release
        self.inside = 0
        self.most_inside = 0
        self.calls = 0

    @property
    def name(self) -> str:
        return self.inner.name

    async def summarize(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        self.inside += 1
        self.calls += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            await self.release.wait()  # an LLM call in flight: other turns keep arriving
            return await self.inner.summarize(prev_summary, messages, max_tokens)
        finally:
            self.inside -= 1


@asynccontextmanager
async def recorded_service(
    settings: Settings, *, lease_refused: anyio.Event | None = None
) -> AsyncIterator[tuple[MemoryService, RecordingWorkingStore]]:
    """A MemoryService opened the way the server opens it, with its working store recorded (setting
    `lease_refused`, when given, on the first lease the store refuses)."""
    async with open_service(settings) as service:
        recorder = RecordingWorkingStore(service.stores.working, lease_refused)
        stores = Stores(
            working=recorder, long_term=service.stores.long_term, description=service.stores.description
        )
        yield dataclasses.replace(service, stores=stores), recorder


async def check_thread(
    service: MemoryService,
    recorders: Sequence[RecordingWorkingStore],
    thread_id: str,
    acknowledged: Sequence[str],
) -> None:
    """Every acknowledged turn is in the thread's working messages or was removed by a successful
    compaction (so the summary covers it), never both, never twice; the stored token total (what
    summarization decisions read) equals the recount of what is stored."""
    memory = await service.stores.working.get(USER, thread_id)
    assert memory is not None
    working = [m.id for m in memory.messages]
    assert len(working) == len(set(working)), "a message is kept twice"
    summarized = {i for recorder in recorders for i in recorder.summarized_ids}
    assert not summarized & set(working), "a message is both in the summary and verbatim"
    missing = [i for i in acknowledged if i not in working and i not in summarized]
    assert missing == [], f"{len(missing)} acknowledged turns are neither in working memory nor summarized"
    [info] = [t for t in await service.stores.working.list_threads(USER) if t.thread_id == thread_id]
    assert info.token_count == memory.summary_token_count + sum(m.token_count for m in memory.messages)
    assert memory.summary_token_count == service.tokens.count(memory.summary)
    for message in memory.messages:
        assert message.token_count == service.tokens.count(message.content)
