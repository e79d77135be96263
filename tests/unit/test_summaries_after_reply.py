"""Summaries that finish after add_turn's reply (service/summaries.py): the turn is acknowledged at once,
reads wait for the summary still running, a late failure is logged and retried, shutdown lets a running
summary finish."""

from __future__ import annotations

import logging

import anyio
import pytest

from mcp_memory.config import Settings, SummarySettings
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.summaries import SummaryRunner
from tests.helpers import HANG_SECONDS

pytestmark = pytest.mark.anyio

USER = "tester"
KEY = (USER, "t")


def after_the_reply(settings: Settings) -> Settings:
    """Every summary finishes after the reply: add_turn never waits for one."""
    return settings.model_copy(update={"summary": SummarySettings(inline_seconds=0)})


async def test_a_turn_past_the_threshold_is_acknowledged_and_reads_see_its_summary(
    fast_settings: Settings,
) -> None:
    async with open_service(after_the_reply(fast_settings)) as service:
        results = []
        for i in range(30):
            text = f"Turn {i}: we decided to move the billing job to Postgres 16 by March {i % 28 + 1}."
            results.append(await service.add_turn(USER, "t", "user", text, None, 600))
        started = [r for r in results if r.summarized]
        assert started, "the thread never passed its threshold"
        # The reply went before the summary: it reports the thread as it was, past the threshold.
        assert any(r.working_memory.token_count > r.working_memory.threshold_tokens for r in started)
        memory = await service.get_working_memory(USER, "t")  # waits for the summary still running
        assert memory.summary
        assert memory.token_count <= memory.threshold_tokens
        for r in results:  # nothing acknowledged is lost
            assert (await service.get_memory(USER, r.turn.id)).content == r.turn.content


async def test_summarize_thread_waits_for_the_summary_running_rather_than_refusing(
    fast_settings: Settings,
) -> None:
    async with open_service(after_the_reply(fast_settings)) as service:
        await _until_a_summary_starts(service)
        result = await service.summarize_thread(USER, "t", keep_recent=1)  # not "being summarized"
        assert result.kept_count == 1


async def test_forgetting_a_thread_waits_so_no_summary_is_written_after_it(fast_settings: Settings) -> None:
    async with open_service(after_the_reply(fast_settings)) as service:
        await _until_a_summary_starts(service)
        await service.forget(USER, thread_id="t")
        assert not await service.stores.working.exists(USER, "t")
        assert await service.list_threads(USER) == []


async def test_the_runner_answers_within_the_wait_or_lets_the_work_go_on() -> None:
    release = anyio.Event()

    async def slow() -> str:
        await release.wait()
        return "written"

    async with SummaryRunner.running(grace_seconds=5) as runner:
        quick = await runner.start(("u", "a"), lambda: _value("done"), wait_seconds=5)
        assert quick.done and quick.result == "done"
        late = await runner.start(KEY, slow, wait_seconds=0.01)
        assert not late.done and runner.pending() == 1
        again = await runner.start(KEY, slow, wait_seconds=5)
        assert again.already_running and again.result is None  # one summary a thread at a time
        release.set()
        await runner.settled(KEY)
        assert runner.pending() == 0


async def test_an_error_within_the_wait_is_raised_and_one_after_it_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = anyio.Event()

    async def fails_now() -> None:
        raise RuntimeError("the model is down")

    async def fails_later() -> None:
        await release.wait()
        raise RuntimeError("the model went down")

    async with SummaryRunner.running(grace_seconds=5) as runner:
        with pytest.raises(RuntimeError, match="the model is down"):
            await runner.start(KEY, fails_now, wait_seconds=5)
        with caplog.at_level(logging.ERROR, logger="mcp_memory.service.summaries"):
            assert not (await runner.start(KEY, fails_later, wait_seconds=0.01)).done
            release.set()
            await runner.settled(KEY)
    assert "failed after the reply" in caplog.text and "the model went down" in caplog.text


async def test_shutdown_lets_a_running_summary_finish_within_the_grace_period() -> None:
    finished = []

    async def brief() -> None:
        await anyio.sleep(0.2)
        finished.append(True)

    async def endless() -> None:
        await anyio.sleep_forever()

    async with SummaryRunner.running(grace_seconds=5) as runner:
        assert not (await runner.start(KEY, brief, wait_seconds=0)).done
    assert finished == [True]
    with anyio.fail_after(HANG_SECONDS):  # past the grace period the rest is cut short, not waited for
        async with SummaryRunner.running(grace_seconds=0.1) as runner:
            await runner.start(KEY, endless, wait_seconds=0)


async def _until_a_summary_starts(service: MemoryService) -> None:
    """Turns into thread "t" until one starts a summary (which then runs after the reply)."""
    for i in range(30):
        if (
            await service.add_turn(USER, "t", "user", f"Turn {i} about the deploy plan. " * 3, None, 600)
        ).summarized:
            return
    raise AssertionError("the thread never passed its threshold")


async def _value(value: str) -> str:
    return value


async def test_an_error_after_the_caller_was_cancelled_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    release = anyio.Event()

    async def fails_later() -> None:
        await release.wait()
        raise RuntimeError("the model went down")

    async with SummaryRunner.running(grace_seconds=5) as runner:
        with caplog.at_level(logging.ERROR, logger="mcp_memory.service.summaries"):
            with anyio.move_on_after(0.01):  # the request is cancelled while it waits
                await runner.start(KEY, fails_later, wait_seconds=5)
            release.set()
            await runner.settled(KEY)
    assert "failed after the reply" in caplog.text and "the model went down" in caplog.text
