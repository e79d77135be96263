"""security.max_stored_bytes on every path that stores text: a refused write changes nothing, and the
automatic writes (summaries, extraction) skip their store rather than fail the turn. Revisions count
(their content and source text): each change appends one, so rewriting a memory back and forth fills
the quota too."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_memory.config import SecuritySettings, Settings
from mcp_memory.errors import LimitExceededError
from mcp_memory.learning import Learning
from mcp_memory.mcp.server import build_server
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.usage import revision_bytes
from tests.fakes.openai_stub import OpenAIStub
from tests.helpers import HANG_SECONDS
from tests.integration.test_learning_openai import fact, facts_answer, llm_settings
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio


def limited(settings: Settings, max_stored_bytes: int | None, data_dir: Path | None = None) -> Settings:
    security = SecuritySettings(max_stored_bytes=max_stored_bytes)
    update: dict[str, object] = {"security": security}
    if data_dir is not None:
        update["data_dir"] = data_dir
    return settings.model_copy(update=update)


async def stored(service: MemoryService, user_id: str) -> int:
    """The user's counter, once background learning is done, checked against a recount of their
    memories and of each memory's revisions."""
    memories = service.stores.long_term
    recount = 0
    if isinstance(service.learning, Learning):
        with anyio.fail_after(HANG_SECONDS):
            await service.learning.worker.drain()
        for m in await memories.memories_of(user_id):
            history = await service.learning.revisions.history(user_id, m.id)
            recount += sum(revision_bytes(r.content, r.source_text) for r in history)
    counted = await memories.stored_bytes(user_id)
    assert counted == recount + sum(len(m.content.encode()) for m in await memories.memories_of(user_id))
    return counted


async def test_each_tool_that_stores_text_is_refused_past_the_quota(fast_settings: Settings) -> None:
    server = build_server(limited(fast_settings, 200))
    me = fast_settings.user_id
    async with Client(server, raise_exceptions=False) as client:
        service: MemoryService = server.host.service
        await call(client, "add_turn", thread_id="q", role="user", content="t" * 100)

        message = await call_error(client, "remember", content="The user " + "r" * 120)
        assert "storage quota reached" in message and "100 of 200 bytes" in message
        assert "security.max_stored_bytes" in message
        assert (await call(client, "search_memory", query="user", types=["fact"]))["results"] == []

        # 19 bytes, and its revision holds them twice (content and source text): 57 in all, fits.
        kept = await call(client, "remember", content="The user likes tea.")
        assert await stored(service, me) == 157
        message = await call_error(
            client, "update_memory", memory_id=kept["id"], content="The user " + "u" * 110
        )
        assert "storage quota reached" in message
        assert (await service.get_memory(me, kept["id"])).content == "The user likes tea."
        history = await call(client, "memory_history", memory_id=kept["id"])
        assert len(history["revisions"]) == 1  # the refused update left no revision

        await call(client, "update_memory", memory_id=kept["id"], content="Tea.")  # 4 + a revision of 8
        assert await stored(service, me) == 150
        await call(client, "add_turn", thread_id="q", role="user", content="f" * 40)  # 190 of 200
        first = history["revisions"][0]["id"]
        message = await call_error(client, "rollback_memory", memory_id=kept["id"], revision_id=first)
        assert "storage quota reached" in message
        assert (await service.get_memory(me, kept["id"])).content == "Tea."
        assert len((await call(client, "memory_history", memory_id=kept["id"]))["revisions"]) == 2
        assert await stored(service, me) == 190

        await call_error(client, "add_turn", thread_id="q", role="user", content="n" * 11)
        wm = await call(client, "get_working_memory", thread_id="q")
        assert len(wm["messages"]) == 2  # the refused turn is in neither store
        assert await stored(service, me) == 190


async def test_rewriting_a_memory_back_and_forth_is_refused_once_the_quota_is_full(
    fast_settings: Settings,
) -> None:
    """The memory never grows, but each update appends a revision: the history is what fills the quota."""
    texts = ["The user prefers " + "a" * 83, "The user prefers " + "b" * 83]  # 100 bytes each
    server = build_server(limited(fast_settings, 2000))
    me = fast_settings.user_id
    async with Client(server, raise_exceptions=False) as client:
        service: MemoryService = server.host.service
        fact = await call(client, "remember", content=texts[0])
        assert await stored(service, me) == 300  # the fact, and its revision: content and source text

        updates = 0
        while True:
            content = texts[(updates + 1) % 2]
            result = await client.call_tool("update_memory", {"memory_id": fact["id"], "content": content})
            if result.is_error:
                message = result.content[0].text  # type: ignore[union-attr]
                break
            updates += 1
            assert updates < 20, "the quota never refused an update"
        # Each update adds its revision's 200 bytes; the next one would have needed 300 more.
        assert updates == 8
        assert "storage quota reached" in message and "1,900 of 2,000 bytes" in message
        assert "security.max_stored_bytes" in message and "nothing was stored" in message

        assert (await service.get_memory(me, fact["id"])).content == texts[updates % 2]
        history = await call(client, "memory_history", memory_id=fact["id"])
        assert len(history["revisions"]) == 1 + updates
        assert await stored(service, me) == 1900


async def test_superseding_and_forgetting_work_over_the_quota(fast_settings: Settings) -> None:
    async with open_service(limited(fast_settings, 500)) as service:
        learning = service.learning
        assert isinstance(learning, Learning)
        old = await learning.editor.remember("ann", "The user lives in Porto.")  # 24 bytes, 72 in all
        new = await learning.editor.remember("ann", "The user lives in Lisbon now.")  # 29, 87 in all
        await service.add_turn("ann", "t", "user", "x" * 341)  # 500 of 500
        with pytest.raises(LimitExceededError, match="500 of 500 bytes"):
            await learning.editor.update("ann", new.id, "The user lives in Lisbon.")

        loser = await service.stores.long_term.get("ann", old.id)
        winner = await service.stores.long_term.get("ann", new.id)
        await learning.writer.supersede(loser, winner, "contradict")  # tidying up is never refused
        assert (await service.stores.long_term.get("ann", old.id)).superseded_by == new.id
        # Its revision (the old content, the winner's as its source) goes past the limit, counted.
        assert await stored(service, "ann") == 500 + 24 + 29

        await service.forget("ann", memory_id=old.id)  # the memory, and both its revisions
        # The profile rebuilt after a forgotten fact would need more room than is left: refused, logged.
        assert await stored(service, "ann") == 500 + 24 + 29 - 24 - (72 - 24) - (24 + 29)


async def test_an_import_is_checked_whole_before_anything_is_stored(fast_settings: Settings) -> None:
    async with open_service(limited(fast_settings, 450)) as service:
        for i in range(4):
            await service.add_turn("donor", "old", "user", f"{i}" * 100)
        export = await service.export_memories("donor")
        await service.add_turn("ann", "mine", "user", "a" * 100)

        with pytest.raises(LimitExceededError, match=r"this user stores 100 of 450 bytes .* needs 400 more"):
            await service.import_memories("ann", export.jsonl)
        assert len(await service.stores.long_term.memories_of("ann")) == 1
        assert await stored(service, "ann") == 100

        await service.import_memories("donor", export.jsonl)  # its own memories again: no growth
        assert await stored(service, "donor") == 400


async def test_an_automatic_summary_over_the_quota_is_skipped_and_the_turn_kept(
    fast_settings: Settings, tmp_path: Path
) -> None:
    turn = "Sentence about the plan, settled now. " * 6

    async def run(limit: int | None, data_dir: Path, turns: int) -> tuple[int, int, list[str]]:
        """Turns until the first automatic summary (at most `turns`): how many, the bytes, the types."""
        async with open_service(limited(fast_settings, limit, data_dir)) as service:
            n = 0
            while n < turns:
                n += 1
                if (await service.add_turn("ann", "t", "user", turn, context_window=400)).summarized:
                    break
            types = [m.type for m in await service.stores.long_term.memories_of("ann")]
            return n, await stored(service, "ann"), types

    n, _, types = await run(None, tmp_path / "free", 50)
    assert "summary" in types and n < 50  # with room, the n-th turn's summary is stored
    turn_bytes = n * len(turn.encode())
    # With exactly the turns' bytes, the same n-th turn is kept and summarized in working memory;
    # only the summary's long-term copy is skipped.
    assert await run(turn_bytes, tmp_path / "full", n) == (n, turn_bytes, ["turn"] * n)


async def test_background_extraction_over_the_quota_stores_no_fact_and_breaks_no_turn(
    fast_settings: Settings, openai_stub: OpenAIStub, tmp_path: Path
) -> None:
    openai_stub.script(facts_answer(fact("The budget for the trip is $10,000", "semantic", 0.95, ["T1"])))
    lines = ["Our trip budget is $10,000.", "Noted!"]
    settings = limited(llm_settings(fast_settings, openai_stub), sum(len(t.encode()) for t in lines))
    async with open_service(settings) as service:
        for i, line in enumerate(lines):
            await service.add_turn("ann", "trip", "user" if i == 0 else "assistant", line)
        learning = service.learning
        assert isinstance(learning, Learning)
        with anyio.fail_after(HANG_SECONDS):
            await learning.worker.drain()
        assert len(openai_stub.chat_requests()) == 1  # the extraction ran; its fact was refused
        assert await learning.long_term.list_active("ann", types=("fact",), limit=10) == []
        assert await stored(service, "ann") == settings.security.max_stored_bytes


async def test_an_imports_history_counts_and_a_refused_import_leaves_none_of_it(
    fast_settings: Settings,
) -> None:
    async with open_service(limited(fast_settings, 1000)) as service:
        learning = service.learning
        assert isinstance(learning, Learning)
        fact = await learning.editor.remember("donor", "The user prefers " + "a" * 83)  # 100 bytes
        for letter in "bcd":
            await learning.editor.update("donor", fact.id, "The user prefers " + letter * 83)
        export = await service.export_memories("donor")
        assert await stored(service, "donor") == 100 + 4 * 200  # the fact and four revisions

        # The fact alone would fit ann's 700 free bytes; with its history (800 bytes) it does not.
        await service.add_turn("ann", "mine", "user", "a" * 300)
        with pytest.raises(LimitExceededError, match="300 of 1,000 bytes"):
            await service.import_memories("ann", export.jsonl)
        assert [m.type for m in await service.stores.long_term.memories_of("ann")] == ["turn"]
        assert await learning.revisions.history("ann", fact.id) == []
        assert await stored(service, "ann") == 300

        # Room for the history but not for the memory after it: the history written first goes again.
        await service.forget("ann", everything=True)
        await service.add_turn("ann", "mine", "user", "a" * 150)
        with pytest.raises(LimitExceededError, match="this write needs 100 more"):
            await service.import_memories("ann", export.jsonl)
        assert await learning.revisions.history("ann", fact.id) == []
        assert await stored(service, "ann") == 150

        await service.forget("ann", everything=True)
        result = await service.import_memories("ann", export.jsonl)
        assert result.revisions == 4
        assert await stored(service, "ann") == 900
