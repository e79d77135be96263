"""What a message that is not well-formed JSON-RPC is answered, on every transport.

JSON-RPC 2.0 answers a message that does not parse with a `-32700` Parse error and one that is not a
request object with `-32600` Invalid Request, both with `id: null` when the id cannot be read. Invalid
Unicode inside JSON that parses (a lone surrogate escape such as `"\\ud800"`, which a JavaScript client
produces by slicing through an emoji, or bytes that are not UTF-8) is refused, not repaired: the answer
(`-32602` Invalid params, or `-32600` outside params) names the field and the character, with the
request's id. Nothing of a refused message reaches a handler, so nothing stored changes. A notification
or a response is never answered (JSON-RPC), only logged.

`refusal(raw)` decides; the transports answer with it: stdio and SSE sessions through their read stream
(mcp/middleware/malformed.py), streamable HTTP before the SDK reads the body, the remote bridge on its
stdio side.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types
from pydantic import ValidationError

from mcp_memory.errors import bounded, shown

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ESCAPED_BYTE = range(0xDC80, 0xDD00)  # how Python's surrogateescape keeps a byte that is not UTF-8
_MAX_ID_CHARS = 256  # an id echoed back in an answer, at most


@dataclass(frozen=True)
class Refusal:
    """Why a message is refused, and the answer it gets (None for a notification or a response)."""

    code: int
    message: str
    id: str | int | None
    answered: bool = True

    def answer(self) -> mcp_types.JSONRPCError:
        return mcp_types.JSONRPCError(
            jsonrpc="2.0", id=self.id, error=mcp_types.ErrorData(code=self.code, message=self.message)
        )

    def body(self) -> bytes:
        """The answer as JSON (the body of an HTTP answer)."""
        return self.answer().model_dump_json(by_alias=True, exclude_unset=True).encode()


def text_of(raw: str | bytes) -> str:
    """A line or body as text; bytes that are not UTF-8 kept as surrogate escapes, so `refusal` names them."""
    return raw.decode("utf-8", errors="surrogateescape") if isinstance(raw, bytes) else raw


def refusal(raw: str | bytes) -> Refusal | None:
    """None when `raw` is one well-formed JSON-RPC message; else why not, and its answer."""
    text = text_of(raw)
    if text.startswith("\ufeff"):
        return _parse_error("it starts with a byte order mark (U+FEFF); send the JSON without one", text)
    try:
        parsed = json.loads(text)
    except RecursionError:
        return _parse_error("it is nested too deeply", text)
    except ValueError as e:
        where = (
            f" ({e.msg.removesuffix(' at')} at character {e.pos:,})"
            if isinstance(e, json.JSONDecodeError)
            else ""
        )
        return _parse_error(f"it is not JSON{where}", text)
    return checked(parsed, raw_escapes=_SURROGATE.search(text) is not None)


def checked(parsed: Any, *, raw_escapes: bool = False) -> Refusal | None:
    """A parsed message: None when it is well-formed JSON-RPC, else its refusal."""
    ident = _id_of(parsed)
    answered = not _is_notification_or_response(parsed)
    try:
        bad = _first_bad_string(parsed, "")
    except RecursionError:
        return Refusal(INVALID_REQUEST, "Invalid Request: the message is nested too deeply", ident, answered)
    if bad is not None:
        path, value = bad
        found = _SURROGATE.search(value)
        assert found is not None
        code = ord(found.group())
        what = (
            f"byte 0x{code - 0xDC00:02X} (not UTF-8)"
            if raw_escapes and code in _ESCAPED_BYTE
            else f"an unpaired surrogate U+{code:04X} (half of a character)"
        )
        kind = INVALID_PARAMS if path.startswith("params") else INVALID_REQUEST
        message = (
            f"Invalid Unicode: {path or 'a key'} has {what} at offset {found.start():,}; "
            "nothing was done. Send valid UTF-8 text (a string sliced through an emoji loses half of it)"
        )
        return Refusal(kind, bounded(message), ident, answered)
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except ValidationError:
        return Refusal(INVALID_REQUEST, _not_a_message(parsed), ident, answered)
    return None


def of_exception(error: Exception) -> Refusal:
    """The refusal of what a transport could not read (the SDK hands its pydantic error on)."""
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors(include_url=False)[0]
        raw = first.get("input")
        # What did not parse comes as its text; what parsed but is no message, as its value.
        unparsed = first["type"] in ("json_invalid", "string_unicode") and isinstance(raw, str | bytes)
        found = refusal(raw) if unparsed else checked(raw)
        if found is not None:
            return found
        return Refusal(INVALID_REQUEST, bounded(f"Invalid Request: {first['msg']}"), _id_of(raw))
    return Refusal(PARSE_ERROR, "Parse error: the message could not be read", None)


def _parse_error(why: str, text: str) -> Refusal:
    got = shown(text.rstrip("\r\n"), 16) if text.strip() else "a blank line"
    message = f"Parse error: {why}; got {got}. Send one JSON-RPC 2.0 message per line (or request body)"
    return Refusal(PARSE_ERROR, bounded(message), None)


def _not_a_message(parsed: Any) -> str:
    if isinstance(parsed, list):
        got = f"a JSON array of {len(parsed):,} items (batches are not supported)"
    elif not isinstance(parsed, dict):
        got = f"the JSON value {shown(parsed, 16)}"
    else:
        got = f"an object with the keys {shown(', '.join(map(str, parsed)), 60)}"
    return bounded(
        f'Invalid Request: expected a JSON-RPC 2.0 object ("jsonrpc": "2.0", a "method" and, for a '
        f'request, an "id"), got {got}'
    )


def _is_notification_or_response(parsed: Any) -> bool:
    """What JSON-RPC never answers: a message with a method and no id, or an answer of the client's."""
    if not isinstance(parsed, dict):
        return False
    if "method" in parsed:
        return "id" not in parsed
    return "id" in parsed and ("result" in parsed or "error" in parsed)


def _id_of(parsed: Any) -> str | int | None:
    """The message's id, when it can be echoed back safely."""
    if not isinstance(parsed, dict):
        return None
    ident = parsed.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    if isinstance(ident, str) and (len(ident) > _MAX_ID_CHARS or _SURROGATE.search(ident)):
        return None
    return ident


def _first_bad_string(value: Any, path: str) -> tuple[str, str] | None:
    """The first string (key or value) holding a surrogate, and where: `params.arguments.content`."""
    if isinstance(value, str):
        return (path, value) if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, inner in value.items():
            if _SURROGATE.search(key):
                return (f"{path}.a key" if path else "a key", key)
            found = _first_bad_string(inner, f"{path}.{key}" if path else key)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found = _first_bad_string(inner, f"{path}[{index}]")
            if found is not None:
                return found
    return None


@contextmanager
def stdin_lines() -> Iterator[Any]:
    """The process's stdin as lines of text for the SDK's stdio transport, bytes that are not UTF-8 kept
    as surrogate escapes (the SDK's own reading replaces them with U+FFFD unsaid). As the SDK does, the
    wire is read from a private copy of fd 0 while fd 0 itself reads /dev/null, so nothing a handler or
    a child process reads takes the client's messages; fd 0 is put back on exit."""
    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:  # no fd 0 to claim (stdin replaced in process): read the stream in place, as the SDK
        in_place = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
        try:
            yield anyio.wrap_file(in_place)
        finally:
            in_place.detach()  # closing it would close sys.stdin's buffer
        return
    empty = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(empty, 0)
    finally:
        os.close(empty)
    # closefd=False: a worker thread may still block on the descriptor after the session ends (as the SDK).
    wire = TextIOWrapper(os.fdopen(private, "rb", closefd=False), encoding="utf-8", errors="surrogateescape")
    try:
        yield anyio.wrap_file(wire)
    finally:
        os.dup2(private, 0)
