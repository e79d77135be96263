"""A turn is found by the words of the turns around it: the ones before it at once, the ones after it as
they arrive (search/context.py). The rewrite reaches another process on the same file through the change
clock, and never brings back a forgotten turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.config import Settings
from mcp_memory.errors import NotFoundError
from mcp_memory.models import Memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.base import LateContext

pytestmark = pytest.mark.anyio
USER = "ann"


async def text_search(service: MemoryService, query: str) -> list[str]:
    return [
        hit.id
        for hit in (
            await service.search(SearchQuery.of(USER, query, mode="text", settings=service.settings))
        ).results
    ]


async def test_a_short_answer_is_found_by_the_question_after_it(service: MemoryService) -> None:
    answer = await service.add_turn(USER, "trip", "user", "Finally booked it, ten nights!")
    assert await text_search(service, "Lisbon hotel") == []

    question = await service.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon did you book?")
    assert await text_search(service, "Lisbon hotel") == [question.turn.id, answer.turn.id]


async def test_a_reply_is_found_by_the_turn_before_it(service: MemoryService) -> None:
    suggestion = await service.add_turn(USER, "trip", "assistant", "How about the Alfama district?")
    reply = await service.add_turn(USER, "trip", "user", "Sounds great, booked!")
    assert await text_search(service, "Alfama") == [suggestion.turn.id, reply.turn.id]


async def test_only_the_turns_within_reach_get_a_later_turn(fast_settings: Settings) -> None:
    settings = fast_settings.model_copy(
        update={"search": fast_settings.search.model_copy(update={"context_turns_after": 1})}
    )
    async with open_service(settings) as service:
        first = await service.add_turn(USER, "trip", "user", "Ten nights, booked!")
        second = await service.add_turn(USER, "trip", "user", "And a car too.")
        third = await service.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon?")
        assert first.turn.id not in await text_search(service, "Lisbon")
        assert await text_search(service, "Lisbon") == [third.turn.id, second.turn.id]


async def test_turns_of_another_thread_are_not_context(service: MemoryService) -> None:
    await service.add_turn(USER, "a", "user", "Ten nights, booked!")
    other = await service.add_turn(USER, "b", "assistant", "Which hotel in Lisbon?")
    assert await text_search(service, "Lisbon") == [other.turn.id]


async def test_another_process_on_the_file_finds_the_rewritten_context(fast_settings: Settings) -> None:
    async with open_service(fast_settings) as writer, open_service(fast_settings) as reader:
        answer = await writer.add_turn(USER, "trip", "user", "Finally booked it, ten nights!")
        assert await text_search(reader, "Lisbon hotel") == []  # the reader's index is built now
        question = await writer.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon did you book?")
        assert await text_search(reader, "Lisbon hotel") == [question.turn.id, answer.turn.id]


async def test_a_rewrite_never_brings_back_a_forgotten_turn(service: MemoryService) -> None:
    store = service.stores.long_term
    assert isinstance(store, LateContext)
    answer = await service.add_turn(USER, "trip", "user", "Finally booked it, ten nights!")
    await service.forget(USER, memory_id=answer.turn.id)
    assert await store.set_index_contexts(USER, {answer.turn.id: "Lisbon hotel"}) == 0
    with pytest.raises(NotFoundError):
        await service.get_memory(USER, answer.turn.id)
    assert await text_search(service, "Lisbon hotel") == []
    assert await store.set_index_contexts(USER, {}) == 0


async def test_forgetting_a_turn_takes_its_words_out_of_the_turns_around_it(service: MemoryService) -> None:
    """(tests/security/test_forget_turn.py scans the file for them.)"""
    first = await service.add_turn(USER, "trip", "user", "Ten nights, booked!")
    secret = await service.add_turn(USER, "trip", "user", "My passport number is X1234567")
    third = await service.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon?")
    assert await text_search(service, "passport") == [secret.turn.id, first.turn.id, third.turn.id]

    await service.forget(USER, memory_id=secret.turn.id)
    assert await text_search(service, "passport X1234567") == []
    # The turns close up around the gap: the first turn now has the third after it.
    assert await text_search(service, "Lisbon") == [third.turn.id, first.turn.id]


async def test_a_dry_run_rewrites_nothing(service: MemoryService) -> None:
    first = await service.add_turn(USER, "trip", "user", "Ten nights, booked!")
    secret = await service.add_turn(USER, "trip", "user", "My passport number is X1234567")
    await service.forget(USER, memory_id=secret.turn.id, dry_run=True)
    assert await text_search(service, "passport") == [secret.turn.id, first.turn.id]


async def test_imported_turns_are_found_by_the_turns_around_them(
    fast_settings: Settings, tmp_path: Path
) -> None:
    async with open_service(fast_settings) as source:
        answer = await source.add_turn(USER, "trip", "user", "Finally booked it, ten nights!")
        question = await source.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon did you book?")
        exported = (await source.export_memories(USER)).jsonl
    other = fast_settings.model_copy(update={"data_dir": tmp_path / "elsewhere"})
    async with open_service(other) as target:
        await target.import_memories(USER, exported)
        assert await text_search(target, "Lisbon hotel") == [question.turn.id, answer.turn.id]


async def test_a_turn_forgotten_while_a_turn_is_added_leaves_no_context_holding_it(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The add reads its neighbours (the forgotten turn among them), then the forget runs: the forget
    waits for the add to finish, so the rewrite it does last takes the words out of every context."""
    store = service.stores.long_term
    first = await service.add_turn(USER, "trip", "user", "Ten nights, booked!")
    secret = await service.add_turn(USER, "trip", "user", "My passport number is X1234567")
    read_neighbours, release = anyio.Event(), anyio.Event()
    recent = store.recent

    async def held_recent(*args: Any, **kwargs: Any) -> list[Memory]:
        found = await recent(*args, **kwargs)
        if not read_neighbours.is_set():
            read_neighbours.set()
            await release.wait()
        return found

    monkeypatch.setattr(store, "recent", held_recent)
    forgotten = anyio.Event()
    added: list[str] = []

    async def add() -> None:
        added.append((await service.add_turn(USER, "trip", "assistant", "Which hotel in Lisbon?")).turn.id)

    async def forget() -> None:
        await service.forget(USER, memory_id=secret.turn.id)
        forgotten.set()

    async with anyio.create_task_group() as group:
        group.start_soon(add)
        await read_neighbours.wait()
        group.start_soon(forget)
        with anyio.move_on_after(1):  # without the lock the forget would finish here, before the add
            await forgotten.wait()
        release.set()
    assert await text_search(service, "passport X1234567") == []
    assert await text_search(service, "Lisbon") == [added[0], first.turn.id]
