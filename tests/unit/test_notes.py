"""A sentence as a line of a summary: its facts without the words around them, and its shorter readings."""

from __future__ import annotations

import pytest

from mcp_memory.service.notes import is_fragment, leads, readings, speaker_of


def test_only_a_short_answer_without_a_verb_is_a_fragment() -> None:
    assert is_fragment("Maui and Kauai.") and is_fragment("Vacation rentals near Paia.")
    assert not is_fragment("We decided on Maui.")
    assert not is_fragment("Booked it.")  # a verb by its ending
    assert not is_fragment("Maui or Kauai?")
    assert not is_fragment("Maui, Kauai, Oahu, the Big Island, Molokai and Lanai.")  # long: not an answer


def test_a_line_names_every_speaker_but_the_user() -> None:
    assert speaker_of("user", None) is None
    assert speaker_of("assistant", None) == "Assistant"
    assert speaker_of("tool", None) == "Tool"
    assert speaker_of("user", "Caroline") == "Caroline"  # the conversation's own label wins


@pytest.mark.parametrize(
    ("sentence", "note"),
    [
        (
            "I'm vegetarian, so I need good food options nearby.",
            "Vegetarian, so need good food options nearby.",
        ),
        ("I'm planning a trip to Hawaii with my sister Maya.", "Planning trip to Hawaii with sister Maya."),
        ("We decided to fly out of Seattle on March 14.", "Decided to fly out of Seattle on March 14."),
        ("I'd suggest five nights on Maui.", "Would suggest five nights on Maui."),
        ("I'll book the 8:00 tour for $120!", "Will book 8:00 tour for $120."),
        ("Can you renew my passport?", "Can you renew passport?"),
        ("I am not vegetarian.", "Not vegetarian."),  # a negation stays
    ],
)
def test_a_note_drops_the_speakers_subject_possessives_and_articles(sentence: str, note: str) -> None:
    assert readings(sentence)[-1] == note


def test_a_line_may_end_early_but_never_inside_a_list_or_before_a_condition() -> None:
    assert leads("Budget is $10,000 for flights, hotels and food.") == [
        "Budget is $10,000.",
        "Budget is $10,000 for flights, hotels and food.",
    ]
    assert leads("Vegetarian, so need good food options nearby.")[0] == "Vegetarian."
    # "but" and "if" take back or condition what came before: no reading ends before them.
    assert leads("Will book the tour, but only if it is calm.") == [
        "Will book the tour, but only if it is calm."
    ]
    assert leads("Went hiking, camping, and kayaking.") == ["Went hiking, camping, and kayaking."]
