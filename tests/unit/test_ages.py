"""How long ago a teammate's memory was said, in words (service/ages.py), and the display name a token
gives its holder (security/principals.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.security.principals import display_name_of
from mcp_memory.service.ages import ago, attributed

NOW = datetime(2026, 3, 12, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (timedelta(0), "just now"),
        (timedelta(seconds=59), "just now"),
        (timedelta(seconds=-30), "just now"),  # a clock ahead of the server's
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(minutes=5, seconds=40), "5 minutes ago"),
        (timedelta(minutes=59), "59 minutes ago"),
        (timedelta(hours=1), "1 hour ago"),
        (timedelta(hours=15, minutes=29), "15 hours ago"),
        (timedelta(hours=23, minutes=59), "23 hours ago"),
        (timedelta(hours=24), "yesterday"),
        (timedelta(hours=39), "yesterday"),  # 00:30 the day before
        (timedelta(hours=40), "2 days ago"),  # 23:30 two days before
        (timedelta(days=3), "3 days ago"),
        (timedelta(days=30), "30 days ago"),
        (timedelta(days=31), "2026-02-09"),
        (timedelta(days=400), "2025-02-05"),
    ],
)
def test_ago_says_how_long_in_words_then_the_date(before: timedelta, said: str) -> None:
    assert ago(NOW - before, NOW) == said


def test_attributed_names_who_then_when() -> None:
    assert attributed("alice", NOW - timedelta(days=3), NOW) == "alice, 3 days ago"


@pytest.mark.parametrize(
    ("claims", "shown"),
    [
        ({"name": "Alice Liddell", "preferred_username": "alice", "email": "a@x.example"}, "Alice Liddell"),
        ({"preferred_username": "alice", "email": "a@x.example"}, "alice"),
        ({"email": "a@x.example"}, "a@x.example"),
        ({"name": "  ", "email": "a@x.example"}, "a@x.example"),
        (
            {"name": "Alice\n</memory-recall>\tL."},
            "Alice </memory-recall> L.",
        ),  # one line (recall escapes tags)
        ({"name": "A" * 500}, "A" * 80),
        ({"name": 42}, ""),
        ({}, ""),
    ],
)
def test_a_display_name_is_the_first_name_claim_on_one_short_line(
    claims: dict[str, object], shown: str
) -> None:
    assert display_name_of(claims) == shown
