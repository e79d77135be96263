"""A project's brief at session start: the facts first (decisions, limits, open tasks, people, numbers),
the newest session first, files and failures, and never over its budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.service.briefing import SessionTurns, brief

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    return TokenCounter.load(cache_dir=tmp_path_factory.mktemp("tiktoken"))  # the shipped encoding, offline


def session(name: str, days_ago: int, *turns: tuple[str, str], summary: str | None = None) -> SessionTurns:
    at = NOW - timedelta(days=days_ago)
    return SessionTurns(f"proj-1a2b3c4d.{name}", at, at, summary, tuple((r, c, at) for r, c in turns))


PLANNING = session(
    "planning",
    2,
    ("user", "Let's plan the billing migration for this sprint."),
    ("assistant", "Sure, what do we know so far?"),
    ("user", "Dana owns the migration, and we decided on PostgreSQL 16 behind pgbouncer."),
    ("user", "The pool must stay at 200 connections at most."),
    ("tool", "[tool] wrote /repo/db/pool.py"),
    ("tool", "[tool] wrote /repo/db/pool.py"),
    ("tool", "[tool] ran `pytest -q tests/test_pool.py` → exit 1: FAILED test_limit"),
    ("assistant", "The pool is written; we still need to migrate the invoices table before March 3."),
)
OLDER = session(
    "older", 9, ("user", "Look at caching options for the API, please."), summary="Redis 7 was chosen."
)


def test_the_facts_that_left_the_conversation_are_kept(counter: TokenCounter) -> None:
    text = brief([PLANNING, OLDER], 400, counter.count, NOW)
    for fact in ("Dana", "PostgreSQL 16", "200 connections", "March 3", "invoices", "pytest -q"):
        assert fact in text, fact
    assert text.count("/repo/db/pool.py") == 1
    assert text.index("planning"[:8]) < text.index("older")  # newest session first


@pytest.mark.parametrize("budget", [20, 40, 80, 150, 300, 700])
def test_the_budget_always_holds(budget: int, counter: TokenCounter) -> None:
    text = brief([PLANNING, OLDER, PLANNING], budget, counter.count, NOW)
    assert counter.count(text) <= budget


def test_nothing_to_say_is_empty(counter: TokenCounter) -> None:
    assert brief([], 500, counter.count, NOW) == ""
    assert brief([PLANNING], 3, counter.count, NOW) == ""


def test_a_session_with_only_a_compaction_summary_is_briefed_from_it(counter: TokenCounter) -> None:
    compacted = session(
        "compacted", 1, ("system", "[compaction summary] The team chose Kafka over RabbitMQ for events.")
    )
    compacted = SessionTurns(
        compacted.thread_id,
        compacted.started_at,
        compacted.ended_at,
        "The team chose Kafka over RabbitMQ for events.",
        compacted.turns,
    )
    assert "Kafka" in brief([compacted], 200, counter.count, NOW)


def test_a_compaction_summary_in_the_turns_stands_for_what_it_replaced(counter: TokenCounter) -> None:
    compacted = session(
        "compact2",
        1,
        (
            "system",
            "[compaction summary] The team chose Kafka over RabbitMQ for events. Retention is 7 days.",
        ),
        ("user", "Now wire the consumer into the billing service."),
        ("assistant", "Done: the consumer is wired and its tests pass."),
    )
    text = brief([compacted], 300, counter.count, NOW)
    assert "chose Kafka over RabbitMQ" in text and "Retention is 7 days." in text
    assert text.count("chose Kafka") == 1  # read as facts, and as the summary it is not said again


def test_a_prompt_left_without_a_reply_is_left_open(counter: TokenCounter) -> None:
    cut_off = session(
        "cutoff",
        0,
        ("user", "Add a retry to the webhook sender."),
        ("assistant", "Added, with backoff."),
        ("user", "Now make the retry count configurable per endpoint. Keep the default at three."),
    )
    assert 'left open: "Now make the retry count configurable per endpoint."' in brief(
        [cut_off], 200, counter.count, NOW
    )
    answered = session("answered", 0, ("user", "Add a retry to the webhook sender."), ("assistant", "Added."))
    assert "left open" not in brief([answered], 200, counter.count, NOW)
    alone = session("alone", 0, ("user", "Add a retry to the webhook sender."))
    assert 'asked "Add a retry to the webhook sender." (left open' in brief([alone], 200, counter.count, NOW)


def test_observations_as_system_turns_are_read_and_paths_deduplicated(counter: TokenCounter) -> None:
    worked = session(
        "worked",
        1,
        ("user", "Fix the flaky export test."),
        ("system", "[tool] edited src/export.py"),
        ("system", "[tool] edited src/export.py"),
        ("system", "[tool] ran `pytest -q tests/test_export.py` → exit 1: AssertionError: 3 != 4"),
    )
    text = brief([worked], 200, counter.count, NOW)
    assert text.count("src/export.py") == 1
    assert "`pytest -q tests/test_export.py` (exit 1)" in text
