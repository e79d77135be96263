"""`mcp-memory serve --server URL`: a client's MCP entry in team mode, a bridge from the client's stdio to
the memory server's streamable HTTP endpoint (URL/mcp), signed in with the stored credential.

Both ends are the MCP SDK's transports: its stdio server streams toward the client, its streamable HTTP
client toward the server, over an httpx2 client whose auth is remote/credentials.py's (bearer, refreshed
before it expires, refreshed once more on a 401). JSON-RPC messages pass through unchanged both ways;
the bridge adds only the HTTP headers the streamable HTTP wire wants beside a message (the protocol
version, and at the 2026 revision the method and name), which a client on stdio cannot send: the version
negotiated by the session's initialize, or the one a 2026 request names in its `_meta`; and on every
request the caller's `headers`: the CLI's says whether the client's hooks capture the conversation
(`Mcp-Memory-Captured`, as a local relay says it to the resident server), so the server tells the model
not to call add_turn when they do (mcp/middleware/session_instructions.py).

Not signed in, or signed out mid-session (the refresh refused): one line on stderr saying to run
`mcp-memory login URL`, and exit code 1.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import PROTOCOL_VERSION_META_KEY, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from mcp_memory.errors import bounded
from mcp_memory.malformed import of_exception, stdin_lines
from mcp_memory.remote import places
from mcp_memory.remote.credentials import SignedOut, access_token, http_auth

log = logging.getLogger(__name__)

CONNECT_SECONDS = 30.0
READ_SECONDS = 300.0  # a server may hold a response stream open this long (the SDK's default)


class WireHeaders:
    """The HTTP headers to send beside each message the client sends, learnt from the session itself."""

    def __init__(self) -> None:
        self.version: str | None = None  # negotiated by initialize (2025 revisions)
        self._initialize_ids: set[Any] = set()

    def outgoing(self, message: object) -> ClientMessageMetadata | None:
        if not isinstance(message, (JSONRPCRequest, JSONRPCNotification)):
            return ClientMessageMetadata(headers=self._version_only())
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            self._initialize_ids.add(message.id)
            return None  # the handshake itself goes without a version (the transport clears it)
        params = message.params or {}
        meta = params.get("_meta")
        named = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        if not isinstance(named, str):
            return ClientMessageMetadata(headers=self._version_only())
        headers = {MCP_PROTOCOL_VERSION_HEADER: named, MCP_METHOD_HEADER: message.method}
        name = params.get(NAME_BEARING_METHODS.get(message.method, ""))
        if isinstance(name, str):
            headers[MCP_NAME_HEADER] = encode_header_value(name)
        return ClientMessageMetadata(headers=headers)

    def incoming(self, message: object) -> None:
        if isinstance(message, JSONRPCResponse) and message.id in self._initialize_ids:
            self._initialize_ids.discard(message.id)
            version = message.result.get("protocolVersion")
            if isinstance(version, str):
                self.version = version

    def _version_only(self) -> dict[str, str] | None:
        return {MCP_PROTOCOL_VERSION_HEADER: self.version} if self.version else None


async def serve_bridge(
    data_dir: Path,
    url: str,
    say: Callable[[str], None] | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> int:
    """Carry this process's stdio session to the server until the client closes it, sending `headers` with
    every HTTP request; the exit code."""
    tell = say or (lambda line: print(line, file=sys.stderr, flush=True))
    base = places.normalized(url)
    problem = ""
    try:
        await access_token(data_dir, base)  # signed in at all? say so now rather than at the first call
        await _bridge(data_dir, base, headers or {})
    except* SignedOut as group:
        problem = _first(group).reason
    except* httpx2.TransportError as group:
        problem = f"cannot reach the authorization server to renew the sign-in: {_first(group)}"
    if problem:
        tell(f"mcp-memory: {problem}")
        return 1
    return 0


def _first(group: BaseExceptionGroup[Any]) -> Any:
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@asynccontextmanager
async def _stdin() -> AsyncIterator[Any]:
    """This process's stdin read so that bytes that are not UTF-8 are refused, not replaced (malformed.py)."""
    with stdin_lines() as lines:
        yield lines


async def _bridge(data_dir: Path, base: str, always: Mapping[str, str]) -> None:
    headers = WireHeaders()
    timeout = httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS)
    async with (
        httpx2.AsyncClient(auth=http_auth(data_dir, base), timeout=timeout, headers=dict(always)) as http,
        streamable_http_client(base + "/mcp", http_client=http) as (from_server, to_server),
        _stdin() as stdin,
        stdio_server(stdin=stdin) as (from_client, to_client),
        anyio.create_task_group() as group,
    ):

        async def client_to_server() -> None:
            async for item in from_client:
                if isinstance(item, Exception):  # a line that is not JSON-RPC: answered here (malformed.py)
                    refused = of_exception(item)
                    log.warning("refused a line from the client: %s", bounded(refused.message, 160))
                    if refused.answered:
                        await to_client.send(SessionMessage(refused.answer()))
                    continue
                await to_server.send(SessionMessage(item.message, metadata=headers.outgoing(item.message)))
            group.cancel_scope.cancel()  # the client closed its end: the session is over

        async def server_to_client() -> None:
            async for item in from_server:
                if isinstance(item, Exception):
                    if isinstance(item, SignedOut):
                        raise item
                    log.warning("the server's stream failed: %s", item)
                    continue
                headers.incoming(item.message)
                await to_client.send(SessionMessage(item.message))

        group.start_soon(client_to_server)
        group.start_soon(server_to_client)
