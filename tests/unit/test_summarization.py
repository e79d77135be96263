"""Progressive summarization on the embedded default: thresholds, what is kept, what is never lost."""

from __future__ import annotations

import pytest

from mcp_memory.cli.demo import CONVERSATION
from mcp_memory.models import summary_id
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.memory_service import MemoryService

pytestmark = pytest.mark.anyio

USER = "tester"
SENTENCES = [
    "My name is Priya and I work at Contoso as a data engineer.",
    "We decided to migrate the warehouse to Postgres 16 by March 3.",
    "The budget for the migration is $42,000 including consulting.",
    "Ravi will own the cut-over plan and the rollback runbook.",
    "I prefer short answers with code samples in Python.",
    "Open question: do we keep the nightly batch or switch to streaming?",
    "The staging cluster has 3 nodes with 64 GB of RAM each.",
    "Please remember that Friday deploys are forbidden.",
]


async def _fill(service: MemoryService, thread: str, turns: int, window: int = 600) -> list[dict]:
    results = []
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        out = await service.add_turn(
            USER, thread, role, SENTENCES[i % len(SENTENCES)] + f" (turn {i})", None, window
        )
        results.append(out.model_dump())
    return results


async def test_crossing_the_threshold_summarizes_and_drops_below_it(service: MemoryService) -> None:
    results = await _fill(service, "t", 30)
    flags = [r["summarized"] for r in results]
    assert any(flags)
    first = flags.index(True)
    # Not before the threshold was passed: the turn before the first summarization was under it.
    before = results[first - 1]["working_memory"]
    assert before["token_count"] <= before["threshold_tokens"]
    for r in results:
        usage = r["working_memory"]
        assert usage["token_count"] <= usage["threshold_tokens"], (
            "every acknowledged turn leaves the thread under threshold"
        )
    wm = await service.get_working_memory(USER, "t")
    assert wm.summary and wm.token_count <= wm.threshold_tokens
    assert wm.messages[-1].content == results[-1]["turn"]["content"], "the newest message is kept verbatim"


async def test_no_message_is_lost_every_turn_stays_searchable(service: MemoryService) -> None:
    results = await _fill(service, "t", 24)
    assert any(r["summarized"] for r in results)
    for r in results:
        memory = await service.get_memory(USER, r["turn"]["id"])
        assert memory.content == r["turn"]["content"] and memory.type == "turn"
    found = await service.search(
        SearchQuery.of(USER, '"turn 0)"', types=["turn"], mode="text", limit=5, settings=service.settings)
    )
    assert [h.id for h in found.results] == [results[0]["turn"]["id"]]


async def test_summary_has_a_stable_id_and_is_updated_not_duplicated(service: MemoryService) -> None:
    results = await _fill(service, "t", 40)
    assert sum(r["summarized"] for r in results) >= 2, "the thread was summarized more than once"
    summaries = await service.search(
        SearchQuery.of(USER, "migration budget", types=["summary"], limit=10, settings=service.settings)
    )
    assert [h.id for h in summaries.results] == [summary_id(USER, "t")]
    stored = await service.get_memory(USER, summary_id(USER, "t"))
    wm = await service.get_working_memory(USER, "t")
    assert stored.content == wm.summary and stored.thread_id == "t"
    assert stored.metadata["summary_version"] >= 2


async def test_summary_keeps_key_facts_offline(service: MemoryService) -> None:
    await _fill(service, "t", 12, window=4000)
    out = await service.summarize_thread(USER, "t", keep_recent=2)
    assert out.summarized_count == 10 and out.kept_count == 2
    for fact in ("Priya", "$42,000", "Postgres 16"):
        assert fact in out.summary


async def test_working_memory_is_rebuilt_from_long_term_when_lost(service: MemoryService) -> None:
    results = await _fill(service, "t", 24)
    before = await service.get_working_memory(USER, "t")
    # Working memory lost (expired, flushed): long term still has every turn and the summary.
    from mcp_memory.models import Scope

    await service.stores.working.forget(Scope(user_id=USER, thread_id="t"))
    rebuilt = await service.get_working_memory(USER, "t")
    assert rebuilt.summary == before.summary
    assert [m.id for m in rebuilt.messages] == [m.id for m in before.messages]
    assert rebuilt.messages[-1].id == results[-1]["turn"]["id"]


async def test_a_turn_after_expiry_brings_the_history_back(service: MemoryService) -> None:
    from mcp_memory.models import Scope

    await _fill(service, "t", 4, window=4000)
    await service.stores.working.forget(Scope(user_id=USER, thread_id="t"))
    out = await service.add_turn(USER, "t", "user", "and one more thing", None, None)
    assert out.working_memory.message_count == 5
    wm = await service.get_working_memory(USER, "t")
    assert [m.content for m in wm.messages][-1] == "and one more thing" and len(wm.messages) == 5


async def test_the_demo_summary_keeps_the_trips_facts(service: MemoryService) -> None:
    # The demo's turns as `mcp-memory demo` sends them: a 256-token window, so the summary is written
    # once, for the first nine messages, on the smallest budget a thread can have.
    summarized = []
    for role, text in CONVERSATION:
        out = await service.add_turn(USER, "demo", role, text, None, 256)
        summarized.append(out.summarized)
    assert summarized.count(True) == 1, summarized
    summary = (await service.get_working_memory(USER, "demo")).summary
    for fact in ("Maui", "Kauai", "$10,000", "Vegetarian", "Vacation rentals", "Maya"):
        assert fact in summary, (fact, summary)
    assert "Seattle" in summary or "March 14" in summary, summary
    # Nothing the writer adds would match "what did the user say?" on its own.
    assert "user" not in summary.casefold() and "said" not in summary.casefold(), summary
