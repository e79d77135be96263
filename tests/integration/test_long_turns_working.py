"""Very long turns in working memory, on SQLite and on a real Redis: kept whole while the context window
holds them, and summarized (never dropped) when one turn alone is larger than the window."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_memory.config import Settings
from mcp_memory.models import summary_id
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.integration.redis_service_support import USER, service_settings

pytestmark = pytest.mark.anyio

WINDOW = 2000  # tokens: far smaller than the pasted report below
ROOT_CAUSE = "Root cause: the disk /dev/sdb1 on host-7 filled up at 03:12 after log rotation failed."


@pytest.fixture(params=["sqlite", "redis"])
async def service(request: pytest.FixtureRequest, fast_settings: Settings) -> AsyncIterator[MemoryService]:
    settings = fast_settings
    if request.param == "redis":
        settings = service_settings(fast_settings, str(request.getfixturevalue("redis_url")))
    async with open_service(settings) as opened:
        yield opened


def incident_report(lines: int) -> str:
    """A pasted report: a title, many routine log lines, one line that matters."""
    body = [
        f"2026-11-{i % 28 + 1:02d} 02:{i % 60:02d} INFO worker-{i % 13} job {i * 31 % 99991} ok in {i % 997} ms"
        for i in range(lines)
    ]
    body.insert(lines // 2, ROOT_CAUSE)
    return "Incident report for the Atlas cluster, night of 24 November\n" + "\n".join(body)


async def test_one_turn_larger_than_the_window_is_summarized_not_dropped(service: MemoryService) -> None:
    await service.add_turn(USER, "t", "user", "Here is last night's incident report.", None, WINDOW)
    report = incident_report(600)
    out = await service.add_turn(USER, "t", "user", report, None, WINDOW)
    assert out.turn.token_count > WINDOW and out.summarized
    reply = await service.add_turn(USER, "t", "assistant", "Reading it now.", None, WINDOW)

    working = await service.get_working_memory(USER, "t")
    assert working.token_count <= working.threshold_tokens
    assert report not in [m.content for m in working.messages]
    assert working.messages[-1].id == reply.turn.id, "the newest turn stays verbatim"
    # The summary says what the turn was and where it is whole, and keeps a digest of it.
    assert f"a text of {len(report):,} characters ({out.turn.token_count:,} tokens)" in working.summary
    assert f"memory://memories/{out.turn.id}" in working.summary
    assert "it begins: Incident report for the Atlas cluster, night of 24 November" in working.summary
    assert "/dev/sdb1" in working.summary
    stored_summary = await service.get_memory(USER, summary_id(USER, "t"))
    assert stored_summary.content == working.summary
    assert (await service.get_memory(USER, out.turn.id)).content == report


async def test_a_million_characters_stay_whole_in_working_memory_when_the_window_holds_them(
    service: MemoryService,
) -> None:
    report = incident_report(20_000)[:1_000_000]
    assert len(report) == service.settings.max_content_chars
    out = await service.add_turn(USER, "t", "user", report, None, 2_000_000)
    assert not out.summarized

    working = await service.get_working_memory(USER, "t")
    assert [m.content for m in working.messages] == [report]
    assert working.token_count == out.turn.token_count == service.tokens.count(report)
    assert (await service.get_memory(USER, out.turn.id)).content == report
