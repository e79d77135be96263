"""What the hooks capture is the same memory the MCP tools see, stored exactly once, on each production
combination of stores: the embedded default, Redis working memory with SQLite, and long term on the local
Cosmos-protocol server (which has no hybrid search: a prompt's recall runs on the first two)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_memory.audit import Actor, acting
from mcp_memory.config import LongTermSettings, Settings, SpaceSettings
from mcp_memory.hooks.projects import project_of
from mcp_memory.mcp.server import build_server
from mcp_memory.models import space_key
from mcp_memory.service.assembly import open_service
from mcp_memory.service.capture import HookCapture
from mcp_memory.service.hook_recall import HookRecall
from mcp_memory.service.memory_service import MemoryService
from tests.contract.conftest_long_term import local_cosmos_settings
from tests.services.cosmos_server import CosmosServer
from tests.services.mcp_client import call
from tests.unit.test_hook_transcripts import Transcript

pytestmark = pytest.mark.anyio


def backend_settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    update: dict[str, Any] = {}
    if request.param == "redis+sqlite":
        update["working"] = request.getfixturevalue("redis_working_settings")
    if request.param == "cosmos":
        server: CosmosServer = request.getfixturevalue("cosmos_server")
        update["long_term"] = LongTermSettings(backend="cosmos", cosmos=local_cosmos_settings(server))
    return settings.model_copy(update=update)


@pytest.fixture(params=["sqlite", "redis+sqlite", "cosmos"])
async def service(request: pytest.FixtureRequest, fast_settings: Settings) -> AsyncIterator[MemoryService]:
    async with open_service(backend_settings(request, fast_settings)) as opened:
        yield opened


@pytest.fixture(params=["sqlite", "redis+sqlite"])
async def searchable(request: pytest.FixtureRequest, fast_settings: Settings) -> AsyncIterator[Settings]:
    yield backend_settings(request, fast_settings)


def spooled(transcript: Path, cwd: Path, kind: str = "reply") -> dict[str, Any]:
    project = project_of(cwd)
    return {
        "id": "e1",
        "client": "claude-code",
        "kind": kind,
        "session_id": "s1",
        "cwd": str(cwd),
        "transcript_path": str(transcript),
        "project": {"id": project.id, "key": project.key},
    }


def conversation(path: Path) -> Transcript:
    t = Transcript(path)
    t.user("For billing we decided on PostgreSQL 16 behind pgbouncer; Dana owns the migration.")
    t.tool("toolu_1", "Write", {"file_path": "/repo/db.py", "content": "BODY " * 50}, "File created")
    t.say("Noted: PostgreSQL 16, pgbouncer, Dana.")
    return t


async def test_stored_once_whatever_the_repetition_and_seen_by_the_tools(
    service: MemoryService, tmp_path: Path
) -> None:
    t = conversation(tmp_path / "s1.jsonl")
    capture = HookCapture(service, "tester")
    entry = spooled(tmp_path / "s1.jsonl", tmp_path)
    with acting(Actor("tester", client="hooks")):
        assert await capture.store(entry) == 3
        assert await capture.store(entry) == 0  # Stop again
        assert await HookCapture(service, "tester").store(entry) == 0  # another server, nothing cached
        t.user("And the invoices table keeps 7 years of data.")
        t.say("Seven years of invoices, noted.")
        assert await capture.store(entry) == 2
    thread = project_of(tmp_path).thread_id("s1")
    memory = await service.get_working_memory("tester", thread)
    assert [m.role for m in memory.messages] == ["user", "tool", "assistant", "user", "assistant"]
    assert memory.messages[1].content == "[tool] wrote /repo/db.py"
    assert memory.messages[0].metadata["source"] == "hook:claude-code"
    assert thread in {t.thread_id for t in await service.list_threads("tester")}
    recall = HookRecall(service, "tester")
    # Told at a session's start only by a client that injects nowhere else (Cursor, VS Code), or on a resume.
    assert await recall.session_start(project_of(tmp_path), "s2", 800, 10_000) == ""
    brief = await recall.session_start(project_of(tmp_path), "s2", 800, 10_000, prompt_follows=False)
    assert "PostgreSQL 16" in brief
    resumed = await recall.session_start(project_of(tmp_path), "s3", 800, 10_000, source="resume")
    assert "PostgreSQL 16" in resumed


async def test_recall_for_a_prompt_reaches_this_project_only(searchable: Settings, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    conversation(tmp_path / "s1.jsonl")
    async with open_service(searchable) as service:
        with acting(Actor("tester", client="hooks")):
            await HookCapture(service, "tester").store(spooled(tmp_path / "s1.jsonl", tmp_path / "a"))
        recall = HookRecall(service, "tester")
        question = "which database did we choose for billing?"
        here = await recall.prompt(project_of(tmp_path / "a"), "s2", question, 800, 10_000)
        there = await recall.prompt(project_of(tmp_path / "b"), "s2", question, 800, 10_000)
        assert "PostgreSQL 16" in here and "<memory-recall" in here
        assert service.tokens.count(here) <= 800
        tight = await recall.prompt(project_of(tmp_path / "a"), "s2", question, 60, 10_000)
        assert service.tokens.count(tight) <= 60  # the budget holds, whatever the lines around the text
        brief = await recall.session_start(project_of(tmp_path / "a"), "s2", 60, 10_000, source="resume")
        assert brief == "" or service.tokens.count(brief) <= 60
        assert there == ""
        assert await recall.prompt(project_of(tmp_path / "a"), "s2", "thanks!", 800, 10_000) == ""
    # The MCP tools find what the hooks stored.
    async with Client(build_server(searchable), raise_exceptions=False) as client:
        found = await call(client, "search_memory", query="pgbouncer billing database")
        assert any("PostgreSQL 16" in hit["content"] for hit in found["results"])


async def test_a_first_prompt_gets_its_memories_then_the_brief_in_one_budget(
    searchable: Settings, tmp_path: Path
) -> None:
    t = conversation(tmp_path / "s1.jsonl")
    t.user("Later we moved the invoice exports to a nightly job at 02:00 UTC.")
    t.say("Invoice exports now run nightly at 02:00 UTC.")
    project = project_of(tmp_path)
    async with open_service(searchable) as service:
        with acting(Actor("tester", client="hooks")):
            await HookCapture(service, "tester").store(spooled(tmp_path / "s1.jsonl", tmp_path))
        recall = HookRecall(service, "tester")
        assert await recall.session_start(project, "s2", 1000, 10_000, source="startup") == ""
        assert await recall.prompt(project, "s2", "hi", 1000, 10_000) == ""  # small talk: nothing yet
        first = await recall.prompt(project, "s2", "when do the invoice exports run?", 1000, 10_000)
        assert service.tokens.count(first) <= 1000
        relevant = first.index("relevant to the prompt")
        assert relevant < first.index("02:00 UTC") < first.index("What this project was doing")
        # Whole sentences, with when, which session and the short id that opens the memory.
        assert "Later we moved the invoice exports to a nightly job at 02:00 UTC." in first
        assert "(session s1)" in first and "turn_" in first and "…" not in first
        short = first[first.index("[turn_") + 1 : first.index("]", first.index("[turn_"))]
        assert len(short) == len("turn_") + 12
        assert "02:00 UTC" in (await service.get_memory("tester", short)).content
        again = await recall.prompt(project, "s2", "and who owns the billing migration?", 1000, 10_000)
        assert "What this project was doing" not in again and "Dana" in again
        # A question over time: its exchanges in time order, and `timeline` named for more.
        story = await recall.prompt(
            project, "s3", "summarize how billing and the invoice exports went", 1000, 10_000
        )
        assert "in time order" in story and "timeline" in story
        assert story.index("PostgreSQL 16") < story.index("nightly")


async def test_a_project_pointed_at_a_space_is_captured_and_recalled_there(
    fast_settings: Settings, tmp_path: Path
) -> None:
    conversation(tmp_path / "s1.jsonl")
    project = project_of(tmp_path)
    security = fast_settings.security.model_copy(
        update={"spaces": [SpaceSettings(name="team", members={"tester": "writer", "ann": "reader"})]}
    )
    hooks = fast_settings.hooks.model_copy(update={"spaces": {project.id: "team"}})
    settings = fast_settings.model_copy(update={"security": security, "hooks": hooks})
    async with open_service(settings) as service:
        with acting(Actor("tester", client="hooks")):
            assert await HookCapture(service, "tester").store(spooled(tmp_path / "s1.jsonl", tmp_path)) == 3
        thread = project.thread_id("s1")
        assert thread not in {t.thread_id for t in await service.list_threads("tester")}
        assert thread in {t.thread_id for t in await service.list_threads(space_key("team"))}
        # A teammate (a reader) starting a session of the project is told what it was doing.
        first = await HookRecall(service, "ann").prompt(
            project, "s9", "which database is billing on?", 800, 10_000
        )
        assert "PostgreSQL 16" in first and "What this project was doing" in first
        # A reader's and a non-member's sessions stay in their own memory; the space is unchanged.
        in_space = await service.stores.long_term.recent(space_key("team"), thread, limit=50)
        for who in ("ann", "mallory"):
            with acting(Actor(who, client="hooks")):
                assert await HookCapture(service, who).store(spooled(tmp_path / "s1.jsonl", tmp_path)) == 3
            assert thread in {t.thread_id for t in await service.list_threads(who)}
        assert await service.stores.long_term.recent(space_key("team"), thread, limit=50) == in_space
        # A non-member recalls nothing of the space: only what is in their own memory.
        told = await HookRecall(service, "nora").prompt(
            project, "s9", "which database is billing on?", 800, 10_000
        )
        assert told == ""


async def test_a_reply_not_yet_in_the_transcript_comes_from_the_stop_event_once(
    service: MemoryService, tmp_path: Path
) -> None:
    t = Transcript(tmp_path / "s1.jsonl")
    t.user("What port does the billing service listen on?")
    entry = spooled(tmp_path / "s1.jsonl", tmp_path) | {"reply": "It listens on 8443, behind the proxy."}
    capture = HookCapture(service, "tester")
    with acting(Actor("tester", client="hooks")):
        assert await capture.store(entry) == 2  # the prompt, and the reply the Stop event carried
        t.say("It listens on 8443, behind the proxy.")  # the transcript catches up
        assert await HookCapture(service, "tester").store(entry) == 0
    memory = await service.get_working_memory("tester", project_of(tmp_path).thread_id("s1"))
    assert [m.content for m in memory.messages] == [
        "What port does the billing service listen on?",
        "It listens on 8443, behind the proxy.",
    ]
