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


# An assistant's reply as long technical conversations have them (BEAM): markdown under bold labels,
# a schedule, a table, code, and the courtesies around them.
REPLY = """Great question! Here's a breakdown of how to get the billing export ready before the deadline:

### Plan

#### 1. **Deadline:**
- **Deadline:** March 3
- **Deadline:** March 3
- 9:00-10:00 AM: review the export
- **Owner**: Dana
- **Least privilege**: Grant users the minimum permissions necessary to perform their tasks.

| Task | Owner | Due |
|------|-------|-----|
| Export | Dana | March 3 |

```python
# We decided to retry three times before giving up.
export(retries=3)
```

We decided to keep the export job on Celery 5.3 rather than cron.
It's important to keep your dependencies up to date.
I hope this helps, and good luck with your project!
Let me know if you need anything else."""

FRAGMENTS = ("Deadline:", "**", "9:00", "Owner", "| Task", "Grant users", "retry three times", "Plan")
GENERIC = ("Great question", "breakdown", "important to keep", "hope this helps", "good luck", "Let me know")


def lines_of(text: str) -> list[str]:
    """What each line quotes: the asked text of a session's line, the text after a '- ' line's label."""
    quoted = []
    for line in text.splitlines():
        if line.startswith("Session ") and ': asked "' in line:
            quoted.append(line.split(': asked "', 1)[1].split('"')[0])
        elif line.startswith("- "):
            quoted.append(line.split(": ", 1)[1].strip('"'))
    return quoted


def test_an_assistants_markdown_gives_its_whole_sentences_and_no_fragments(counter: TokenCounter) -> None:
    worked = session("export", 1, ("user", "Get the billing export ready for March."), ("assistant", REPLY))
    text = brief([worked], 400, counter.count, NOW)
    assert "We decided to keep the export job on Celery 5.3 rather than cron." in text
    for fragment in FRAGMENTS:
        assert fragment not in text, fragment
    for generic in GENERIC:
        assert generic not in text, generic


def test_a_sentence_said_again_is_shown_once_across_the_brief(counter: TokenCounter) -> None:
    newer = session(
        "newer",
        1,
        ("user", "The public API must ship before March 3, and Dana signs it off."),
        ("assistant", "Noted: the public API must ship before March 3, and Dana signs it off."),
        ("user", "We chose Redis 7 for the session cache."),
    )
    older = session(
        "older",
        3,
        ("user", "Check the rate limiter."),
        ("user", "The public API must ship by March 3, and Dana signs it off!"),
        ("user", "We chose Redis 7 for the session cache."),
    )
    text = brief([newer, older], 400, counter.count, NOW)
    assert text.count("March 3") == 1 and text.count("Redis 7") == 1
    assert text.index("newer") < text.index("March 3") < text.index("older")  # the newest copy is kept


def test_a_redacted_sentence_is_never_shown(counter: TokenCounter) -> None:
    newcomer = session(
        "newcomer",
        0,
        ("user", "My Stripe key is [redacted:stripe_key] if you need it. Wire the checkout to Stripe."),
        (
            "assistant",
            "The checkout now calls Stripe with the key from STRIPE_KEY; we decided on [private] too.",
        ),
        ("user", "We must keep the webhook secret [redacted:generic_secret] out of the logs."),
    )
    text = brief([newcomer], 400, counter.count, NOW)
    assert 'asked "Wire the checkout to Stripe."' in text
    assert "redacted" not in text and "[private]" not in text and "Stripe key" not in text


def test_what_an_assistant_says_in_any_reply_is_never_shown(counter: TokenCounter) -> None:
    replies = [
        f"We use Flask for the {part} endpoints, so Flask handles the routing of every request."
        for part in ("billing", "export", "admin", "report")
    ]
    generic = "We must keep Flask secure and fast at all times."  # a decision in form, and says nothing
    specific = "We must keep Flask pinned to 2.3.1 until the export ships."
    sessions = [
        session(f"s{n}", n, ("user", f"Work on part {n} of the API."), ("assistant", reply))
        for n, reply in enumerate(replies)
    ]
    sessions[0] = session(
        "s0",
        0,
        ("user", "Work on part 0 of the API."),
        ("assistant", f"{replies[0]} {generic} {specific} Feel free to ask if anything is unclear."),
    )
    text = brief(sessions, 700, counter.count, NOW)
    assert specific in text
    assert generic not in text and "Feel free" not in text


def test_a_long_sentence_is_shown_whole_or_as_its_own_clauses_never_cut(counter: TokenCounter) -> None:
    long_ask = (
        "I'm trying to implement a secure login for the billing dashboard, considering the recent growth "
        "of commits merged into the main branch, which has now reached 165, and I want to ensure that the "
        "login follows the best practices, especially since I've never deployed this app to any cloud "
        "platform or used Gunicorn in production, so I'm looking for advice on how to secure it properly"
    )
    rambling = (
        "We decided " + " and ".join(f"that step {n} runs after step {n - 1}" for n in range(2, 30)) + "."
    )
    long = session("long", 0, ("user", long_ask), ("user", rambling), ("assistant", "Done."))
    text = brief([long], 400, counter.count, NOW)
    assert 'asked "I\'m trying to implement a secure login for the billing dashboard."' in text
    assert "step 29" not in text  # too long for a fact, and no clause of it stands alone
    for quoted in lines_of(text):
        assert not quoted.endswith(("…", "...")), quoted


def beam_like(n: int, days_ago: int) -> SessionTurns:
    return session(
        f"beam{n}",
        days_ago,
        ("user", f"I'm trying to add rate limiting to endpoint {n} of the transactions API."),
        ("assistant", REPLY),
        ("user", f"We decided to cap endpoint {n} at {n * 10} requests per minute."),
        ("assistant", f"Understood: endpoint {n} is capped at {n * 10} requests per minute now."),
    )


@pytest.mark.parametrize("budget", [60, 150, 250, 400, 600])
def test_a_realistic_brief_stays_within_its_budget(budget: int, counter: TokenCounter) -> None:
    text = brief([beam_like(n, n) for n in range(5)], budget, counter.count, NOW)
    assert text and counter.count(text) <= budget


def test_a_small_budget_keeps_the_newest_sessions_ask_and_decision(counter: TokenCounter) -> None:
    text = brief([beam_like(n, n) for n in range(1, 6)], 150, counter.count, NOW)
    assert "rate limiting to endpoint 1 of the transactions API" in text
    assert "We decided to cap endpoint 1 at 10 requests per minute." in text
    assert counter.count(text) <= 150
    # Every line shown belongs to a session shown above it.
    assert text.startswith("Session beam1")
