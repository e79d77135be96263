"""What a message that is not well-formed JSON-RPC is answered (mcp_memory/malformed.py), and how an error
shows what it was given (errors.py); the real server over each transport: tests/e2e/test_every_message_answered.py."""

from __future__ import annotations

import pytest

from mcp_memory.errors import bounded, shown
from mcp_memory.malformed import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, refusal


@pytest.mark.parametrize(
    ("raw", "code", "ident", "words"),
    [
        (b"not json", PARSE_ERROR, None, "it is not JSON (Expecting value at character 0)"),
        (b"", PARSE_ERROR, None, "got a blank line"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"', PARSE_ERROR, None, "Expecting ',' delimiter"),
        ("\ufeff{}".encode(), PARSE_ERROR, None, "byte order mark"),
        (b"[" * 50_000, PARSE_ERROR, None, "nested too deeply"),
        (b"[1, 2]", INVALID_REQUEST, None, "a JSON array of 2 items (batches are not supported)"),
        (b'{"id": 7, "method": "ping"}', INVALID_REQUEST, 7, "expected a JSON-RPC 2.0 object"),
        (
            b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"arguments":{"content":"ab\\ud83d"}}}',
            INVALID_PARAMS,
            "a",
            "params.arguments.content has an unpaired surrogate U+D83D (half of a character) at offset 2",
        ),
        (
            b'{"jsonrpc":"2.0","id":"b","method":"ping","params":{"x":["ok","\xff"]}}',
            INVALID_PARAMS,
            "b",
            "params.x[1] has byte 0xFF (not UTF-8) at offset 0",
        ),
        (b'{"jsonrpc":"2.0","id":"c","method":"pi\\udc00ng"}', INVALID_REQUEST, "c", "method has"),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', INVALID_REQUEST, None, "id has"),
    ],
)
def test_a_malformed_message_is_refused_with_its_code_and_id(
    raw: bytes, code: int, ident: object, words: str
) -> None:
    refused = refusal(raw)
    assert refused is not None and refused.answered
    assert (refused.code, refused.id) == (code, ident)
    assert words in refused.message and len(refused.message) <= 300
    assert refused.answer().model_dump()["id"] == ident  # the answer is a JSON-RPC error with that id


def test_a_well_formed_message_is_not_refused() -> None:
    assert (
        refusal(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}')
        is None
    )
    assert refusal('{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert (
        refusal(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"t":"caf\xc3\xa9 \\ud83d\\ude00"}}')
        is None
    )


def test_a_notification_or_response_with_invalid_unicode_is_refused_unanswered() -> None:
    notification = refusal(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\ud800"}}')
    response = refusal(b'{"jsonrpc":"2.0","id":3,"result":{"a":"\\ud800"}}')
    assert notification is not None and not notification.answered
    assert response is not None and not response.answered


def test_an_echo_is_a_short_prefix_with_its_length() -> None:
    assert shown("t" * 100_000) == "'" + "t" * 40 + "…' (100,000 characters)"
    assert shown("bad id!") == "'bad id!'"
    assert shown("a\ud800\n") == "'a\\ud800\\n'"  # escaped: no lone surrogate goes back on the wire
    assert len(bounded("x" * 1000)) == 300 and bounded("short") == "short"
