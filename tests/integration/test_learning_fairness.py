"""Fair background learning on the real service: one user's hanging or failing model delays only that
user, a full queue defers work instead of dropping it, and the LLM budget makes extraction wait (shown
in memory://learning/status) rather than lose turns. The model is a ChatModel in this file whose
answers are gated on events; nothing here sleeps or asserts on time (the budget's clock is injected)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_memory.config import LearningSettings, SecuritySettings, Settings
from mcp_memory.errors import BackendUnavailableError, LimitExceededError
from mcp_memory.learning import Learning
from mcp_memory.mcp.server import build_server
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from tests.fakes.openai_stub import OpenAIStub
from tests.helpers import HANG_SECONDS
from tests.integration.test_learning_openai import llm_settings

pytestmark = pytest.mark.anyio
HOUR = 3600.0


class ScriptedModel:
    """Answers each extraction with one fact: the first user turn it was shown, verbatim. A prompt
    mentioning `hang_on` waits for `release`; one mentioning `fail_on` fails like an unreachable LLM."""

    def __init__(self, *, hang_on: str | None = None, fail_on: str | None = None) -> None:
        self.hang_on = hang_on
        self.fail_on = fail_on
        self.hanging = anyio.Event()
        self.release = anyio.Event()
        self.prompts: list[str] = []

    @property
    def name(self) -> str:
        return "scripted"

    async def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        self.prompts.append(user)
        if self.hang_on is not None and self.hang_on in user:
            self.hanging.set()
            await self.release.wait()
        if self.fail_on is not None and self.fail_on in user:
            raise BackendUnavailableError("the language model is unreachable (connection refused)")
        if not json_mode:
            return "A profile."
        said = re.search(r"\[T1\] \S+ \S+ user: (.*)", user)
        text = said.group(1) if said else "nothing"
        return facts_answer(text)


def facts_answer(text: str) -> str:
    return json.dumps({"facts": [{"text": text, "type": "semantic", "confidence": 0.9, "source": ["T1"]}]})


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def learning_settings(settings: Settings, *, calls_per_hour: int | None = None, **options: Any) -> Settings:
    values = {"extract_every_turns": 2, "reconcile_every_extractions": 0, "profile": False, **options}
    return settings.model_copy(
        update={
            "learning": LearningSettings(**values),
            "security": SecuritySettings(llm_calls_per_hour=calls_per_hour),
        }
    )


def learning_of(service: MemoryService) -> Learning:
    assert isinstance(service.learning, Learning)
    return service.learning


async def talk(service: MemoryService, user: str, thread: str, *lines: str) -> None:
    for i, line in enumerate(lines):
        await service.add_turn(user, thread, "user" if i % 2 == 0 else "assistant", line)


async def facts_of(service: MemoryService, user: str) -> list[str]:
    found = await learning_of(service).long_term.list_active(user, types=("fact",), limit=100)
    return sorted(f.content for f in found)


async def test_a_hanging_model_for_one_user_does_not_hold_up_another(fast_settings: Settings) -> None:
    async with open_service(learning_settings(fast_settings, shutdown_grace_seconds=5)) as service:
        learning = learning_of(service)
        model = learning.chat = ScriptedModel(hang_on="Ann's secret")
        await talk(service, "ann", "t", "Ann's secret is a hidden garden", "ok")
        with anyio.fail_after(HANG_SECONDS):
            await model.hanging.wait()  # ann's extraction is in the model, which does not answer
            await talk(service, "bob", "t", "Bob drinks green tea", "noted")
            await learning.worker.drain("bob")
        assert await facts_of(service, "bob") == ["Bob drinks green tea"]
        assert await facts_of(service, "ann") == []
        model.release.set()
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        assert await facts_of(service, "ann") == ["Ann's secret is a hidden garden"]


async def test_a_failing_model_for_one_user_does_not_stop_another(fast_settings: Settings) -> None:
    async with open_service(learning_settings(fast_settings)) as service:
        learning = learning_of(service)
        learning.chat = ScriptedModel(fail_on="Ann")
        await talk(service, "ann", "t", "Ann flies to Lisbon", "ok")
        await talk(service, "bob", "t", "Bob flies to Oslo", "ok")
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        assert await facts_of(service, "bob") == ["Bob flies to Oslo"]
        assert await facts_of(service, "ann") == []
        status = await learning.status_of("ann")
        [waiting] = status.waiting
        assert waiting.thread_id == "t" and waiting.reason.startswith("model failed: ")
        assert "unreachable" in waiting.reason
        assert (await learning.status_of("bob")).last_extraction is not None


async def test_a_full_queue_defers_and_the_turns_are_extracted_later(
    fast_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    settings = learning_settings(fast_settings, queue_size=1, concurrency=1)
    async with open_service(settings) as service:
        learning = learning_of(service)
        model = learning.chat = ScriptedModel(hang_on="Ann")
        await talk(service, "ann", "t", "Ann keeps bees", "ok")
        with anyio.fail_after(HANG_SECONDS):
            await model.hanging.wait()  # the only slot is held; bob's jobs wait in the queue
        lines = [f"Bob's plan number {i}" for i in range(6)]
        with caplog.at_level(logging.INFO, logger="mcp_memory.learning.worker"):
            await talk(service, "bob", "t", *lines)
        assert learning.worker.waiting("bob") == 2  # the queued first turn and one deferred extraction
        assert "deferred" in caplog.text and "refused" not in caplog.text
        model.release.set()
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        asked = " ".join(p for p in model.prompts if "Bob" in p)
        assert all(line in asked for line in lines[::2])  # every user turn reached the model
        assert await facts_of(service, "bob") == ["Bob's plan number 0"]


async def test_over_the_budget_extraction_waits_and_runs_after_the_window(fast_settings: Settings) -> None:
    server = build_server(learning_settings(fast_settings, calls_per_hour=1))
    async with Client(server) as client:
        learning = learning_of(server.host.service)
        clock = learning.budget.clock = Clock(1_000 * HOUR + 60)
        model = learning.chat = ScriptedModel()

        async def add(thread: str, role: str, content: str) -> None:
            arguments = {"thread_id": thread, "role": role, "content": content}
            assert not (await client.call_tool("add_turn", arguments)).is_error

        async def status() -> dict[str, Any]:
            contents = (await client.read_resource("memory://learning/status")).contents
            return json.loads(contents[0].text)  # type: ignore[union-attr]

        await add("a", "user", "I grow tomatoes")
        await add("a", "assistant", "nice")  # the hour's one call
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        await add("a", "user", "I also keep chickens")
        await add("a", "assistant", "great")  # refused: the turns wait
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        assert len(model.prompts) == 1
        seen = await status()
        assert seen["model"] == "llm" and seen["model_name"] == "scripted"
        assert seen["budget"]["limit"] == 1 and seen["budget"]["used"] == 1
        assert seen["budget"]["resets_at"] == "1970-02-11T17:00:00Z"  # hour 1001: the next clock hour
        [waiting] = seen["waiting"]
        assert waiting["thread_id"] == "a" and waiting["reason"].startswith("LLM budget used up until ")
        assert seen["last_extraction"]["thread_id"] == "a"

        clock.now += HOUR  # a new window; the user's next turn retries what waited
        await add("b", "user", "unrelated small talk")
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        assert "I also keep chickens" in model.prompts[-1]
        seen = await status()
        assert seen["waiting"] == [] and seen["budget"]["used"] == 1


async def test_summaries_and_background_calls_share_one_budget_across_replicas(
    fast_settings: Settings, openai_stub: OpenAIStub
) -> None:
    settings = llm_settings(fast_settings, openai_stub, extract_on_summary=False, profile=False)
    settings = settings.model_copy(update={"security": SecuritySettings(llm_calls_per_hour=2)})
    openai_stub.reply_with(
        lambda body: facts_answer("Ann reads poetry") if body.get("response_format") else "Ann reads poetry."
    )
    # Two replicas on one data file: one counter store, so one budget.
    async with open_service(settings) as one, open_service(settings) as two:
        await talk(one, "ann", "t", "Ann reads poetry", "ok")
        with anyio.fail_after(HANG_SECONDS):
            await learning_of(one).worker.drain()  # a background extraction on replica one: call 1
        await two.summarize_thread("ann", "t", keep_recent=1)  # a summary on replica two: call 2
        with pytest.raises(LimitExceededError, match="LLM quota reached"):
            await one.summarize_thread("ann", "t", keep_recent=0)
        await talk(one, "ann", "u", "Ann writes sonnets", "ok")
        with anyio.fail_after(HANG_SECONDS):
            await learning_of(one).worker.drain()
        assert len(openai_stub.chat_requests()) == 2
        [waiting] = (await learning_of(one).status_of("ann")).waiting
        assert waiting.thread_id == "u" and waiting.reason.startswith("LLM budget used up until ")
        usage = await learning_of(two).budget.view("ann")
        assert (usage.limit, usage.used, usage.background_used) == (2, 2, 1)
