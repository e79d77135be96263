"""A request's whole body read ahead of the app that answers it (ASGI), for the middleware that must look
at the JSON-RPC message first: the resource guard (which scope a tool needs) and admission (is it a write).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send


async def buffered(scope: Scope, receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """Read a request's whole body (None past `limit` bytes) and a receive that replays it first."""
    if scope["method"] not in ("POST", "PUT", "PATCH"):
        return b"", receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), _replay([message], receive)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None, receive
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return body, _replay([{"type": "http.request", "body": body, "more_body": False}], receive)


MESSAGES = "mcp_memory.messages"  # where the scope keeps them: the guard reads them, admission reuses


async def messages_or_413(
    scope: Scope, receive: Receive, send: Send, limit: int
) -> tuple[list[dict[str, Any]], Receive] | None:
    """The request's JSON-RPC messages and a receive that replays its body; or, past `limit` bytes,
    None once the client has been answered 413. Read and parsed once per request: a middleware further
    in finds them in the scope (the receive it is given already replays the body)."""
    if MESSAGES in scope:
        return scope[MESSAGES], receive
    body, receive = await buffered(scope, receive, limit)
    if body is None:
        await too_large(scope, receive, send)
        return None
    scope[MESSAGES] = messages(body)
    return scope[MESSAGES], receive


async def too_large(scope: Scope, receive: Receive, send: Send) -> None:
    """413: the body is past the request body limit (setting request_body_limit)."""
    answer = JSONResponse({"error": "the request body is too large"}, status_code=413)
    await answer(scope, receive, send)


def _replay(first: list[Message], receive: Receive) -> Receive:
    pending = list(first)

    async def replaying() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replaying


def messages(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a POST body (one, or a 2025-03-26 batch); none when it does not parse
    (nested past Python's stack included), which is answered with a parse error further in."""
    if not body:
        return []
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # answered by AnsweredBodies (middleware/answered.py)
        return []
    return [m for m in (parsed if isinstance(parsed, list) else [parsed]) if isinstance(m, dict)]


def tool_called(message: dict[str, Any]) -> str | None:
    """The tool a `tools/call` message names; None for any other message."""
    if message.get("method") != "tools/call":
        return None
    params = message.get("params")
    return str(params.get("name")) if isinstance(params, dict) else ""
