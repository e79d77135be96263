"""Every request answered (issue 58, item 3): the real `mcp-memory` process, over stdio (relayed to the
resident server, and in its own process), SSE and streamable HTTP, gets a corpus of malformed messages as
raw bytes (tests/services/raw_wire.py): lines that are not JSON, truncated JSON, arrays of garbage, lone
surrogates in the method, params, arguments, keys and id, bytes that are not UTF-8, a huge line, an empty
line, a byte order mark, NUL. Each gets a JSON-RPC error with its id (or `id: null` when it has none to
read), at most ~300 characters; nothing is stored; the session works on after."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.services import raw_wire
from tests.services.raw_wire import REFUSED_THREAD, Wire
from tests.services.server_process import NetworkServer, StdioServer, mcp_memory_command

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
# The code each refusal carries, by case (the rest: answered, as a tool's error or the server's).
CODES = {
    "not JSON": PARSE_ERROR,
    "empty line": PARSE_ERROR,
    "truncated JSON": PARSE_ERROR,
    "JSON array of garbage": INVALID_REQUEST,
    "object that is not JSON-RPC": INVALID_REQUEST,
    "request without jsonrpc": INVALID_REQUEST,
    "byte order mark": PARSE_ERROR,
    "NUL byte": PARSE_ERROR,
    "nested too deeply": PARSE_ERROR,
    "lone surrogate in method": INVALID_REQUEST,
    "lone surrogate in params": INVALID_PARAMS,
    "lone high surrogate in an argument": INVALID_PARAMS,
    "lone surrogate in the id": INVALID_REQUEST,
    "invalid UTF-8 bytes": INVALID_PARAMS,
}
# Where the refusal says the bad character is, by case.
NAMED = {
    "lone surrogate in method": "method has an unpaired surrogate U+D800",
    "lone surrogate in params": "params.note has an unpaired surrogate U+DC00",
    "lone high surrogate in an argument": "params.arguments.content has an unpaired surrogate U+D83D",
    "lone low surrogate in an argument": "params.arguments.content has an unpaired surrogate U+DE00",
    "lone surrogate in a key": "params.arguments.a key",
    "Latin-1 in an argument": "params.arguments.content has byte 0xE9 (not UTF-8)",
    "invalid UTF-8 bytes": "params.arguments.content has byte 0xFF (not UTF-8)",
}


def message_of(answer: dict[str, Any]) -> str:
    """The words of an answer: a JSON-RPC error's message, or a tool error's text."""
    if "error" in answer:
        return str(answer["error"].get("message", answer["error"]))
    return str(answer["result"]["content"][0]["text"])


def assert_every_message_answered(wire: Wire) -> None:
    # Before the session opens (the SDK waits for a first request before it reads anything else).
    early = raw_wire.answers(wire, raw_wire.CORPUS[:1] + raw_wire.CORPUS[14:15])
    assert [found is not None for _, found in early] == [True, True], early
    opened = raw_wire.initialize(wire)
    assert opened is not None and "result" in opened, opened

    answered = raw_wire.answers(wire)
    assert [case.name for case, found in answered if found is None] == []  # 0 requests without an answer
    for case, found in answered:
        assert found is not None
        if found.get("error", {}).get("http") == 413:  # past the body limit (HTTP, SSE): HTTP's answer
            assert wire.transport != "stdio" and case.name == "huge line"
            continue
        text = message_of(found)
        assert len(text) <= 300, (case.name, len(text), text[:400])
        assert found.get("id") == case.answer_id, (case.name, found)
        if case.name in CODES:
            assert found["error"]["code"] == CODES[case.name], (case.name, found)
        if case.name in NAMED:
            assert NAMED[case.name] in text, (case.name, text)
        assert "errors.pydantic.dev" not in text and "validation error for" not in text, text

    # The session works on, and nothing of what was refused was stored.
    listed = raw_wire.call(wire, "after-1", "tools/list", {})
    assert listed is not None and listed["result"]["tools"], listed
    added = raw_wire.call(
        wire,
        "after-2",
        "tools/call",
        {"name": "add_turn", "arguments": {"thread_id": "malformed-after", "role": "user", "content": "ok"}},
    )
    assert added is not None and not added["result"].get("isError"), added
    held = raw_wire.call(
        wire,
        "after-3",
        "tools/call",
        {"name": "get_working_memory", "arguments": {"thread_id": REFUSED_THREAD}},
    )
    assert held is not None, "get_working_memory got no answer"
    assert held["result"]["structuredContent"]["messages"] == [], held


@pytest.fixture(params=["relayed", "in process"])
def stdio_command(request: pytest.FixtureRequest, stdio_server: StdioServer) -> Iterator[list[str]]:
    yield [mcp_memory_command(), "serve", *(["--in-process"] if request.param == "in process" else [])]


def test_every_message_answered_over_stdio(stdio_server: StdioServer, stdio_command: list[str]) -> None:
    stdio_server.connect()  # registers its data dir: its resident server is stopped after the module
    with (
        stdio_server.stderr_path.open("ab") as stderr,
        raw_wire.stdio_wire(stdio_command, stdio_server.env, str(stdio_server.workdir), stderr) as wire,
    ):
        assert_every_message_answered(wire)


def test_every_message_answered_over_sse(sse_server: NetworkServer) -> None:
    wire = raw_wire.SseWire(sse_server.base_url)
    try:
        assert_every_message_answered(wire)
    finally:
        wire.close()


def test_every_message_answered_over_streamable_http(http_server: NetworkServer) -> None:
    assert_every_message_answered(raw_wire.HttpWire(http_server.base_url))
