"""What a client's model reads of each tool (issue 47): compact JSON, nothing the caller sent, nothing
twice; a long memory's hit as the passage that matched; definitions without what a model never uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.search.budget import focus
from tests.services.mcp_client import call, stored

pytestmark = pytest.mark.anyio

LONG_TURN = (
    " ".join(
        f"Step {i}: the deploy script copies the build to the staging host and restarts the workers."
        for i in range(40)
    )
    + " The database migration failed because the orders table was locked by the nightly backup job."
)


@pytest.fixture
def tokenizer(tmp_path: Path) -> TokenCounter:
    return TokenCounter.load("o200k_base", cache_dir=tmp_path / "tiktoken")


async def answer(client: Client, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    [block] = result.content
    return block.text, result.structured_content  # type: ignore[union-attr,return-value]


async def test_text_is_compact_json_of_the_structured_content(client: Client) -> None:
    text, structured = await answer(client, "add_turn", thread_id="t", role="user", content="Hello there")
    assert json.loads(text) == structured
    assert text == json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
    text, structured = await answer(client, "get_working_memory", thread_id="t")
    assert "\n" not in text and json.loads(text) == structured
    assert "data" not in structured  # empty: left out, like every field at its default


async def test_add_turn_answers_briefly_without_echoing_the_message(
    client: Client, tokenizer: TokenCounter
) -> None:
    text, out = await answer(client, "add_turn", thread_id="t", role="user", content=LONG_TURN)
    assert tokenizer.count(text) <= 60, text
    assert "deploy" not in text
    assert out["id"].startswith("turn_") and out["token_count"] == tokenizer.count(LONG_TURN)
    assert out["thread"] == {"messages": 1, "tokens": out["token_count"]}
    assert out["summarized"] is False
    # A secret is taken out before storing (the kinds in the stored metadata): the answer stays as brief.
    text, out = await answer(
        client,
        "add_turn",
        thread_id="t",
        role="user",
        content=LONG_TURN + " password=hunter2hunter2 and token ghp_" + "a1B2c3D4e5" * 4,
        metadata={"tool_name": "shell"},
    )
    assert tokenizer.count(text) <= 60 and set(out) == {"id", "token_count", "thread", "summarized"}, text
    assert (await stored(client, out["id"]))["metadata"]["redacted"]
    wm = await call(client, "get_working_memory", thread_id="t")
    assert wm["messages"][0]["content"] == LONG_TURN  # what was stored, read back whole


async def test_a_long_memory_s_hit_is_the_passage_that_matched(
    client: Client, tokenizer: TokenCounter
) -> None:
    added = await call(client, "add_turn", thread_id="ops", role="assistant", content=LONG_TURN)
    await call(client, "add_turn", thread_id="ops", role="user", content="Short note about lunch.")
    _, found = await answer(client, "search_memory", query="why did the migration fail", thread_id="ops")
    [hit] = [h for h in found["results"] if h["id"] == added["id"]]
    assert "content" not in hit and "thread_id" not in hit  # the caller named the thread
    passage = hit["passage"]
    assert "orders table was locked" in passage["text"]
    assert LONG_TURN[passage["start"] : passage["end"]] == passage["text"]
    assert tokenizer.count(passage["text"]) <= 100 and hit["token_count"] == tokenizer.count(LONG_TURN)
    assert "space" not in hit and "author" not in hit and "flags" not in hit  # personal, nothing flagged

    _, whole = await answer(
        client, "search_memory", query="why did the migration fail", thread_id="ops", full_content=True
    )
    [hit] = [h for h in whole["results"] if h["id"] == added["id"]]
    assert hit["content"] == LONG_TURN and "text" not in hit.get("passage", {})
    short = next(h for h in whole["results"] if h["id"] != added["id"]) if len(whole["results"]) > 1 else None
    assert short is None or short["content"] == "Short note about lunch."


async def test_optional_arguments_listed_plainly_still_take_an_explicit_null(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    search = tools["search_memory"].input_schema
    assert "title" not in search and all("title" not in p for p in search["properties"].values())
    assert search["properties"]["thread_id"] == {"type": "string", "description": "Only this thread."}
    assert all("anyOf" not in p for p in search["properties"].values())
    assert "\n" not in (tools["add_turn"].description or "")
    # The output schema still admits the nulls a result may carry.
    assert "null" in json.dumps(tools["list_memories"].output_schema)
    await call(client, "add_turn", thread_id="t", role="user", content="about the zebra")
    found = await call(client, "search_memory", query="zebra", thread_id=None, since=None, min_score=None)
    assert found["results"]


async def test_remember_and_update_do_not_echo_the_text_sent(client: Client) -> None:
    written = await call(client, "remember", content="The user is vegetarian")
    assert "content" not in written and written["action"] == "created"
    updated = await call(client, "update_memory", memory_id=written["id"], content="The user is vegan")
    assert "content" not in updated and updated["id"] == written["id"]
    history = await call(client, "memory_history", memory_id=written["id"])
    assert [r["content"] for r in history["revisions"]] == ["The user is vegetarian", "The user is vegan"]
    assert "content" not in history["memory"]  # the last revision says it
    assert await call(client, "set_thread_data", thread_id="t", data={"trip": "Oslo", "step": 2}) == {
        "keys": ["trip", "step"]
    }


def test_focus_keeps_the_sentences_that_hold_the_query_s_words(tokenizer: TokenCounter) -> None:
    text = (
        "Intro words here. " * 20 + "The cache key was wrong. It used the user id. " + "Filler again. " * 20
    )
    start, end = focus(text, (0, len(text)), ["cach", "kei", "user"], tokenizer.count, max_tokens=20)
    assert text[start:end].startswith("The cache key was wrong.") and "user id" in text[start:end]
    assert tokenizer.count(text[start:end]) <= 20
    # One sentence longer than the budget: the words around its first match, offsets still exact.
    long_sentence = "word " * 200 + "migration failed here " + "word " * 200
    start, end = focus(long_sentence, (0, len(long_sentence)), ["migrat"], tokenizer.count, max_tokens=30)
    assert "migration" in long_sentence[start:end] and tokenizer.count(long_sentence[start:end]) <= 30
    # Short enough: unchanged.
    assert focus("Short.", (0, 6), ["short"], tokenizer.count) == (0, 6)


async def test_list_memories_shows_a_long_memory_by_its_opening(
    client: Client, tokenizer: TokenCounter
) -> None:
    added = await call(client, "add_turn", thread_id="ops", role="assistant", content=LONG_TURN)
    await call(client, "add_turn", thread_id="ops", role="user", content="Short note about lunch.")
    page = await call(client, "list_memories", thread_id="ops", order="oldest")
    long, short = page["memories"]
    assert long["id"] == added["id"] and "content" not in long
    assert long["passage"]["start"] == 0 and LONG_TURN.startswith(long["passage"]["text"])
    assert tokenizer.count(long["passage"]["text"]) <= 80 and long["token_count"] == added["token_count"]
    assert short["content"] == "Short note about lunch." and "passage" not in short
    whole = await call(client, "list_memories", thread_id="ops", order="oldest", full_content=True)
    assert whole["memories"][0]["content"] == LONG_TURN
