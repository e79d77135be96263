"""A turn is found by the words of the turns around it: the ones before it at once, the ones after it as
they arrive (search/context.py). The rewrite reaches another process on the same file through the change
clock, and never brings back a forgotten turn."""

from __future__ import annotations

import pytest

from mcp_memory.config import Settings
from mcp_memory.errors import NotFoundError
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.base import LateContext

pytestmark = pytest.mark.anyio
USER = "ann"


async def text_search(service: MemoryService, query: str) -> list[str]:
    return [hit.id for hit in (await service.search(USER, query, mode="text")).results]


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
