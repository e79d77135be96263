"""The offline summary writer's choices: new information per token, dates pinned, chatter dropped."""

from __future__ import annotations

import pytest

from mcp_memory.service.extractive import ExtractiveSummarizer
from tests.unit.test_summarize import START, conversation, count

pytestmark = pytest.mark.anyio


async def test_a_relative_date_is_pinned_to_the_day_it_meant() -> None:
    said = conversation(("user", "I adopted a puppy named Biscuit yesterday, she is a beagle."))
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=100)
    # START is 1 March 2025: "yesterday" was 28 February, and stays so after the turn is folded away.
    assert "yesterday (28 February 2025)" in summary


async def test_a_future_weekday_is_not_pinned_to_the_past() -> None:
    said = conversation(("user", "Let's book the venue on Friday for 30 people."))
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=100)
    assert summary == "The user said: Let's book the venue on Friday for 30 people."


async def test_a_repeat_adds_nothing_so_the_budget_goes_to_new_facts() -> None:
    said = conversation(
        ("user", "My sister Maya lives in Lisbon."),
        ("assistant", "Maya lives in Lisbon, got it."),
        ("user", "Maya lives in Lisbon, as I said."),
        ("user", "Our dog Pixel is 4 years old."),
    )
    budget = (
        count(
            "The user said their sister Maya lives in Lisbon.\nThe user said their dog Pixel is 4 years old."
        )
        + 4
    )
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=budget)
    assert "Pixel" in summary and "Lisbon" in summary
    assert summary.count("Lisbon") == 1


async def test_openers_and_fillers_are_cut_and_chatter_is_left_out() -> None:
    said = conversation(
        ("user", "Wow, I just finally finished the Boston marathon in 4 hours!"),
        ("assistant", "Thanks for sharing, sounds great!"),
        ("user", "Haha okay."),
    )
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=100)
    assert summary == "The user said they finally finished the Boston marathon in 4 hours."


async def test_names_and_numbers_win_a_tight_budget_over_generic_talk() -> None:
    said = conversation(
        ("user", "The colors blend nicely and the whole thing looks lovely to me."),
        ("user", "Caroline moved to Sweden in 2019."),
    )
    budget = count("The user said: Caroline moved to Sweden in 2019.") + 2
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=budget)
    assert summary == "The user said: Caroline moved to Sweden in 2019."


async def test_what_was_kept_before_competes_with_what_is_new() -> None:
    previous = "The user said: Caroline moved to Sweden in 2019."
    later = conversation(("assistant", "Melanie ran a charity race for 5 kilometres last Saturday."))
    summary = await ExtractiveSummarizer(count).summarize(previous, later, max_tokens=200)
    lines = summary.splitlines()
    assert lines[0] == "The user said: Caroline moved to Sweden in 2019."
    assert lines[1].startswith(
        "The assistant said: Melanie ran a charity race for 5 kilometres last Saturday ("
    )
    assert START.year == 2025 and "(22 February 2025)" in lines[1]


async def test_a_short_answer_is_written_with_the_question_it_answers() -> None:
    said = conversation(
        ("assistant", "Lovely! Which islands are you considering, and what's your budget?"),
        ("user", "Maui and Kauai. Our budget is $10,000 for flights, hotels and food."),
        ("assistant", "Do you prefer hotels or vacation rentals?"),
        ("user", "Vacation rentals near Paia."),
    )
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=200)
    assert "Asked which islands they are considering, the user said Maui and Kauai." in summary
    assert "The user said their budget is $10,000 for flights, hotels and food." in summary
    # "vacation" is written in lower case in the conversation: an ordinary word, not a name.
    assert (
        "Asked whether they prefer hotels or vacation rentals, the user said vacation rentals near Paia."
        in summary
    )


async def test_first_person_speech_is_reported_for_whoever_said_it() -> None:
    said = conversation(
        ("user", "I'm vegetarian, so I need good food options nearby, and my sister Maya too."),
        ("assistant", "I'd suggest five nights on Maui and I can book the morning tour."),
        ("assistant", "I recommend Paia for cafes."),  # "it recommend": quoted instead
        ("user", "Caroline: I took some me-time at the lake in 2022."),
        ("user", "Caroline: My kids loved it."),
    )
    lines = (await ExtractiveSummarizer(count).summarize("", said, max_tokens=300)).splitlines()
    assert lines == [
        "The user said they're vegetarian, so they need good food options nearby, and their sister Maya too.",
        "The assistant said it would suggest five nights on Maui and it can book the morning tour.",
        "The assistant said: I recommend Paia for cafes.",
        "Caroline said they took some me-time at the lake in 2022.",
        "Caroline said their kids loved it.",
    ]
