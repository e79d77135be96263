"""A Stop event and the transcript it names disagree when Claude Code runs the hook before it has written
the turn's last entries, or when the server stores the event after the transcript has moved on: each reply
is stored once all the same, under its own exchange, with the transcript's time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.audit import Actor, acting
from mcp_memory.config import Settings
from mcp_memory.hooks.projects import project_of
from mcp_memory.service.assembly import open_service
from mcp_memory.service.capture import HookCapture
from mcp_memory.service.memory_service import MemoryService
from tests.integration.test_capture_backends import spooled
from tests.unit.test_hook_transcripts import Transcript

pytestmark = pytest.mark.anyio


@pytest.fixture
async def service(fast_settings: Settings) -> AsyncIterator[MemoryService]:
    async with open_service(fast_settings) as opened:
        yield opened


def stop(t: Transcript, reply: str) -> dict[str, Any]:
    return spooled(t.path, t.path.parent) | {"reply": reply}


async def stored(service: MemoryService, t: Transcript) -> list[tuple[str, str, datetime]]:
    memory = await service.get_working_memory("tester", project_of(t.path.parent).thread_id("s1"))
    return [(m.role, m.content, m.created_at) for m in memory.messages]


def times(t: Transcript) -> set[datetime]:
    import json

    lines = [json.loads(line) for line in t.path.read_text().splitlines()]
    return {
        datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")) for e in lines if e.get("timestamp")
    }


async def test_a_late_stop_does_not_take_the_next_exchanges_narration_for_its_reply(
    service: MemoryService, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "s1.jsonl")
    t.user("Which port does billing use?")
    t.say("Billing listens on 8443.")
    first = stop(t, "Billing listens on 8443.")
    # Before the server stores that Stop, the next exchange has begun: a narration, then a tool call.
    t.user("Move it to 9443 then.")
    t.say("Let me find where the port is set.")
    capture = HookCapture(service, "tester")
    with acting(Actor("tester", client="hooks")):
        assert await capture.store(first) == 3  # the first exchange, and the second's prompt alone
        t.tool("toolu_1", "Edit", {"file_path": "/repo/billing.toml"}, "ok")
        t.say("Billing now listens on 9443.")
        assert await capture.store(stop(t, "Billing now listens on 9443.")) == 2
    turns = await stored(service, t)
    assert [(role, text) for role, text, _ in turns] == [
        ("user", "Which port does billing use?"),
        ("assistant", "Billing listens on 8443."),
        ("user", "Move it to 9443 then."),
        ("tool", "[tool] edited /repo/billing.toml"),
        ("assistant", "Billing now listens on 9443."),
    ]
    assert {when for _, _, when in turns} <= times(t)


async def test_a_reply_to_a_background_tasks_notification_is_an_exchange_of_its_own(
    service: MemoryService, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "s1.jsonl")
    t.user("Run the test suite in the background.")
    t.say("Started; I will report when it ends.")
    capture = HookCapture(service, "tester")
    with acting(Actor("tester", client="hooks")):
        await capture.store(stop(t, "Started; I will report when it ends."))
        t.user(
            "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
            '<summary>Background command "Run the suite" completed (exit code 1)</summary>\n</task-notification>',
            origin={"kind": "task-notification"},
        )
        t.say("The suite failed: 2 tests in test_billing.py.")
        assert await capture.store(stop(t, "The suite failed: 2 tests in test_billing.py.")) == 2
    turns = await stored(service, t)
    assert [(role, text) for role, text, _ in turns] == [
        ("user", "Run the test suite in the background."),
        ("assistant", "Started; I will report when it ends."),
        ("tool", '[background task] Background command "Run the suite" completed (exit code 1)'),
        ("assistant", "The suite failed: 2 tests in test_billing.py."),
    ]
    assert {when for _, _, when in turns} <= times(t)


async def test_a_reply_the_transcript_never_gets_is_the_stops_own_at_the_transcripts_time(
    service: MemoryService, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "s1.jsonl")
    t.user("Fix the rounding bug.")
    t.say("Let me look at invoice.py first.")  # the tool call after it is not written yet
    capture = HookCapture(service, "tester")
    with acting(Actor("tester", client="hooks")):
        assert await capture.store(stop(t, "Fixed: invoices round half-even now.")) == 2
        t.tool("toolu_1", "Edit", {"file_path": "/repo/invoice.py"}, "ok")
        t.say("Fixed: invoices round half-even now.")
        assert (
            await HookCapture(service, "tester").store(stop(t, "Fixed: invoices round half-even now.")) == 1
        )
    turns = await stored(service, t)
    assert [(role, text) for role, text, _ in turns] == [
        ("user", "Fix the rounding bug."),
        ("assistant", "Fixed: invoices round half-even now."),
        ("tool", "[tool] edited /repo/invoice.py"),
    ]
    assert {when for _, _, when in turns} <= times(t)
