"""Every message answered, the ones that are not well-formed JSON-RPC too (mcp_memory/malformed.py says
what they are answered).

- stdio, a relayed stdio session and SSE: the SDK's transports hand what they cannot read to the session
  as an exception, which its dispatcher logs at DEBUG and drops, so the client waits for an answer that
  never comes (before the first request it is not even seen). `AnsweredReads` sits between the
  transport and the session: it answers such an item on the write stream and passes the rest on.
  Over stdio, bytes that are not UTF-8 reach it as surrogate escapes (malformed.py `stdin_lines`), not
  replaced.
- streamable HTTP: `AnsweredBodies` reads a POST's body before the SDK does and answers one that is not
  well-formed with HTTP 400 and the JSON-RPC error (the SDK's own answers would be pydantic's report
  or a parse error that does not name the field).
Nothing of a refused message reaches a handler: nothing stored changes.
"""

from __future__ import annotations

import contextvars
import logging
from contextlib import suppress

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory.errors import bounded
from mcp_memory.malformed import Refusal, of_exception, refusal
from mcp_memory.mcp.middleware.request_body import buffered, too_large

log = logging.getLogger(__name__)


class AnsweredReads:
    """A session's read stream with what the transport could not read answered on `write` and left out."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
    ) -> None:
        self._inner, self._write = inner, write
        self.last_context: contextvars.Context | None = None  # the sender's context, as the SDK's has

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            self.last_context = getattr(self._inner, "last_context", None)
            if not isinstance(item, Exception):
                return item
            await self._answer(of_exception(item))

    async def _answer(self, refused: Refusal) -> None:
        noted(refused)
        if not refused.answered:
            return
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # over: nobody to answer
            await self._write.send(SessionMessage(refused.answer()))

    def __aiter__(self) -> AnsweredReads:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def __aenter__(self) -> AnsweredReads:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


def noted(refused: Refusal) -> None:
    """One log line per refused message (its text is the client's data: the refusal only, bounded)."""
    answer = "answered" if refused.answered else "not answered (a notification or a response)"
    log.warning("refused a message, %s %s: %s", answer, refused.code, bounded(refused.message, 160))


class AnsweredBodies:
    """ASGI, in front of the streamable HTTP endpoint: a POST whose body is not one well-formed JSON-RPC
    message is answered 400 with its JSON-RPC error; the rest goes on, its body replayed."""

    def __init__(self, app: ASGIApp, *, endpoint: str, max_body: int) -> None:
        self.app, self.endpoint, self.max_body = app, endpoint.rstrip("/"), max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.endpoint:
            await self.app(scope, receive, send)
            return
        body, receive = await buffered(scope, receive, self.max_body)
        if body is None:
            await too_large(scope, receive, send)
            return
        refused = refusal(body)
        if refused is None:
            await self.app(scope, receive, send)
            return
        noted(refused)
        content = refused.body()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(content)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})
