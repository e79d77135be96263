"""Start-up warm-up: the configured users' search indexes are built in the background when the service
opens (long_term.warm_on_start), so their first search finds them ready, and a failed or interrupted
warm-up leaves the service working."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_memory.config import SecuritySettings, Settings, TokenEntry
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.search.query import SearchQuery
from mcp_memory.security.static_tokens import hash_token
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.warmup import Warmup
from mcp_memory.storage import LongTermStore
from mcp_memory.storage.sqlite.indexes import SearchIndexes
from mcp_memory.storage.sqlite.snapshots import SnapshotFolder
from tests.helpers import HANG_SECONDS

pytestmark = pytest.mark.anyio


def counted_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record, in order, the user of every index any SQLite store opens (loads or builds) from now on."""
    open_index = SearchIndexes._open_index
    users: list[str] = []

    async def counting(self: SearchIndexes, user_id: str) -> Any:
        users.append(user_id)
        return await open_index(self, user_id)

    monkeypatch.setattr(SearchIndexes, "_open_index", counting)
    return users


async def stored_turn(settings: Settings) -> None:
    async with open_service(settings) as service:
        await service.add_turn("tester", "t", "user", "I ride my bicycle to work")


async def warmed(service: MemoryService) -> None:
    assert service.warmup is not None
    with anyio.fail_after(HANG_SECONDS):
        await service.warmup.done.wait()


async def test_the_first_search_after_start_up_finds_the_index_built(
    fast_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stored_turn(fast_settings)
    builds = counted_builds(monkeypatch)
    async with open_service(fast_settings) as service:
        await warmed(service)
        assert builds == ["tester"]  # before any search

        result = await service.search(
            SearchQuery.of("tester", "bicycle", mode="text", settings=service.settings)
        )
        assert [hit.content for hit in result.results] == ["I ride my bicycle to work"]
        assert builds == ["tester"]  # the search used the warm index


async def test_token_users_are_warmed_too(fast_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = [TokenEntry(sha256=hash_token(f"token-{user}"), user_id=user) for user in ("ann", "tester")]
    settings = fast_settings.model_copy(update={"security": SecuritySettings(tokens=tokens)})
    builds = counted_builds(monkeypatch)
    async with open_service(settings) as service:
        await warmed(service)
    assert builds == ["tester", "ann"]  # the stdio user first, each user once


async def test_with_warm_up_off_the_first_search_builds(
    fast_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stored_turn(fast_settings)
    settings = fast_settings.model_copy(
        update={"long_term": fast_settings.long_term.model_copy(update={"warm_on_start": False})}
    )
    builds = counted_builds(monkeypatch)
    async with open_service(settings) as service:
        assert service.warmup is None
        await service.list_threads("tester")
        assert builds == []

        result = await service.search(
            SearchQuery.of("tester", "bicycle", mode="text", settings=service.settings)
        )
        assert len(result.results) == 1
        assert builds == ["tester"]


def failing_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing(self: SearchIndexes, user_id: str) -> Any:
        raise BackendUnavailableError("the memory database is locked by another process")

    monkeypatch.setattr(SearchIndexes, "_open_index", failing)


async def test_a_failed_warm_up_is_logged_and_the_first_search_builds(
    fast_settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    await stored_turn(fast_settings)
    open_index = SearchIndexes._open_index
    failing_builds(monkeypatch)
    async with open_service(fast_settings) as service:
        await warmed(service)
        assert (
            "search indexes of tester not prepared at start-up: the memory database is locked" in caplog.text
        )

        monkeypatch.setattr(SearchIndexes, "_open_index", open_index)  # the lock is gone
        result = await service.search(
            SearchQuery.of("tester", "bicycle", mode="text", settings=service.settings)
        )
        assert len(result.results) == 1


async def test_closing_during_the_warm_up_ends_it(
    fast_settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    await stored_turn(fast_settings)
    started = anyio.Event()
    closing = threading.Event()  # set when the service starts closing the warm-up
    build_index: Callable[..., Any] = SearchIndexes._index_from_rows
    running = Warmup.running

    closed = threading.Event()  # set by the test once closing the service has returned
    closed_during_build: list[bool] = []

    def held_build_index(self: SearchIndexes, *args: Any) -> Any:
        anyio.from_thread.run_sync(started.set)
        closing.wait(20)  # held until the service closes (the bound only ends a broken test)
        # A close that waits for this build cannot return meanwhile: this wait runs out. One that
        # does not wait returns at once, and the test sets `closed` well within the bound.
        closed_during_build.append(closed.wait(1))
        return build_index(self, *args)

    @asynccontextmanager
    async def announcing_its_close(
        cls: type[Warmup], long_term: LongTermStore, users: Iterable[str]
    ) -> AsyncIterator[Warmup]:
        async with running(long_term, users) as warmup:
            try:
                yield warmup
            finally:
                # No await from here to the warm-up's own close: the build is still in flight.
                closing.set()

    monkeypatch.setattr(SearchIndexes, "_index_from_rows", held_build_index)
    monkeypatch.setattr(Warmup, "running", classmethod(announcing_its_close))
    monkeypatch.setattr(SnapshotFolder, "load", lambda self, user_id: None)  # built, not loaded
    with caplog.at_level(logging.ERROR):
        async with open_service(fast_settings) as service:
            with anyio.fail_after(HANG_SECONDS):
                await started.wait()
            warmup = service.warmup
        closed.set()
        assert warmup is not None and warmup.done.is_set()
    assert closing.is_set(), "the build was not held until the service closed"
    assert closed_during_build == [False], "the service closed before the build on its worker thread ended"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
