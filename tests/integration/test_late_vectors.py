"""Turns are embedded after add_turn acknowledges them (service/vectors.py), without losing
read-your-writes: found by text at once, by meaning as soon as the vector exists, and a search by
meaning waits for the user's turns still being embedded (a few whatever it takes; a backlog at most
search.vector_wait_ms, and then says its meaning side was incomplete). An embedder held on an event makes each step
happen in a known order; nothing here waits on time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import numpy as np
import pytest

from mcp_memory.config import Settings
from mcp_memory.errors import NotFoundError
from mcp_memory.llm.embedder import Embedder
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.searching import READ_YOUR_WRITES
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage.base import LateVectors
from mcp_memory.views import SearchResult

pytestmark = pytest.mark.anyio
USER = "ann"


class HeldEmbedder:
    """The service's own embedder, held until `release` is set; counts what it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.release = anyio.Event()
        self.asked = anyio.Event()
        self.texts: list[str] = []

    @property
    def spec(self):  # type: ignore[no-untyped-def]
        return self.inner.spec

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        self.asked.set()
        await self.release.wait()
        return await self.inner.embed(texts)

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def held_writer(service: MemoryService) -> AsyncIterator[HeldEmbedder]:
    """The service's turns go to a vector writer whose embedder waits for the test."""
    assert isinstance(service.stores.long_term, LateVectors)
    held = HeldEmbedder(service.embedder)
    async with VectorWriter.running(held, service.stores.long_term) as writer:
        service.vectors = writer
        yield held
        held.release.set()  # whatever is still queued is written before the writer closes


async def test_the_embedded_default_acknowledges_a_turn_before_embedding_it(fast_settings: Settings) -> None:
    async with open_service(fast_settings) as service:
        assert service.vectors is not None  # hashing embedder, SQLite store: vectors come later


async def test_a_turn_is_found_by_text_at_once_and_by_meaning_once_its_vector_exists(
    service: MemoryService,
) -> None:
    service.settings.search = service.settings.search.model_copy(update={"vector_wait_ms": 600_000})
    async with held_writer(service) as held:
        added = await service.add_turn(USER, "t", "user", "Our budget for Maui is 10000 dollars")
        stored = await service.get_memory(USER, added.turn.id)
        assert stored.embedding is None  # acknowledged before its vector

        by_text = await service.search(
            SearchQuery.of(USER, "budget Maui", mode="text", settings=service.settings)
        )
        assert [h.id for h in by_text.results] == [added.turn.id]

        found: list[str] = []

        async def search_by_meaning() -> None:
            result = await service.search(
                SearchQuery.of(USER, "budget Maui", mode="vector", settings=service.settings)
            )
            found.extend(h.id for h in result.results)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(search_by_meaning)
            await held.asked.wait()
            await anyio.wait_all_tasks_blocked()
            assert found == []  # the search by meaning waits for the turn's vector
            held.release.set()
        assert found == [added.turn.id]
        assert (await service.get_memory(USER, added.turn.id)).embedding is not None


async def test_a_search_during_an_import_answers_after_the_wait_and_says_its_meaning_side_was_incomplete(
    service: MemoryService,
) -> None:
    service.settings.search = service.settings.search.model_copy(update={"vector_wait_ms": 50})
    async with held_writer(service) as held:
        earlier = await service.add_turn(USER, "t", "user", "We fly to Lisbon in spring")
        held.release.set()
        await service.vectors.settled(USER)  # type: ignore[union-attr]
        held.release = anyio.Event()
        # An import added flat out: more turns wait for their vectors than a search waits for unbounded.
        for n in range(READ_YOUR_WRITES):
            await service.add_turn(USER, "t", "user", f"Imported line {n} about the garden shed")
        added = await service.add_turn(USER, "t", "user", "Our budget for Maui is 10000 dollars")
        await held.asked.wait()
        query = SearchQuery.of(USER, "budget Maui", settings=service.settings)

        with anyio.fail_after(30):  # a guard only: the search waits 50 ms for the held vectors, not for them
            during = await service.search(query)
        assert during.meaning_incomplete
        assert [h.id for h in during.results][:1] == [added.turn.id]  # found by its words
        assert {h.id: h.matched_by for h in during.results}[added.turn.id] == "text"
        assert earlier.turn.id in {h.id for h in during.results}  # embedded: found by meaning
        assert "meaning_incomplete" in during.model_dump(exclude_defaults=True)

        held.release.set()
        await service.vectors.settled(USER)  # type: ignore[union-attr]
        after = await service.search(query)
        assert not after.meaning_incomplete
        assert "meaning_incomplete" not in after.model_dump(exclude_defaults=True)


async def test_what_was_just_said_is_waited_for_beyond_the_bound(service: MemoryService) -> None:
    """A few turns being embedded (a chat's pace) are waited for whatever it takes: read-your-writes."""
    service.settings.search = service.settings.search.model_copy(update={"vector_wait_ms": 1})
    async with held_writer(service) as held:
        added = await service.add_turn(USER, "t", "user", "Our budget for Maui is 10000 dollars")
        await held.asked.wait()
        query = SearchQuery.of(USER, "how much money for the Hawaii holiday", settings=service.settings)
        async with anyio.create_task_group() as tasks:
            searched: list[SearchResult] = []

            async def search() -> None:
                searched.append(await service.search(query))

            tasks.start_soon(search)
            await anyio.wait_all_tasks_blocked()
            assert not searched, "the search waits for the turn's vector, past the 1 ms bound"
            held.release.set()
        [found] = searched
        assert not found.meaning_incomplete
        assert added.turn.id in {h.id for h in found.results if h.matched_by in ("meaning", "both")}


async def test_a_turn_forgotten_while_it_is_embedded_stays_forgotten(service: MemoryService) -> None:
    async with held_writer(service) as held:
        added = await service.add_turn(USER, "t", "user", "A secret I will take back")
        await held.asked.wait()
        await service.forget(USER, thread_id="t")
        held.release.set()
        await service.vectors.settled(USER)  # type: ignore[union-attr]
    with pytest.raises(NotFoundError):
        await service.get_memory(USER, added.turn.id)
    assert await service.stores.long_term.memories_of(USER) == []


async def test_closing_writes_every_queued_vector_and_a_crash_is_caught_up_at_start(
    fast_settings: Settings,
) -> None:
    async with open_service(fast_settings) as service:
        async with held_writer(service):
            ids = [(await service.add_turn(USER, "t", "user", f"turn number {n}")).turn.id for n in range(5)]
        # Closing the writer released the embedder and waited: every vector is written.
        for turn_id in ids:
            assert (await service.get_memory(USER, turn_id)).embedding is not None
        # A crash between the acknowledgement and the vector: the turn is stored without one.
        crashed = (await service.get_memory(USER, ids[0])).model_copy(
            update={"id": "turn_crashed", "embedding": None}
        )
        await service.stores.long_term.put([crashed])
    async with open_service(fast_settings) as reopened:
        assert reopened.vectors is not None
        await reopened.vectors.settled(USER)
        assert (await reopened.get_memory(USER, "turn_crashed")).embedding is not None
        assert isinstance(reopened.stores.long_term, LateVectors)
        assert await reopened.stores.long_term.unembedded_turns(10) == []


async def test_add_turn_waits_while_the_backlog_of_turns_to_embed_is_full(service: MemoryService) -> None:
    """Turns acknowledged faster than they are embedded do not pile up: past the backlog, add_turn waits
    for room, so a search by meaning never waits for more than the backlog."""
    assert isinstance(service.stores.long_term, LateVectors)
    held = HeldEmbedder(service.embedder)
    async with VectorWriter.running(held, service.stores.long_term, backlog=2) as writer:
        service.vectors = writer
        await service.add_turn(USER, "t", "user", "one")
        await service.add_turn(USER, "t", "user", "two")
        third: list[str] = []

        async def add_third() -> None:
            third.append((await service.add_turn(USER, "t", "user", "three")).turn.id)

        async with anyio.create_task_group() as group:
            group.start_soon(add_third)
            await held.asked.wait()
            with anyio.move_on_after(1):  # without a backlog the third add returns at once
                while not third:  # noqa: ASYNC110  polling another task's result
                    await anyio.sleep(0.01)
            returned_early = bool(third)
            held.release.set()
        assert not returned_early, "add_turn returned while the backlog was full"
        assert len(third) == 1
        assert sorted(held.texts) == ["one", "three", "two"]  # every turn embedded once
