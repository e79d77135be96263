"""MemoryService on Redis working memory under concurrent writers while summarization runs repeatedly:
no acknowledged turn is lost, none is kept twice, and the thread's stored token total stays exact."""

from __future__ import annotations

import anyio
import pytest

from mcp_memory.config import Settings
from mcp_memory.service.memory_service import MemoryService
from tests.integration.redis_service_support import USER, check_thread, recorded_service, service_settings

pytestmark = pytest.mark.anyio

WRITERS = 16
TURNS_EACH = 8
WINDOW = 512  # small: the 128 turns cross the threshold (358 tokens) many times over


async def write_turns(service: MemoryService, writer: int, acknowledged: list[str]) -> None:
    for n in range(TURNS_EACH):
        role = "user" if n % 2 == 0 else "assistant"
        content = (
            f"Writer {writer} says note {n}: the budget for project {writer}-{n} is ${writer * 100 + n}."
        )
        result = await service.add_turn(USER, "shared", role, content, None, WINDOW)
        acknowledged.append(result.turn.id)


async def test_sixteen_writers_on_one_thread_lose_nothing_while_it_is_summarized(
    fast_settings: Settings, redis_url: str
) -> None:
    settings = service_settings(fast_settings, redis_url)
    async with recorded_service(settings) as (service, recorder):
        acknowledged: list[str] = []
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for writer in range(WRITERS):
                    tg.start_soon(write_turns, service, writer, acknowledged)
        assert len(acknowledged) == WRITERS * TURNS_EACH
        assert len(recorder.compacted) >= 3, "summarization ran repeatedly"
        await check_thread(service, [recorder], "shared", acknowledged)
        for turn_id in acknowledged:  # every acknowledged turn is in long term, whatever working memory did
            assert (await service.get_memory(USER, turn_id)).thread_id == "shared"
