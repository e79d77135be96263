"""A stored message read as markdown: its whole sentences only, and which are worth quoting (prose.py)."""

from __future__ import annotations

from mcp_memory.service import prose

MARKDOWN = """Sure! Here's the plan for the pool.

## Steps
1. **Pool size:** The pool must stay at 200 connections.
2. **Owner**: Dana
   owns the rollout and signs it off before Friday.
- **Deadline:**
- 10:00 - 11:30: review the pool
- Use `pgbouncer` in transaction mode (see [the docs](https://example.com/docs)).
- short note

| Setting | Value |
|---|---|
| max_client_conn | 200 |

```ini
; The pool must never exceed 300 connections.
max_client_conn = 200
```
> We chose PostgreSQL 16 over MySQL. It was cut off here…"""


def test_markdown_gives_whole_sentences_without_labels_headings_tables_or_code() -> None:
    assert prose.sentences(MARKDOWN) == [
        "Here's the plan for the pool.",
        "The pool must stay at 200 connections.",
        "Dana owns the rollout and signs it off before Friday.",
        "Use `pgbouncer` in transaction mode (see the docs).",
        "We chose PostgreSQL 16 over MySQL.",
    ]


def test_a_prompts_last_sentence_may_end_without_a_stop_an_assistants_bullet_may_not() -> None:
    assert prose.sentences("Fix the flaky export test\nthen run the suite again", prompt=True) == [
        "Fix the flaky export test",
        "then run the suite again",
    ]
    assert prose.sentences("- Fix the flaky export test") == []


def test_a_long_sentence_gives_the_clauses_that_stand_alone() -> None:
    sentence = (
        "Given that the audit is close, and I've switched to Argon2 v0.3.0 for hashing, I'd like to know "
        "what else to harden, considering we have never deployed, which matters"
    )
    assert prose.clauses(sentence) == [
        "I've switched to Argon2 v0.3.0 for hashing.",
        "I'd like to know what else to harden.",
    ]
    assert prose.clauses("We will use Redis for the cache, unless the budget is cut.") == [
        "We will use Redis for the cache, unless the budget is cut."
    ]


def test_what_is_specific_to_a_project_and_what_any_reply_says() -> None:
    common = prose.common_words(["Flask app one.", "Flask app two.", "Flask app three.", "Django four."])
    assert "flask" in common and "django" not in common
    assert not prose.is_specific("We must keep Flask secure at all times.", common)
    assert prose.is_specific("We must keep Flask secure at all times.")  # too few replies to tell
    assert prose.is_specific("We pinned Django to the old release.", common)
    assert prose.is_specific("Call `export()` after the migration.", common)
    assert prose.is_specific("I added the retry and the tests pass.", common)
    assert not prose.is_specific("Store API keys in environment variables, not in the code.", common)
    for line in (
        "Let me know if you need anything else!",
        "I hope this helps.",
        "Good luck with your project!",
    ):
        assert prose.is_boilerplate(line), line
    assert not prose.is_boilerplate("We decided on PostgreSQL 16.")
    assert prose.is_advice("Instead of `SELECT *`, list the columns you need.")
    assert not prose.is_advice("Instead of cron, we run the export on Celery.")


def test_repeats_are_found_on_content_words() -> None:
    said = [prose.content_words("The API must ship before March 3.")]
    assert prose.near_duplicate(prose.content_words("the API must ship by March 3!"), said)
    assert prose.near_duplicate(
        prose.content_words("Noted: the API must ship before March 3, Dana said."), said
    )
    assert not prose.near_duplicate(prose.content_words("The CLI must ship before March 10."), said)
    assert prose.is_redacted("My key is [redacted:stripe_key].") and not prose.is_redacted(
        "My key is secret."
    )
