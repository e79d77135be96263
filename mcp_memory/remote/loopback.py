"""The redirect URI of a browser sign-in on this machine (RFC 8252 section 7.3): a listener on
127.0.0.1 at a port the OS picks, `http://127.0.0.1:<port>/callback`, that waits for the one request
the browser makes there at the end of the sign-in, takes its code and state, and answers with a short
page saying the tab can be closed.

Every connection is handled in its own task, so a browser's idle pre-connection or a favicon request
does not hold up the callback; the wait has a deadline (nobody signed in: the command ends).
"""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Self
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from anyio.abc import SocketAttribute
from mcp.shared.auth import AuthorizationCodeResult

from mcp_memory.remote.discovery import LoginFailed

HEAD_LIMIT = 16_384  # bytes of request line and headers read from the browser
READ_SECONDS = 10.0  # for one connection to send its request

SIGNED_IN_PAGE = """<!doctype html><meta charset="utf-8"><title>mcp-memory: signed in</title>
<body style="font-family: sans-serif; margin: 3em"><h1>Signed in</h1>
<p>mcp-memory is signed in. You can close this tab.</p></body>"""
REFUSED_PAGE = """<!doctype html><meta charset="utf-8"><title>mcp-memory: not signed in</title>
<body style="font-family: sans-serif; margin: 3em"><h1>Not signed in</h1>
<p>The sign-in was refused or cancelled; the terminal says why. You can close this tab.</p></body>"""


class LoopbackRedirect:
    """`async with LoopbackRedirect() as loopback:` listen; `loopback.redirect_uri` for the client's
    registration; `await loopback.wait(seconds)` for the browser's callback (the SDK's callback_handler)."""

    def __init__(self) -> None:
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        self.port = 0

    async def __aenter__(self) -> Self:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self._listener = listener
        self.port = int(listener.extra(SocketAttribute.local_port))
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._listener is not None:
            await self._listener.aclose()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def wait(self, seconds: float) -> AuthorizationCodeResult:
        """The code and state of the browser's request to /callback. LoginFailed when the authorization
        server sent an error there instead, or when nobody came within `seconds`."""
        assert self._listener is not None, "enter the LoopbackRedirect first"
        listener = self._listener
        answer: dict[str, list[str]] = {}
        try:
            with anyio.fail_after(seconds):
                async with anyio.create_task_group() as group:

                    async def handle(stream: anyio.abc.SocketStream) -> None:
                        async with stream:
                            target = await _request_target(stream)
                            if target is None or urlsplit(target).path != "/callback":
                                await _respond(stream, 404, "Not Found", "not here")
                                return
                            query = parse_qs(urlsplit(target).query)
                            refused = "code" not in query
                            await _respond(stream, 200, "OK", REFUSED_PAGE if refused else SIGNED_IN_PAGE)
                            answer.update(query)
                            group.cancel_scope.cancel()

                    await listener.serve(handle, group)
        except TimeoutError:
            raise LoginFailed(f"nobody signed in within {seconds:g} seconds") from None
        if "code" not in answer:
            error = answer.get("error", ["no code"])[0]
            description = answer.get("error_description", [""])[0]
            raise LoginFailed(f"the authorization server refused the sign-in: {error} {description}".strip())
        return AuthorizationCodeResult(
            code=answer["code"][0], state=answer.get("state", [None])[0], iss=answer.get("iss", [None])[0]
        )


async def _request_target(stream: anyio.abc.SocketStream) -> str | None:
    """The target of a GET (path and query), or None for anything else or nothing in time."""
    head = b""
    with anyio.move_on_after(READ_SECONDS):
        while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
            try:
                head += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
    parts = head.split(b"\r\n", 1)[0].split(b" ")
    if len(parts) != 3 or parts[0] != b"GET":
        return None
    return parts[1].decode("latin-1")


async def _respond(stream: anyio.abc.SocketStream, status: int, reason: str, page: str) -> None:
    body = page.encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    )
    # The browser may have gone away: the code, if any, was received all the same.
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head.encode() + body)
