"""The LLM summary path against the local OpenAI-compatible stub server: the LLM writes the summary
when it can; on timeouts, 429s, 500s and malformed answers the offline summarizer takes over, the turn
is acknowledged, and nothing is lost."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from pydantic import SecretStr

from mcp_memory.config import LLMSettings, Settings
from mcp_memory.models import summary_id
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.fakes.openai_stub import OpenAIStub

pytestmark = pytest.mark.anyio
USER = "tester"


# The stub answers at once; a loaded machine may still take a while to get to it. Only the test of a hung
# request sets a short timeout, so that it need not wait long for the request to give up.
ANSWER_SECONDS = 10.0
HUNG_SECONDS = 1.0


@asynccontextmanager
async def summarizing_service(
    fast_settings: Settings, openai_stub: OpenAIStub, timeout_seconds: float
) -> AsyncIterator[MemoryService]:
    llm = LLMSettings(
        provider="openai",
        model="stub-chat",
        base_url=openai_stub.base_url,
        api_key=SecretStr("sk-test-not-a-secret"),
        timeout_seconds=timeout_seconds,
        max_retries=0,
    )
    # Fact extraction would share the scripted stub; these tests are about summaries only.
    learning = fast_settings.learning.model_copy(
        update={"extract_every_turns": 0, "extract_on_summary": False}
    )
    async with open_service(fast_settings.model_copy(update={"llm": llm, "learning": learning})) as service:
        yield service


@pytest.fixture
async def llm_service(fast_settings: Settings, openai_stub: OpenAIStub) -> AsyncIterator[MemoryService]:
    async with summarizing_service(fast_settings, openai_stub, ANSWER_SECONDS) as service:
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
    fast_settings: Settings, openai_stub: OpenAIStub, mode: str
) -> None:
    seconds = HUNG_SECONDS if mode == "timeout" else ANSWER_SECONDS
    async with summarizing_service(fast_settings, openai_stub, seconds) as llm_service:
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


async def test_a_turn_larger_than_the_window_reaches_the_llm_as_a_digest_and_is_noted(
    llm_service: MemoryService, openai_stub: OpenAIStub
) -> None:
    openai_stub.script("The user pasted the night's job log; job 4242 failed on host-7.")
    lines = [f"02:{i % 60:02d} INFO worker-{i % 13} job {i} ok in {i % 997} ms" for i in range(5000)]
    lines[2500] = "02:41 ERROR worker-3 job 4242 failed: disk /dev/sdb1 on host-7 is full"
    pasted = "Job log of the night\n" + "\n".join(lines)
    out = await llm_service.add_turn(USER, "t", "user", pasted, None, 1000)
    assert out.summarized
    sent = str(openai_stub.chat_requests()[-1]["messages"])
    assert f"(a text of {len(pasted):,} characters; its key lines:)" in sent
    assert "/dev/sdb1" in sent and len(sent) < len(pasted) // 20, "the prompt holds a digest, not the paste"
    wm = await llm_service.get_working_memory(USER, "t")
    assert wm.summary.startswith("The user pasted the night's job log; job 4242 failed on host-7.")
    assert f"memory://memories/{out.turn.id}" in wm.summary
