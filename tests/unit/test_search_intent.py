"""What a query asks beyond its words (search/intent.py): an account over time, and what is current."""

from __future__ import annotations

from mcp_memory.search.intent import (
    NEWER_AMONG,
    Ranked,
    about_the_past,
    about_the_user,
    focus,
    newer_first,
    over_time,
    rules_up,
    standing_instruction,
    users_words_first,
)


def test_a_question_for_an_account_over_time_is_searched_by_what_it_is_about() -> None:
    asked = (
        "Can you list the order in which I brought up different aspects of developing my personal "
        "budget tracker throughout our conversations, in order? Mention ONLY and ONLY three items."
    )
    assert over_time(asked)
    assert focus(asked) == "developing my personal budget tracker"
    assert focus("Can you give me a comprehensive summary of how my weather app project has progressed?") == (
        "how my weather app project has progressed"
    )


def test_other_questions_are_searched_as_asked() -> None:
    for asked in ("When does my first sprint end?", "What did Maya suggest for dinner?", "list"):
        assert not over_time(asked)
        assert focus(asked) == asked
    assert focus("Can you summarize?") == "Can you summarize?"  # nothing would be left


def test_questions_about_the_past_are_told_apart() -> None:
    assert about_the_past("What was the API quota originally?")
    assert about_the_past("What did I use to call the service?")
    assert not about_the_past("What is the daily call quota of my API key?")


def hit(score: float, when: float, text: str) -> Ranked:
    return Ranked(score=score, when=when, order=0, text=text)


def test_a_newer_memory_saying_something_changed_ranks_above_the_older_one() -> None:
    hits = [
        hit(1.2, 10, "The daily quota is 1,000 calls."),
        hit(0.9, 20, "Something else entirely."),
        hit(0.95, 30, "The quota is now 1,200 calls per day."),
    ]
    assert newer_first(hits) == [2, 0, 1]


def test_the_order_stands_without_words_of_change_or_when_the_newer_scores_far_lower() -> None:
    assert newer_first([hit(1.2, 10, "quota 1,000"), hit(1.1, 30, "quota 1,200 calls")]) == [0, 1]
    assert newer_first([hit(1.2, 10, "quota 1,000"), hit(0.5, 30, "quota is now 1,200")]) == [0, 1]
    older_below = [hit(1.2, 30, "quota 1,000"), hit(1.1, 10, "quota is now 1,200")]
    assert newer_first(older_below) == [0, 1]  # the one saying "now" is the older: it stays
    assert newer_first([hit(-0.1, 10, "a"), hit(-0.2, 30, "now b")]) == [0, 1]  # not fused scores


def test_only_the_first_hits_are_reordered() -> None:
    hits = [hit(1.0 - i / 100, i, "plain") for i in range(NEWER_AMONG)] + [hit(0.95, 99, "updated now")]
    assert newer_first(hits) == list(range(NEWER_AMONG + 1))
    # Within the first NEWER_AMONG (a page of results), a newer hit saying what changed comes up.
    within = [*hits[: NEWER_AMONG - 1], hits[-1]]
    assert newer_first(within)[0] == NEWER_AMONG - 1


def test_a_rescheduled_meeting_says_it_changed() -> None:
    older = hit(1.0, 10, "Zoom meeting with the professor on March 22 at 3 PM")
    newer = hit(0.8, 20, "remind me that it's rescheduled to March 22 at 4:30 PM")
    assert newer_first([older, newer]) == [1, 0]


def said(score: float, role: str, content: str) -> Ranked:
    return Ranked(score=score, when=0, order=0, text=content, role=role, content=content)


def test_a_question_in_the_first_person_asks_what_the_user_said() -> None:
    assert about_the_user("When does my first sprint end?")
    assert about_the_user("Could you show me how I set up the login?")  # a request, then the user
    assert not about_the_user("How did you recommend handling the rate limit in my app?")
    assert not about_the_user("What was your suggestion for my deadline?")
    assert not about_the_user("Can you give me a summary of my project so far?")
    assert not about_the_user("What did Maya suggest for dinner?")


def test_for_such_a_question_the_users_words_rank_above_a_longer_reply_restating_them() -> None:
    hits = [
        said(1.0, "assistant", "Your sprint ends on March 29, so here is a plan ..."),
        said(0.8, "user", "My first sprint ends on March 29."),
        said(0.5, "user", "Something else."),
    ]
    assert users_words_first(hits) == [1, 0, 2]  # 1.0 x ASSISTANT_WEIGHT < 0.8
    far_below = [said(1.0, "assistant", "a"), said(0.5, "user", "b")]
    assert users_words_first(far_below) == [0, 1]
    assert users_words_first([said(-0.1, "assistant", "a"), said(-0.2, "user", "b")]) == [0, 1]


def test_a_standing_instruction_moves_up_past_what_scores_less_than_its_weighted_score() -> None:
    rule = "Always include step-by-step explanations when I ask about probability."
    assert standing_instruction("user", rule)
    assert standing_instruction("user", "never use tabs in my Python files")
    assert not standing_instruction("assistant", rule)  # the user's rule, not a reply's advice
    assert not standing_instruction("user", "I always forget the formula for combinations.")
    hits = [
        said(1.0, "user", "How do I compute P(red card)?"),
        said(0.9, "assistant", "Drawing a red card ..."),
        said(0.8, "user", "Something else."),
        said(0.75, "user", rule),
    ]
    assert rules_up(hits) == [0, 3, 1, 2]  # 0.75 x 1.3 = 0.975: above 0.9, not above 1.0
    assert rules_up([said(1.0, "user", rule), said(0.9, "user", "x")]) == [0, 1]  # never down
    assert rules_up(hits[:3]) == [0, 1, 2]
