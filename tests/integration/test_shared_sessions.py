"""Any replica serves any session: two `mcp-memory serve --transport http` processes sharing one Redis
and one data directory, behind a real nginx balancing plain round-robin (tests/services/nginx.py).

2025-protocol clients hold a session (`Mcp-Session-Id`) that the MCP SDK keeps in the memory of the
process that opened it; mcp/shared_sessions.py keeps it in Redis, so the other replica adopts it. Without
that, every other call through the balancer answers 404. 2026 clients are stateless and must keep
working. The session rules (owner, DELETE) are checked on each replica directly with raw HTTP, so which
replica a request reaches is the test's choice, not the balancer's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_memory.mcp.server import thread_uri
from tests.security.bearer import UNMETERED, Credential, credential, tokens_env
from tests.services.mcp_client import call
from tests.services.nginx import Nginx, balanced
from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"
CALLS = 15  # per session; four sessions at once
EVENT_SECONDS = 30


@dataclass
class Deployment:
    replicas: list[NetworkServer]
    nginx: Nginx
    ann: Credential
    bob: Credential


@pytest.fixture
def deployment(start_server: ServerStarter, tmp_path: Path, redis_url: str) -> Iterator[Deployment]:
    ann, bob = credential("ann"), credential("bob")
    env = tokens_env([ann, bob], **UNMETERED) | {
        "MCP_MEMORY_WORKING__REDIS_URL": redis_url,
        "MCP_MEMORY_WORKING__KEY_PREFIX": f"mmtest-{uuid.uuid4().hex[:12]}",
    }
    replicas = [start_server("http", tmp_path / "data", env) for _ in range(2)]  # one data directory
    for nginx in balanced(replicas, tmp_path):
        yield Deployment(replicas, nginx, ann, bob)


@pytest.fixture
def unshared(start_server: ServerStarter, tmp_path: Path) -> tuple[Credential, list[NetworkServer]]:
    """Two replicas without Redis: each keeps its own sessions, as the SDK does."""
    ann = credential("ann")
    env = tokens_env([ann], **UNMETERED)
    return ann, [start_server("http", tmp_path / "data", env) for _ in range(2)]


@asynccontextmanager
async def client(url: str, token: str, **options: Any) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS, **options) as opened:
            yield opened


class RawSession:
    """One 2025 session spoken by hand, so each request goes to the replica the test names."""

    def __init__(self, http: httpx2.AsyncClient, token: str) -> None:
        self.http, self.token, self.id = http, token, ""
        self._next = 0

    def headers(self, token: str | None = None) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {token or self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": VERSION,
        }
        if self.id:
            headers["Mcp-Session-Id"] = self.id
        return headers

    async def open(self, replica: NetworkServer) -> None:
        response = await self.post(
            replica,
            "initialize",
            {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "1"},
            },
        )
        assert response.status_code == 200, response.text
        self.id = response.headers["mcp-session-id"]
        notified = await self.http.post(
            replica.url,
            headers=self.headers(),
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        assert notified.status_code == 202, notified.text

    async def post(
        self, replica: NetworkServer, method: str, params: dict[str, Any], token: str | None = None
    ) -> httpx2.Response:
        self._next += 1
        body = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        return await self.http.post(replica.url, headers=self.headers(token), json=body)

    async def result(self, replica: NetworkServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = await self.post(replica, method, params)
        assert response.status_code == 200, response.text
        message = json.loads(_data_lines(response.text)[-1])
        assert "result" in message, message
        result: dict[str, Any] = message["result"]
        return result


def _data_lines(text: str) -> list[str]:
    """The JSON messages of an event-stream body (or the body itself, when it is JSON)."""
    lines = [line[len("data:") :].strip() for line in text.splitlines() if line.startswith("data:")]
    return [line for line in lines if line] or [text]


@asynccontextmanager
async def raw(token: str) -> AsyncIterator[RawSession]:
    async with httpx2.AsyncClient(timeout=READ_TIMEOUT_SECONDS) as http:
        yield RawSession(http, token)


@pytest.mark.parametrize("mode", ["legacy", "default"])
async def test_many_calls_through_the_balancer_lose_none(deployment: Deployment, mode: str) -> None:
    """Ann and Bob, two sessions each, call at once; every call of every session must succeed."""
    options = {"mode": "legacy"} if mode == "legacy" else {}

    async def calls(who: Credential, thread_id: str) -> None:
        async with client(deployment.nginx.url, who.token, **options) as session:
            for n in range(CALLS):
                content = f"turn {n} of {thread_id} ({mode})"
                await call(session, "add_turn", thread_id=thread_id, role="user", content=content)
                await call(session, "search_memory", query=f"turn {n}")

    async with anyio.create_task_group() as tasks:
        for who in (deployment.ann, deployment.bob):
            for thread_id in ("first", "second"):
                tasks.start_soon(calls, who, thread_id)
    served = set(deployment.nginx.upstreams())
    assert served == {f"127.0.0.1:{replica.port}" for replica in deployment.replicas}, served


async def test_a_session_opened_on_one_replica_is_served_by_the_other(deployment: Deployment) -> None:
    first, second = deployment.replicas
    async with raw(deployment.ann.token) as session:
        await session.open(first)
        tools = await session.result(second, "tools/list", {})
        assert any(tool["name"] == "add_turn" for tool in tools["tools"])
        written = await session.result(
            second,
            "tools/call",
            {
                "name": "add_turn",
                "arguments": {"thread_id": "adopted", "role": "user", "content": "through the other replica"},
            },
        )
        assert not written.get("isError"), written
        assert (await session.result(first, "tools/list", {}))["tools"] == tools["tools"]


async def test_without_redis_a_session_stays_with_its_replica(
    unshared: tuple[Credential, list[NetworkServer]],
) -> None:
    ann, (first, second) = unshared
    async with raw(ann.token) as session:
        await session.open(first)
        assert (await session.result(first, "tools/list", {}))["tools"]
        response = await session.post(second, "tools/list", {})
        assert response.status_code == 404, response.text


async def test_a_replica_stopped_mid_session_loses_nothing(deployment: Deployment) -> None:
    async with client(deployment.nginx.url, deployment.ann.token, mode="legacy") as session:
        for n in range(4):
            await call(session, "add_turn", thread_id="survivor", role="user", content=f"before {n}")
        deployment.replicas[0].stop()
        for n in range(8):
            await call(session, "add_turn", thread_id="survivor", role="user", content=f"after {n}")
        memory = await call(session, "get_working_memory", thread_id="survivor")
    contents = json.dumps(memory)
    assert all(f"before {n}" in contents for n in range(4)) and "after 7" in contents


async def test_delete_ends_the_session_on_every_replica(deployment: Deployment) -> None:
    first, second = deployment.replicas
    async with raw(deployment.ann.token) as session:
        await session.open(first)
        await session.result(second, "tools/list", {})  # both replicas now hold it
        deleted = await session.http.delete(first.url, headers=session.headers())
        assert deleted.status_code == 200, deleted.text
        for replica in (first, second):
            response = await session.post(replica, "tools/list", {})
            assert response.status_code == 404, (replica.port, response.text)
            assert "Session not found" in response.text


async def test_another_credential_presenting_the_session_id_gets_404(deployment: Deployment) -> None:
    first, second = deployment.replicas
    async with raw(deployment.ann.token) as session:
        await session.open(first)
        for replica in (second, first):  # never adopted for bob, and refused where it is held
            response = await session.post(replica, "tools/list", {}, token=deployment.bob.token)
            assert response.status_code == 404, (replica.port, response.text)
            assert "Session not found" in response.text
        assert (await session.result(second, "tools/list", {}))["tools"]  # still ann's, on both


@pytest.mark.parametrize("order", ["subscribe-then-listen", "listen-then-subscribe"])
async def test_a_subscription_made_on_one_replica_notifies_on_the_others_stream(
    deployment: Deployment, order: str
) -> None:
    """The client subscribes through the first replica and listens (GET) on the second, which adopts
    the session either after the subscription or before it; the change is written through the first."""
    first, second = deployment.replicas
    uri = thread_uri("watched")
    async with raw(deployment.ann.token) as session:
        await session.open(first)
        heard, listening = anyio.Event(), anyio.Event()

        async def listen() -> None:
            headers = session.headers() | {"Accept": "text/event-stream"}
            headers.pop("Content-Type")
            async with session.http.stream("GET", second.url, headers=headers) as stream:
                assert stream.status_code == 200, await stream.aread()
                listening.set()
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and "notifications/resources/updated" in line:
                        assert json.loads(line[len("data:") :])["params"]["uri"] == uri
                        heard.set()
                        return

        with anyio.fail_after(EVENT_SECONDS):
            async with anyio.create_task_group() as tasks:
                if order == "subscribe-then-listen":
                    await session.result(first, "resources/subscribe", {"uri": uri})
                tasks.start_soon(listen)
                await listening.wait()
                if order == "listen-then-subscribe":
                    await session.result(first, "resources/subscribe", {"uri": uri})
                arguments = {"thread_id": "watched", "role": "user", "content": "a change"}
                await session.result(first, "tools/call", {"name": "add_turn", "arguments": arguments})
                await heard.wait()
