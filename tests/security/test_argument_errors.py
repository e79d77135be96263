"""Errors worded for the model and bounded (issue 58, item 4): every tool tools/list names gets, for each
of its arguments, a value of the wrong type, a value far too long, and (when required) no value, through a
real client session. Every error is at most 300 characters, echoes what was sent as a short prefix at
most, names the argument (wrong type, missing), and is none of pydantic's own text (no errors.pydantic.dev
link, no "validation error for")."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

MAX_CHARS = 300
LONG = "x" * 100_000
# A plausible value for each required argument, so an error is about the argument under test.
PLAUSIBLE: dict[str, Any] = {
    "thread_id": "argument-errors",
    "role": "user",
    "content": "hello",
    "query": "hello",
    "memory_id": "turn_does_not_exist",
    "revision_id": "rev_does_not_exist",
    "user_id": "nobody-here",
    "jsonl": "",
    "data": {},
}
BY_TYPE: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "number": 0.5,
    "boolean": False,
    "array": [],
    "object": {},
}


def accepted(schema: dict[str, Any]) -> set[str]:
    """The JSON types an argument's schema takes."""
    if "type" in schema:
        kinds = schema["type"]
        return set(kinds) if isinstance(kinds, list) else {kinds}
    return {t for option in schema.get("anyOf", []) for t in accepted(option)}


def plausible(name: str, schema: dict[str, Any]) -> Any:
    if name in PLAUSIBLE:
        return PLAUSIBLE[name]
    kinds = sorted(accepted(schema))
    assert kinds, f"argument {name} has no type in its schema: {schema}"
    return BY_TYPE[kinds[0]]


def wrong_type(schema: dict[str, Any]) -> Any:
    """A value no coercion turns into one the argument takes (pydantic turns "5" into 5, not {} into "")."""
    return ["not", "this"] if "object" in accepted(schema) else {"not": "this"}


async def error_of(client: Client, tool: str, arguments: dict[str, Any]) -> str | None:
    """The error the call answers (a tool error's text or a JSON-RPC error's message); None on success."""
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as e:
        return e.error.message
    if not result.is_error:
        return None
    return result.content[0].text  # type: ignore[union-attr]


def assert_worded(text: str, what: str) -> None:
    assert len(text) <= MAX_CHARS, f"{what}: {len(text):,} characters: {text[:400]}"
    assert "pydantic" not in text and "validation error for" not in text, f"{what}: {text}"
    assert "x" * 41 not in text, f"{what}: the value is echoed past a short prefix: {text}"


async def test_every_argument_of_every_tool_errs_in_short_plain_words(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert len(tools) >= 20  # the "all" profile: every tool
    checked = 0
    for tool in tools:
        properties: dict[str, dict[str, Any]] = tool.input_schema.get("properties", {})
        required: list[str] = tool.input_schema.get("required", [])
        base = {name: plausible(name, properties[name]) for name in required}
        # A tool this principal may not call (forget_user: admins) is refused before its arguments are read.
        gate = await error_of(client, tool.name, base)
        refused = gate is not None and "needs an admin principal" in gate
        for name, schema in properties.items():
            what = f"{tool.name}({name}=<wrong type>)"
            text = await error_of(client, tool.name, base | {name: wrong_type(schema)})
            assert text is not None, f"{what} succeeded"
            assert_worded(text, what)
            assert refused or name in text, f"{what} does not name the argument: {text}"

            if "string" in accepted(schema):
                what = f"{tool.name}({name}=<100,000 characters>)"
                text = await error_of(client, tool.name, base | {name: LONG})
                if text is not None:  # some text may be that long (a turn's content, up to its limit)
                    assert_worded(text, what)
            checked += 1
        for name in required:
            what = f"{tool.name}() without {name}"
            text = await error_of(client, tool.name, {k: v for k, v in base.items() if k != name})
            assert text is not None, f"{what} succeeded"
            assert_worded(text, what)
            assert refused or f"{name} is required" in text, f"{what}: {text}"
    assert checked >= 80


async def test_a_long_thread_id_is_echoed_as_a_prefix_and_its_length(client: Client) -> None:
    text = await error_of(client, "add_turn", {"thread_id": "t" * 100_000, "role": "user", "content": "hi"})
    assert text is not None and len(text) <= MAX_CHARS, text
    assert "'" + "t" * 40 + "…' (100,000 characters)" in text, text


async def test_a_wrong_type_says_what_was_expected_and_what_was_got(client: Client) -> None:
    text = await error_of(client, "add_turn", {"thread_id": 5, "role": "user"})
    assert text == "add_turn: thread_id should be text, got the number 5; content is required but missing"
    text = await error_of(client, "search_memory", {"query": "q", "limit": "many"})
    assert text == "search_memory: limit should be a whole number, got text 'many'"


async def test_the_sdks_own_echoes_are_short(client: Client) -> None:
    """Unknown tool, resource, prompt and method: the SDK echoes the name whole; the last boundary
    (mcp/middleware/bounded.py) shows a prefix and its length."""
    name = "y" * 100_000
    texts = [await error_of(client, name, {})]
    for attempt in (
        client.read_resource(f"memory://memories/{name}"),
        client.read_resource(name),
        client.get_prompt(name, {}),
    ):
        with pytest.raises(MCPError) as refused:
            await attempt
        texts.append(refused.value.error.message + repr(refused.value.error.data or ""))
    for text in texts:
        assert text is not None and len(text) <= 2 * MAX_CHARS, text[:400]  # message and data, each bounded
        assert "y" * 41 not in text and "(100,0" in text, text[:400]
