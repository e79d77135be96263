"""search/when.py: time expressions in a query resolved to a UTC range against a fixed now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mcp_memory.search.when import TimeRange, time_range

NOW = datetime(2026, 5, 14, 15, 30, tzinfo=UTC)  # a Thursday
END = timedelta(days=1) - timedelta(microseconds=1)


def day(month: int, dom: int, year: int = 2026) -> datetime:
    return datetime(year, month, dom, tzinfo=UTC)


def span(first: datetime, after: datetime) -> tuple[datetime, datetime]:
    """[first, after) as the inclusive bounds search's since/until take."""
    return first, after - timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("query", "phrase", "since", "until"),
    [
        ("what did we say yesterday about Lisbon", "yesterday", day(5, 13), day(5, 13) + END),
        ("what was yesterday's plan", "yesterday", day(5, 13), day(5, 13) + END),
        ("the hotel two days ago", "two days ago", day(5, 12), day(5, 12) + END),
        ("the hotel 2 days ago", "2 days ago", day(5, 12), day(5, 12) + END),
        ("today", "today", day(5, 14), day(5, 14) + END),
        ("what did I say on Monday", "on Monday", day(5, 11), day(5, 11) + END),
        ("the call last Tuesday", "last Tuesday", day(5, 12), day(5, 12) + END),
        ("on 5/3", "on 5/3", day(5, 3), day(5, 3) + END),
        ("notes 2026-05-01 meeting", "2026-05-01", day(5, 1), day(5, 1) + END),
        ("May 3rd dinner", "May 3rd", day(5, 3), day(5, 3) + END),
    ],
)
def test_a_named_day_is_that_whole_utc_day(query: str, phrase: str, since: datetime, until: datetime) -> None:
    assert time_range(query, NOW) == TimeRange(since, until, phrase)


@pytest.mark.parametrize(
    ("query", "phrase", "bounds"),
    [
        ("what did we decide last week", "last week", span(day(5, 4), day(5, 11))),  # Mon-Sun before
        ("plans this week", "this week", span(day(5, 11), day(5, 18))),
        ("the budget last month", "last month", span(day(4, 1), day(5, 1))),
        ("what happened in March", "in March", span(day(3, 1), day(4, 1))),  # begun: this year's
        ("trips in July", "in July", span(day(7, 1, 2025), day(8, 1, 2025))),  # not yet: last year's
        ("in May", "in May", span(day(5, 1), day(6, 1))),
        ("what we did in 2025", "in 2025", span(day(1, 1, 2025), day(1, 1))),
        ("March 2025 offsite", "March 2025", span(day(3, 1, 2025), day(4, 1, 2025))),
        ("we met 3 weeks ago", "3 weeks ago", span(day(4, 20), day(4, 27))),  # that calendar week
    ],
)
def test_a_named_period_is_the_whole_calendar_period(
    query: str, phrase: str, bounds: tuple[datetime, datetime]
) -> None:
    assert time_range(query, NOW) == TimeRange(*bounds, phrase)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what changed since Monday", TimeRange(day(5, 11), None, "since Monday")),
        ("everything since 2024", TimeRange(day(1, 1, 2024), None, "since 2024")),
        ("messages after May 3", TimeRange(day(5, 4), None, "after May 3")),  # after the whole day
        (
            "what we knew before June",
            TimeRange(None, day(6, 1, 2025) - timedelta(microseconds=1), "before June"),
        ),
        ("until last Friday", TimeRange(None, day(5, 8) + END, "until last Friday")),  # Friday included
        ("in the last 3 days", TimeRange(day(5, 11), None, "last 3 days")),
        ("over the past two weeks", TimeRange(day(4, 30), None, "past two weeks")),
    ],
)
def test_open_ended_ranges(query: str, expected: TimeRange) -> None:
    assert time_range(query, NOW) == expected


@pytest.mark.parametrize(
    ("query", "phrase"),
    [
        ("between May 1 and May 10", "between May 1 and May 10"),
        ("from May 1 to May 10", "from May 1 to May 10"),
    ],
)
def test_between_two_dates(query: str, phrase: str) -> None:
    assert time_range(f"notes {query} please", NOW) == TimeRange(day(5, 1), day(5, 10) + END, phrase)


@pytest.mark.parametrize(
    "query",
    [
        "May I ask about the march?",  # a modal verb and a noun, not months
        "second thoughts",
        "I will do it now",  # now is a moment, not a range to filter by
        "we sat in the sun on Sat",  # dateparser reads "we", "sat" and "sun" as weekdays
        "my daughter is 3 years old",
        "the 3rd option",
        "what did Maya suggest for the trip?",
        "top 10 results of version 2",
        "",
        "10000000000 days ago",
        "éèà 日本語 ???",
    ],
)
def test_ordinary_words_are_not_a_time(query: str) -> None:
    assert time_range(query, NOW) is None


def test_the_phrase_is_the_querys_own_words() -> None:
    query = "What did Maya say Last Week about LISBON?"
    found = time_range(query, NOW)
    assert found is not None and found.phrase == "Last Week" and found.phrase in query


def test_now_may_be_naive_or_in_another_zone() -> None:
    expected = time_range("yesterday", NOW)
    assert time_range("yesterday", NOW.replace(tzinfo=None)) == expected
    assert time_range("yesterday", NOW.astimezone(timezone(timedelta(hours=-5)))) == expected


def test_bounds_are_aware_utc() -> None:
    found = time_range("since last month", NOW)
    assert found is not None and found.since is not None and found.since.tzinfo is UTC
