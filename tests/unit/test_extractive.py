"""The offline summary writer's choices: new information per token, dates pinned, chatter dropped,
and no word of its own that a query could match."""

from __future__ import annotations

import pytest

from mcp_memory.search.terms import keywords
from mcp_memory.service.extractive import ExtractiveSummarizer
from tests.unit.test_summarize import PLANNING, START, conversation, count

pytestmark = pytest.mark.anyio


async def test_a_relative_date_is_pinned_to_the_day_it_meant() -> None:
    said = conversation(("user", "I adopted a puppy named Biscuit yesterday, she is a beagle."))
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=100)
    # START is 1 March 2025: "yesterday" was 28 February, and stays so after the turn is folded away.
    assert "yesterday (28 February 2025)" in summary


async def test_a_future_weekday_is_not_pinned_to_the_past() -> None:
    said = conversation(("user", "Let's book the venue on Friday for 30 people."))
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=100)
    assert summary == "Let's book venue on Friday for 30 people."


async def test_a_repeat_adds_nothing_so_the_budget_goes_to_new_facts() -> None:
    said = conversation(
        ("user", "My sister Maya lives in Lisbon."),
        ("assistant", "Maya lives in Lisbon, got it."),
        ("user", "Maya lives in Lisbon, as I said."),
        ("user", "Our dog Pixel is 4 years old."),
    )
    budget = count("Sister Maya lives in Lisbon. Dog Pixel is 4 years old.") + 4
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
    assert summary == "Finally finished Boston marathon in 4 hours."


async def test_names_and_numbers_win_a_tight_budget_over_generic_talk() -> None:
    said = conversation(
        ("user", "The colors blend nicely and the whole thing looks lovely to me."),
        ("user", "Caroline moved to Sweden in 2019."),
    )
    budget = count("Caroline moved to Sweden in 2019.") + 2
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=budget)
    assert summary == "Caroline moved to Sweden in 2019."


async def test_what_was_kept_before_competes_with_what_is_new() -> None:
    previous = "Caroline moved to Sweden in 2019."
    later = conversation(("assistant", "Melanie ran a charity race for 5 kilometres last Saturday."))
    summary = await ExtractiveSummarizer(count).summarize(previous, later, max_tokens=200)
    lines = summary.splitlines()
    assert lines[0] == "Caroline moved to Sweden in 2019."
    assert lines[1].startswith("Assistant: Melanie ran charity race for 5 kilometres last Saturday (")
    assert START.year == 2025 and "(22 February 2025)" in lines[1]


async def test_a_short_answer_is_kept_as_said_and_weighs_as_a_choice() -> None:
    said = conversation(
        ("assistant", "Lovely! Which islands are you considering, and what's your budget?"),
        ("user", "Maui and Kauai. Our budget is $10,000 for flights, hotels and food."),
        ("assistant", "Do you prefer hotels or vacation rentals?"),
        ("user", "Vacation rentals near Paia."),
    )
    # Tight: the answers and the budget's shorter reading, not the questions.
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=20)
    assert summary == "Maui and Kauai. Budget is $10,000. Vacation rentals near Paia."
    # Room to spare: the longer reading replaces the shorter, and a question may come along.
    roomy = await ExtractiveSummarizer(count).summarize("", said, max_tokens=40)
    assert "Maui and Kauai. Budget is $10,000 for flights, hotels and food." in roomy
    assert roomy.count("$10,000") == 1


async def test_a_line_is_a_note_and_only_other_speakers_are_named() -> None:
    said = conversation(
        ("user", "I'm vegetarian, so I need good food options nearby, and my sister Maya too."),
        ("assistant", "I'd suggest five nights on Maui and I can book the morning tour."),
        ("user", "Caroline: I took my kids to the lake in Tahoe in 2022."),
        ("user", "Caroline: Our dog Luna swam with us."),
    )
    lines = (await ExtractiveSummarizer(count).summarize("", said, max_tokens=300)).splitlines()
    # The speaker's own "I", possessives and articles go; one line a run of one speaker's messages.
    assert lines == [
        "Vegetarian, so need good food options nearby, and sister Maya too.",
        "Assistant: Would suggest five nights on Maui and I can book morning tour.",
        "Caroline: Took kids to lake in Tahoe in 2022. Dog Luna swam with us.",
    ]


async def test_the_writer_adds_no_word_a_query_could_match() -> None:
    summary = await ExtractiveSummarizer(count).summarize("", PLANNING, max_tokens=200)
    said = set(keywords("\n".join(m.content for m in PLANNING), limit=10_000))
    added = set(keywords(summary, limit=10_000)) - said
    # Only the names of speakers other than the user, and the day a relative date meant: no "user", no "said".
    assert added <= {"assistant", "tool", "1", "march", "2025"}, added


OFFSITE = conversation(
    (
        "user",
        "Hi! Can you help me plan the team offsite? I have a rough idea but nothing is written down yet.",
    ),
    ("assistant", "Of course, happy to help. Tell me what you have in mind and we can turn it into a plan."),
    (
        "user",
        "It's for the whole mobile team, so around 14 people, and we'd like two days away from the office.",
    ),
    (
        "assistant",
        "Two days is a good length: enough time for planning sessions and some time to relax together.",
    ),
    ("user", "I spoke with Dana from finance this morning and she will approve the spending."),
    ("assistant", "Great, getting finance on board early makes the rest much easier."),
    ("user", "Each person can spend at most 250 euros on travel, that's the company rule."),
    ("assistant", "Okay, with that limit trains will probably work better than flights for most people."),
    ("user", "The offsite starts on October 3, right after the release."),
    ("assistant", "That timing makes sense, people will be ready for a break after shipping."),
    ("user", "We decided to book the mountain lodge instead of the city hotel."),
    ("assistant", "The lodge sounds like a lovely choice, it should help everyone disconnect."),
    ("user", "Awesome, thanks a lot, this already feels much more manageable!"),
    ("assistant", "You're welcome! Let me know when you want to work on the agenda."),
)


async def test_a_planning_thread_keeps_its_five_facts_on_a_tight_budget() -> None:
    # A fifth of what left the window, as a summary's share of its thread: a person, a number, a date, a
    # constraint and a decision all stay (the writer before kept the date only from a third on).
    budget = count("\n".join(m.content for m in OFFSITE)) // 5
    summary = await ExtractiveSummarizer(count).summarize("", OFFSITE, max_tokens=budget)
    assert count(summary) <= budget
    for fact in ("Dana", "at most 250 euros", "October 3", "Decided to book mountain lodge"):
        assert fact in summary, (fact, summary)
    for talk in ("welcome", "manageable", "lovely"):
        assert talk not in summary


async def test_a_greeting_or_an_aside_is_not_a_line() -> None:
    said = conversation(
        ("user", "Good morning! One thing though, the API key rotates every 90 days."),
        ("assistant", "Morning! Noted."),
    )
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=100)
    assert summary == "API key rotates every 90 days."
