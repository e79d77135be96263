"""What a sentence states, by its surface cues: the facts a summary and a project's brief keep first."""

from __future__ import annotations

import pytest

from mcp_memory.service.facts import fact_kinds, names


@pytest.mark.parametrize(
    ("sentence", "kinds"),
    [
        ("Each person can spend at most 250 euros on travel.", {"constraint", "number"}),
        ("The export must never call the payments API directly.", {"constraint", "name"}),
        ("We decided to use Parquet instead of CSV.", {"decision", "name"}),
        ("TODO: the retry test is still failing.", {"task"}),
        ("The offsite starts on October 3.", {"date", "number"}),
        ("Ship it by Friday.", {"date"}),
        ("Upgrade to Python 3.12 next week.", {"date", "name", "number"}),
    ],
)
def test_facts_are_read_from_their_cues(sentence: str, kinds: set[str]) -> None:
    assert fact_kinds(sentence) == kinds


@pytest.mark.parametrize(
    "sentence",
    [
        "That must've been amazing!",
        "Nope, never been on a sports team.",
        "I have to say, it looks lovely.",
        "How are things going with the new team?",
        "I went hiking in May and it reminds me of home.",
        "Yesterday was great.",
    ],
)
def test_small_talk_states_no_commitment_or_date(sentence: str) -> None:
    assert not fact_kinds(sentence) & {"constraint", "decision", "task", "date"}


def test_a_name_said_elsewhere_is_one_at_a_sentence_start() -> None:
    assert names("Priya will own the export.") == frozenset()
    assert names("Priya will own the export.", known={"priya"}) == {"priya"}
