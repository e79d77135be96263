"""Pure logic of learning: tolerant answer parsing, recall's small-talk / follow-up / floor rules, and
the learning prompt templates' placeholder checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_memory.errors import ConfigError, MalformedAnswerError
from mcp_memory.learning.parsing import json_object, parse_facts, parse_groups
from mcp_memory.learning.templates import LearningPrompts
from mcp_memory.service.recall import default_floor, is_small_talk, is_vague, with_context

TURNS = ["T1", "T2", "T3"]


def test_facts_are_read_from_a_bare_a_fenced_or_a_chatty_answer() -> None:
    body = (
        '{"facts": [{"text": "The user is vegetarian", "type": "preference", "confidence": 0.9,'
        ' "source": ["T2"]}]}'
    )
    for answer in (body, f"```json\n{body}\n```", f"Sure! Here you go:\n{body}\nHope it helps."):
        [fact] = parse_facts(answer, TURNS)
        assert fact.text == "The user is vegetarian"
        assert fact.kind == "preference" and fact.confidence == 0.9 and fact.source_turns == [1]


def test_loose_fields_are_understood() -> None:
    answer = (
        '{"memories": [{"fact": "  The deploy   target is eu-west ", "kind": "how-to", "confidence": "high",'
        ' "sources": [1, "t3", "T9"]}, {"content": "Flew to Lisbon", "type": "event", "confidence": 80},'
        ' "The user likes tea", {"text": ""}, 42]}'
    )
    facts = parse_facts(answer, TURNS)
    assert [f.text for f in facts] == ["The deploy target is eu-west", "Flew to Lisbon", "The user likes tea"]
    assert [f.kind for f in facts] == ["procedural", "episodic", "semantic"]
    assert facts[0].confidence == 0.9 and facts[1].confidence == 0.8
    assert facts[0].source_turns == [0, 2]  # T9 does not exist and is dropped


@pytest.mark.parametrize(
    "answer",
    ["", "I could not find any facts.", '{"facts": "none"}', '["a", ', "{'facts': []}", '{"notes": []}'],
)
def test_an_answer_of_another_shape_is_malformed(answer: str) -> None:
    with pytest.raises(MalformedAnswerError):
        parse_facts(answer, TURNS)


def test_an_empty_list_is_a_valid_answer() -> None:
    assert parse_facts('{"facts": []}', TURNS) == []
    assert json_object("[]") == {"items": []}


def test_reconcile_groups_keep_known_ids_and_one_group_per_fact() -> None:
    answer = (
        '{"groups": [{"kind": "contradiction", "ids": ["F1", "F3"]},'
        ' {"kind": "duplicates", "ids": ["f3", "F2"], "merged": " Merged text "},'
        ' {"kind": "duplicate", "ids": ["F2", "F4"], "merged": "x"},'
        ' {"kind": "related", "ids": ["F5", "F6"]}, {"kind": "duplicate", "ids": ["F7"]}]}'
    )
    groups = parse_groups(answer, ["F1", "F2", "F3", "F4", "F5", "F6"])
    assert [(g.kind, g.ids, g.merged) for g in groups] == [
        ("contradiction", ["F1", "F3"], None),
        ("duplicate", ["F2", "F4"], "x"),  # F3 was claimed by the first group; F2 + F4 remain
    ]


@pytest.mark.parametrize(
    "query", ["hi", "Hello there!", "thanks", "Thank you so much!", "ok", "good morning"]
)
def test_small_talk_is_recognised(query: str) -> None:
    assert is_small_talk(query)


@pytest.mark.parametrize("query", ["hi, what was my budget?", "thanks for the Lisbon tips", "budget"])
def test_a_real_question_is_not_small_talk(query: str) -> None:
    assert not is_small_talk(query)


@pytest.mark.parametrize("query", ["how much?", "and that one?", "what about it?", "which one?", "when?"])
def test_vague_follow_ups_are_recognised(query: str) -> None:
    assert is_vague(query)


@pytest.mark.parametrize(
    "query", ["what is the budget for the Hawaii trip?", "deploy target", "Lisbon flights"]
)
def test_a_topical_query_is_not_vague(query: str) -> None:
    assert not is_vague(query)


def test_a_follow_up_is_searched_after_its_context() -> None:
    recent = ["zero", "one", "two", "We are planning the Hawaii trip", "Flights  are\nbooked"]
    text = with_context("how much?", recent)
    # The four newest turns, each on one line, then the question.
    assert text.splitlines() == [
        "one",
        "two",
        "We are planning the Hawaii trip",
        "Flights are booked",
        "how much?",
    ]


def test_similarity_floors_follow_the_embedder() -> None:
    assert default_floor("all-MiniLM-L6-v2-int8") == 0.25
    assert default_floor("text-embedding-ada-002") == 0.75
    assert default_floor("hash-384") == 0.1
    assert default_floor("some-other-model") == 0.2


def test_shipped_learning_prompts_load() -> None:
    prompts = LearningPrompts.load(None)
    rendered = prompts.extract.render(
        turns="[T1] user: hi {braces}", context="(none)", today="2026-01-01", max_facts=5
    )
    assert "[T1] user: hi {braces}" in rendered.user and '{"facts": []}' in rendered.system
    assert {"facts"} <= prompts.reconcile.placeholders
    assert {"prev_profile", "facts"} <= prompts.profile.placeholders


def test_a_user_template_missing_a_placeholder_fails_at_load(tmp_path: Path) -> None:
    (tmp_path / "extract.md").write_text("Extract facts from nothing.")
    with pytest.raises(ConfigError, match=r"\{turns\}"):
        LearningPrompts.load(tmp_path)
    (tmp_path / "extract.md").write_text("{turns} {mood}")
    with pytest.raises(ConfigError, match=r"unknown placeholder \{mood\}"):
        LearningPrompts.load(tmp_path)
