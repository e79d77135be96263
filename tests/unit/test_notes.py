"""Sentences rewritten as lines of a note: who said it, in a whole clause, every word of it kept."""

from __future__ import annotations

import pytest

from mcp_memory.service.notes import indirect, is_fragment, note


@pytest.mark.parametrize(
    ("question", "reported"),
    [
        ("Which islands are you considering, and what's your budget?", "which islands they are considering"),
        ("Do you prefer hotels or vacation rentals?", "whether they prefer hotels or vacation rentals"),
        ("Can we book that?", "whether they can book that"),
        ("What's your budget?", "what their budget is"),
        ("How long have you been married?", "how long they have been married"),
        # Outside the simple patterns (a past "did", the asker's own "me"): quoted as asked.
        ("Did you book it?", '"Did you book it?"'),
        ("Do you want me to book it?", '"Do you want me to book it?"'),
    ],
)
def test_a_question_is_reported_or_quoted(question: str, reported: str) -> None:
    assert indirect(question) == reported


def test_only_a_short_answer_without_a_verb_is_a_fragment() -> None:
    assert is_fragment("Maui and Kauai.") and is_fragment("Vacation rentals near Paia.")
    assert not is_fragment("We decided on Maui.")
    assert not is_fragment("Booked it.")  # a verb by its ending
    assert not is_fragment("Maui or Kauai?")
    assert not is_fragment("Maui, Kauai, Oahu, the Big Island, Molokai and Lanai.")  # long: not an answer


def test_a_note_keeps_every_word_and_says_who() -> None:
    assert note("The user", "they", "We fly out of Seattle on March 14.") == (
        "The user said they fly out of Seattle on March 14."
    )
    assert note("The assistant", "it", "I'll book the 8:00 tour for $120.") == (
        "The assistant said it will book the 8:00 tour for $120."
    )
    assert note("The assistant", "it", "We booked it.") == "The assistant said: We booked it."
    assert (
        note("The user", "they", "Can you renew my passport?") == "The user asked: Can you renew my passport?"
    )
    assert note("Melanie", "they", "5 years already!", asked="How long have you been married?") == (
        "Asked how long they have been married, Melanie said 5 years already!"
    )
