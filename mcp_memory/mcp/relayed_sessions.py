"""POST /relay on the resident server: the stdio sessions that clients' `mcp-memory serve` relay to it
(mcp_memory/relay/), so the model and the indexes are loaded once per user instead of once per session.

One request is one session: its chunked body is the client's stdin, its chunked answer the server's
stdout, read and written by the SDK's own stdio transport and served as `run_stdio_async` serves a
process's stdin (the same handshake or per-request era, errors, back-channel for sampling, notifications,
subscriptions), with the server's configured user as on stdio. Only on the Unix socket in the user's own
data directory, like the hooks' routes.

A relay whose settings differ from this server's (another user id, tool profile, backend...; compared by
fingerprint: relay/settings.py) is refused with 409 and serves its client itself. The session's
captured-conversation flag picks its instructions (mcp/middleware/session_instructions.py). While a
session is open the resident server does not exit for idleness (mcp/transports.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import anyio
from mcp.server.stdio import stdio_server
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from mcp_memory.malformed import text_of
from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.middleware.session_instructions import captured_session
from mcp_memory.relay.upstream import CAPTURED_HEADER, PATH, SETTINGS_HEADER

log = logging.getLogger(__name__)


class RelayedSessions:
    """ASGI app for POST /relay; `open` counts the sessions being served."""

    def __init__(self, server: MemoryServer, fingerprint: str, on_close: Callable[[], None]) -> None:
        self.server = server
        self.fingerprint = fingerprint
        self.open = 0
        self._on_close = on_close

    def route(self) -> BaseRoute:
        return Route(PATH, self, methods=["POST"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        if headers.get(SETTINGS_HEADER.lower()) != self.fingerprint:
            reason = (
                "the resident server runs with other settings (MCP_MEMORY_* variables or .env) or another "
                "version of mcp-memory than this process, so it cannot serve this session"
            )
            await _answer(send, 409, {"error": reason})
            return
        self.open += 1
        token = captured_session.set(headers.get(CAPTURED_HEADER.lower()) == "true")
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/jsonl")],
                }
            )
            stdin, stdout = _RequestLines(receive), _ResponseBody(send)
            # The SDK types these as anyio files; it only iterates the one and writes to the other.
            async with stdio_server(stdin=cast(Any, stdin), stdout=cast(Any, stdout)) as (read, write):
                await self.server.serve_streams(read, write)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            captured_session.reset(token)
            self.open -= 1
            self._on_close()


class _RequestLines:
    """The request body, as the lines of a stdin (bytes that are not UTF-8 kept as surrogate escapes, so
    the answer to such a line names them: mcp/middleware/answered.py)."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = b""
        while True:
            message = await self._receive()
            if message["type"] != "http.request":
                return  # the relay is gone
            pending += message.get("body", b"")
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield text_of(line + b"\n")
            if not message.get("more_body", False):
                if pending:
                    yield text_of(pending)
                return


class _ResponseBody:
    """The response body, as a stdout."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def write(self, text: str) -> None:
        await self._send({"type": "http.response.body", "body": text.encode(), "more_body": True})

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()


async def _answer(send: Send, status: int, body: dict[str, str]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})
