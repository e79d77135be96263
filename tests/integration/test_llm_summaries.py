"""The LLM summary path against the local OpenAI-compatible stub server: the LLM writes the summary
when it can; on timeouts, 429s, 500s and malformed answers the offline summarizer takes over, the turn
is acknowledged, and nothing is lost."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from mcp_memory.config import LLMSettings, Settings
from mcp_memory.models import summary_id
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.fakes.openai_stub import OpenAIStub

pytestmark = pytest.mark.anyio
USER = "tester"


@pytest.fixture
async def llm_service(fast_settings: Settings, openai_stub: OpenAIStub) -> AsyncIterator[MemoryService]:
    llm = LLMSettings(
        provider="openai",
        model="stub-chat",
        base_url=openai_stub.base_url,
        api_key=SecretStr("sk-test-not-a-secret"),
        timeout_seconds=1.0,
        max_retries=0,
    )
    # Fact extraction would share the scripted stub; these tests are about summaries only.
    learning = fast_settings.learning.model_copy(
        update={"extract_every_turns": 0, "extract_on_summary": False}
    )
    async with open_service(fast_settings.model_copy(update={"llm": llm, "learning": learning})) as service:
        yield service


async def _until_summarized(service: MemoryService, thread: str = "t") -> list[str]:
    ids = []
    for i in range(40):
        out = await service.add_turn(
            USER,
            thread,
            "user",
            f"Line {i}: the quarterly figure for region {i} was {i * 13} units.",
            None,
            400,
        )
        ids.append(out.turn.id)
        if out.summarized:
            return ids
    raise AssertionError("the thread never crossed its threshold")


async def _nothing_lost(service: MemoryService, ids: list[str]) -> None:
    for turn_id in ids:
        assert (await service.get_memory(USER, turn_id)).type == "turn"


async def test_the_llm_writes_the_summary(llm_service: MemoryService, openai_stub: OpenAIStub) -> None:
    openai_stub.script("The user reported quarterly figures per region; region 0 was 0 units.")
    ids = await _until_summarized(llm_service)
    wm = await llm_service.get_working_memory(USER, "t")
    assert wm.summary == "The user reported quarterly figures per region; region 0 was 0 units."
    stored = await llm_service.get_memory(USER, summary_id(USER, "t"))
    assert stored.metadata["summarizer"].startswith("llm")
    request = openai_stub.chat_requests()[-1]
    assert request["model"] == "stub-chat"
    assert "Line 0" in str(request["messages"])
    await _nothing_lost(llm_service, ids)


@pytest.mark.parametrize("mode", ["timeout", "500", "429", "malformed", "empty"])
async def test_llm_failure_falls_back_to_the_offline_summary(
    llm_service: MemoryService, openai_stub: OpenAIStub, mode: str
) -> None:
    openai_stub.set_mode(mode)  # type: ignore[arg-type]
    ids = await _until_summarized(llm_service)
    openai_stub.release_hung()
    wm = await llm_service.get_working_memory(USER, "t")
    # The offline summarizer's output: the user's lines as notes, drawn from the summarized messages.
    assert wm.summary.startswith("Line ") and "quarterly figure" in wm.summary
    assert wm.token_count <= wm.threshold_tokens
    stored = await llm_service.get_memory(USER, summary_id(USER, "t"))
    assert stored.content == wm.summary
    assert openai_stub.chat_requests(), "the LLM was asked first"
    await _nothing_lost(llm_service, ids)
