"""Every tool through a real MCP client connected in process: results, contract fields, errors."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.services.mcp_client import call, call_error, stored

pytestmark = pytest.mark.anyio

CONTRACT_TOOLS = {"add_turn", "search_memory", "get_working_memory", "summarize_thread", "forget"}


async def test_tools_are_listed_with_annotations_and_output_schemas(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= CONTRACT_TOOLS
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["get_working_memory"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True
    # readOnlyHint false is the protocol's default, left out of the listing (tokens): not read-only.
    assert not tools["add_turn"].annotations.read_only_hint
    assert tools["add_turn"].annotations.destructive_hint is False
    for name in CONTRACT_TOOLS:
        assert tools[name].output_schema is not None, name
        assert tools[name].description
    add_turn_params = tools["add_turn"].input_schema["properties"]
    assert {"thread_id", "role", "content", "metadata", "context_window"} <= set(add_turn_params)
    assert set(tools["add_turn"].input_schema["required"]) == {"thread_id", "role", "content"}


async def test_server_instructions_tell_a_model_when_to_call_what(client: Client) -> None:
    assert client.instructions is not None
    for tool in CONTRACT_TOOLS:
        assert tool in client.instructions


async def test_add_turn_returns_the_turn_and_context_usage(client: Client) -> None:
    out = await call(
        client, "add_turn", thread_id="t1", role="user", content="Hello there", context_window=1000
    )
    assert set(out) == {"id", "token_count", "thread", "summarized"}  # never the message back
    assert out["id"].startswith("turn_")
    assert out["thread"] == {"messages": 1, "tokens": out["token_count"]} and out["token_count"] > 0
    assert out["summarized"] is False
    turn = await stored(client, out["id"])
    assert turn["role"] == "user" and turn["content"] == "Hello there"
    usage = await call(client, "get_working_memory", thread_id="t1")
    assert usage["context_window"] == 1000 and usage["threshold_tokens"] == 700
    assert usage["percent_used"] == round(100 * usage["token_count"] / 1000, 1)


async def test_agent_role_is_stored_as_assistant_and_tool_metadata_is_kept(client: Client) -> None:
    out = await call(client, "add_turn", thread_id="t1", role="agent", content="Sure.")
    assert (await stored(client, out["id"]))["role"] == "assistant"
    meta = {"tool_name": "weather", "tool_call_id": "call_1"}
    tool_turn = await call(
        client, "add_turn", thread_id="t1", role="tool", content="12C, rain", metadata=meta
    )
    wm = await call(client, "get_working_memory", thread_id="t1")
    assert [m["role"] for m in wm["messages"]] == ["assistant", "tool"]
    assert wm["messages"][1]["metadata"] == meta and wm["messages"][1]["id"] == tool_turn["id"]


async def test_context_window_is_per_thread_and_remembered(client: Client) -> None:
    await call(client, "add_turn", thread_id="small", role="user", content="a", context_window=2000)
    await call(client, "add_turn", thread_id="small", role="user", content="b")
    await call(client, "add_turn", thread_id="default", role="user", content="c")
    assert (await call(client, "get_working_memory", thread_id="small"))["context_window"] == 2000
    default = await call(client, "get_working_memory", thread_id="default")
    assert default["context_window"] == 8000  # the configured default


async def test_get_working_memory_fields_and_recent(client: Client) -> None:
    for i in range(5):
        await call(client, "add_turn", thread_id="t2", role="user", content=f"message number {i}")
    wm = await call(client, "get_working_memory", thread_id="t2", recent=2)
    assert {
        "thread_id",
        "summary",
        "messages",
        "token_count",
        "context_window",
        "threshold_tokens",
        "percent_used",
        "percent_until_summarization",
    } <= set(wm)
    assert [m["content"] for m in wm["messages"]] == ["message number 3", "message number 4"]
    assert wm["message_count"] == 5


async def test_unknown_thread_has_empty_working_memory(client: Client) -> None:
    wm = await call(client, "get_working_memory", thread_id="never-used")
    assert wm["messages"] == [] and wm["summary"] == "" and wm["token_count"] == 0


async def test_search_memory_finds_turns_across_threads(client: Client) -> None:
    a = await call(client, "add_turn", thread_id="trip", role="user", content="Our budget is 10000 dollars")
    await call(client, "add_turn", thread_id="work", role="user", content="The deploy target is eu-west")
    found = await call(client, "search_memory", query="deploy target")
    assert "mode" not in found  # hybrid, the default: fields at their default are left out
    assert found["results"][0]["content"] == "The deploy target is eu-west"
    # A short turn of the caller's own memory: no passage, space, author, flags or snippet, and no type
    # (a turn, the default).
    assert set(found["results"][0]) == {
        *("id", "thread_id", "role", "content", "created_at", "score", "token_count", "matched_by")
    }
    only_trip = await call(client, "search_memory", query="budget", thread_id="trip")
    assert [r["id"] for r in only_trip["results"]] == [a["id"]]


async def test_search_modes_types_and_time_filters(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="I like green tea")
    for mode in ("hybrid", "vector", "text"):
        found = await call(client, "search_memory", query="green tea", mode=mode)
        assert found.get("mode", "hybrid") == mode and found["results"][0]["content"] == "I like green tea"
    assert (await call(client, "search_memory", query="green tea", types=["fact"]))["results"] == []
    assert (await call(client, "search_memory", query="green tea", since="2999-01-01"))["results"] == []
    assert (await call(client, "search_memory", query="green tea", until="2000-01-01"))["results"] == []
    assert len((await call(client, "search_memory", query="green tea", since="2000-01-01"))["results"]) == 1


async def test_quoted_phrase_must_match_as_a_phrase(client: Client) -> None:
    await call(client, "add_turn", thread_id="t", role="user", content="the red car is fast")
    await call(client, "add_turn", thread_id="t", role="user", content="the car is red and slow")
    found = await call(client, "search_memory", query='"red car"')
    assert [r["content"] for r in found["results"]] == ["the red car is fast"]


async def test_summarize_thread_now(client: Client) -> None:
    for i in range(6):
        await call(
            client,
            "add_turn",
            thread_id="s",
            role="user",
            content=f"Fact {i}: the measured value of sensor {i} was {i * 7} units on Monday, we think.",
        )
    out = await call(client, "summarize_thread", thread_id="s", keep_recent=2)
    assert set(out) == {
        "thread_id",
        "summary",
        "summarized_count",
        "kept_count",
        "tokens_before",
        "tokens_after",
        "message",
    }
    assert out["message"].startswith("Summarized: folded the oldest 4 messages")
    assert out["summarized_count"] == 4 and out["kept_count"] == 2
    assert out["summary"] and out["tokens_after"] < out["tokens_before"]
    wm = await call(client, "get_working_memory", thread_id="s")
    assert wm["summary"] == out["summary"] and len(wm["messages"]) == 2


async def test_forget_one_memory(client: Client) -> None:
    keep = await call(client, "add_turn", thread_id="f", role="user", content="keep this")
    drop = await call(client, "add_turn", thread_id="f", role="user", content="drop this secret")
    out = await call(client, "forget", memory_id=drop["id"])
    assert out["scope"] == "memory" and out["dry_run"] is False
    assert out["working_memory"]["messages"] == 1 and out["long_term"]["memories"] == 1
    wm = await call(client, "get_working_memory", thread_id="f")
    assert [m["id"] for m in wm["messages"]] == [keep["id"]]
    assert wm["token_count"] == keep["token_count"]
    assert (await call(client, "search_memory", query="secret", mode="text"))["results"] == []


async def test_forget_thread_and_everything_with_dry_run(client: Client) -> None:
    await call(client, "add_turn", thread_id="a", role="user", content="alpha")
    await call(client, "add_turn", thread_id="a", role="user", content="alpha two")
    await call(client, "add_turn", thread_id="b", role="user", content="beta")
    dry = await call(client, "forget", thread_id="a", dry_run=True)
    assert dry["dry_run"] and dry["working_memory"] == {"threads": 1, "messages": 2}
    assert dry["long_term"]["by_type"] == {"turn": 2}
    assert len((await call(client, "search_memory", query="alpha", mode="text"))["results"]) == 2
    gone = await call(client, "forget", thread_id="a")
    assert gone["long_term"]["memories"] == 2
    assert (await call(client, "search_memory", query="alpha", mode="text"))["results"] == []
    everything = await call(client, "forget", everything=True)
    assert everything["scope"] == "everything" and everything["long_term"]["memories"] == 1
    assert (await call(client, "search_memory", query="beta"))["results"] == []


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("add_turn", {"thread_id": "t", "role": "user", "content": "   "}, "content is empty"),
        ("add_turn", {"thread_id": "t", "role": "user", "content": "x" * 1_000_001}, "1,000,000"),
        ("add_turn", {"thread_id": "t", "role": "user", "content": "ok\x00"}, "U+0000 (NUL) at offset 2"),
        ("add_turn", {"thread_id": "bad id!", "role": "user", "content": "x"}, "thread_id"),
        ("add_turn", {"thread_id": "x" * 129, "role": "user", "content": "x"}, "thread_id"),
        ("add_turn", {"thread_id": "t", "role": "robot", "content": "x"}, "role 'robot'"),
        (
            "add_turn",
            {"thread_id": "t", "role": "user", "content": "x", "context_window": 5},
            "context_window",
        ),
        ("search_memory", {"query": "x", "limit": 0}, "limit"),
        ("search_memory", {"query": "x", "limit": 101}, "limit"),
        ("search_memory", {"query": "x", "mode": "fuzzy"}, "mode 'fuzzy'"),
        ("search_memory", {"query": "x" * 10_001}, "the limit is 10,000"),
        ("search_memory", {"query": "x", "types": ["diary"]}, "types"),
        ("search_memory", {"query": "x", "since": "yesterday"}, "since"),
        ("search_memory", {"query": "x", "since": "2026-02-01", "until": "2026-01-01"}, "after until"),
        ("search_memory", {"query": ""}, "query is empty"),
        ("get_working_memory", {"thread_id": "../etc"}, "thread_id"),
        ("summarize_thread", {"thread_id": "never-used"}, "no messages"),
        ("forget", {}, "exactly one scope"),
        ("forget", {"memory_id": "m", "thread_id": "t"}, "exactly one scope"),
        ("forget", {"thread_id": "t", "everything": True}, "exactly one scope"),
        ("forget", {"memory_id": "turn_does_not_exist"}, "no memory with id"),
    ],
)
async def test_bad_input_is_a_clear_error_and_changes_nothing(
    client: Client, tool: str, arguments: dict[str, object], named: str
) -> None:
    before = await call(client, "add_turn", thread_id="t", role="user", content="stored before")
    snapshot = await call(client, "get_working_memory", thread_id="t")
    message = await call_error(client, tool, **arguments)
    assert named in message
    assert "Traceback" not in message
    assert await call(client, "get_working_memory", thread_id="t") == snapshot
    found = await call(client, "search_memory", query="stored before", mode="text")
    assert [r["id"] for r in found["results"]] == [before["id"]]


async def test_wrong_argument_types_are_rejected_by_the_schema(client: Client) -> None:
    message = await call_error(client, "search_memory", query="x", limit="ten")
    assert "limit" in message


async def test_thread_data_is_kept_with_the_thread(client: Client) -> None:
    await call(client, "add_turn", thread_id="d", role="user", content="hello")
    out = await call(client, "set_thread_data", thread_id="d", data={"trip": "Hawaii", "step": 3})
    assert out == {"keys": ["trip", "step"]}  # what is kept, not the data sent back
    wm = await call(client, "get_working_memory", thread_id="d")
    assert wm["data"] == {"trip": "Hawaii", "step": 3} and wm["message_count"] == 1
    message = await call_error(client, "set_thread_data", thread_id="d", data={"blob": "x" * 20_000})
    assert ": data is " in message and "bytes of JSON" in message
    assert (await call(client, "get_working_memory", thread_id="d"))["data"] == {"trip": "Hawaii", "step": 3}


async def test_summarize_with_nothing_to_fold_in_writes_nothing(client: Client) -> None:
    await call(client, "add_turn", thread_id="n", role="user", content="one")
    await call(client, "add_turn", thread_id="n", role="user", content="two")
    out = await call(client, "summarize_thread", thread_id="n", keep_recent=5)
    assert out["summarized_count"] == 0 and out["kept_count"] == 2 and out["summary"] == ""
    assert (await call(client, "search_memory", query="one two", types=["summary"]))["results"] == []
    exported = await call(client, "export_memories")
    assert exported["counts"]["memory"] == 2
