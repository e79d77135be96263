"""Principals with real bearer tokens, and MCP clients that present them over streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_memory.security.static_tokens import hash_token, new_token
from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer, ServerStarter


@dataclass(frozen=True)
class Credential:
    user_id: str
    token: str
    scopes: tuple[str, ...] = ("read", "write")
    expired: bool = False
    groups: tuple[str, ...] = ()  # what a space's "group:<id>" members match

    def entry(self) -> dict[str, object]:
        entry: dict[str, object] = {
            "sha256": hash_token(self.token),
            "user_id": self.user_id,
            "name": f"{self.user_id}-{'-'.join(self.scopes)}",
            "scopes": list(self.scopes),
        }
        if self.groups:
            entry["groups"] = list(self.groups)
        if self.expired:
            entry["expires_at"] = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
        return entry


def credential(user_id: str, *scopes: str, expired: bool = False, groups: tuple[str, ...] = ()) -> Credential:
    return Credential(user_id, new_token(), tuple(scopes) or ("read", "write"), expired, groups)


def tokens_env(credentials: Iterable[Credential], **extra: str) -> dict[str, str]:
    """Server environment configuring these tokens (hashes only) inline."""
    return {"MCP_MEMORY_SECURITY__TOKENS": json.dumps([c.entry() for c in credentials]), **extra}


# These servers test who may do what, not how fast: a test that makes many calls in a row must not
# meet the per-principal rate limit (at a few ms a call it would). test_limits.py passes its own rates.
UNMETERED = {
    "MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "100000",
    "MCP_MEMORY_SECURITY__REQUEST_BURST": "100000",
}


def start_with_tokens(
    start_server: ServerStarter, tmp_path: Path, credentials: Iterable[Credential], **extra: str
) -> NetworkServer:
    return start_server("http", tmp_path / "data", tokens_env(credentials, **{**UNMETERED, **extra}))


@asynccontextmanager
async def bearer_client(server: NetworkServer, token: str | None) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP that sends `Authorization: Bearer <token>` on every request."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS) as client:
            yield client


async def post_tool_call(
    url: str, token: str | None, tool: str, arguments: dict[str, object], *, authorization: str | None = None
) -> httpx2.Response:
    """A raw tools/call over streamable HTTP, to read the HTTP status and challenge the guard answers.
    `authorization`: a whole Authorization header to send instead of `Bearer <token>`."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if authorization is not None:
        headers["Authorization"] = authorization
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, headers=headers, content=json.dumps(message))


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a response's `WWW-Authenticate: Bearer ...` header."""
    import re

    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))
