"""Change notifications are as private as the memories they announce. Ann and Bob, each with a real
bearer token, subscribe to the same thread id (`default`) on both subscription paths (2025
resources/subscribe and 2026 subscriptions/listen) on every server of the setup: one process, two
processes sharing one Redis, two processes on a three-master Redis Cluster. Each session hears each of
its own user's changes exactly once, wherever the change was written, and nothing of the other user.

Counting is deterministic: every session also subscribes to a marker thread. Each user first writes the
marker once and waits until all their sessions heard it (a 2025 session's notification stream is open
from then on); after the real writes, each user writes the marker through every server, and once every
session heard them all, every notification published before them has arrived: a session hears its own
server's events at once, and another server's in that server's publish order (one Redis channel).
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.subscriptions import ResourceUpdated

from mcp_memory.mcp.server import thread_uri
from tests.security.bearer import Credential, credential, tokens_env
from tests.services.mcp_client import call
from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

THREAD, MARKER = "default", "marker"
WRITES_PER_SERVER = {"ann": 3, "bob": 2}  # different, so a leaked notification shows in either count
PATHS = ("2025", "2026")
EVENT_SECONDS = 30


class Heard:
    """What one session was told: the URIs of its resource updates, in arrival order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.changed = anyio.Event()

    def add(self, uri: str) -> None:
        self.uris.append(uri)
        self.changed.set()
        self.changed = anyio.Event()

    def count(self, thread_id: str) -> int:
        return self.uris.count(thread_uri(thread_id))

    async def wait_for_markers(self, count: int) -> None:
        while self.count(MARKER) < count:
            await self.changed.wait()


@asynccontextmanager
async def http_client(server: NetworkServer, token: str, **options: Any) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS, **options) as client:
            yield client


async def subscribe_2025(
    server: NetworkServer, token: str, heard: Heard, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    async def on_message(message: object) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            heard.add(str(message.params.uri))

    async with http_client(server, token, mode="legacy", message_handler=on_message) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for 2026
            for thread_id in (THREAD, MARKER):
                await client.subscribe_resource(thread_uri(thread_id))
        task_status.started()
        await anyio.sleep_forever()


async def listen_2026(
    server: NetworkServer, token: str, heard: Heard, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    uris = [thread_uri(THREAD), thread_uri(MARKER)]
    async with http_client(server, token) as client, client.listen(resource_subscriptions=uris) as events:
        task_status.started()
        async for event in events:
            if isinstance(event, ResourceUpdated):
                heard.add(event.uri)


def start_setup(
    setup: str, start_server: ServerStarter, tmp_path: Path, users: Sequence[Credential], redis: str | None
) -> list[NetworkServer]:
    env = tokens_env(users)
    if redis is not None:
        env |= {
            "MCP_MEMORY_WORKING__REDIS_URL": redis,
            "MCP_MEMORY_WORKING__KEY_PREFIX": f"mmtest-{uuid.uuid4().hex[:12]}",
            "MCP_MEMORY_WORKING__CLUSTER": str(setup == "two-processes-cluster").lower(),
        }
    count = 1 if setup == "one-process" else 2
    return [start_server("http", tmp_path / "data", env) for _ in range(count)]  # one long-term store


@pytest.mark.parametrize("setup", ["one-process", "two-processes-redis", "two-processes-cluster"])
async def test_each_session_hears_its_own_users_changes_once_and_nothing_else(
    setup: str, start_server: ServerStarter, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    redis = {"two-processes-redis": "redis_url", "two-processes-cluster": "redis_cluster_url"}.get(setup)
    users = {"ann": credential("ann"), "bob": credential("bob")}
    servers = start_setup(
        setup, start_server, tmp_path, list(users.values()), redis and request.getfixturevalue(redis)
    )
    heard = {(n, user, path): Heard() for n in range(len(servers)) for user in users for path in PATHS}

    async def write(user: str, server: NetworkServer, thread_id: str, content: str) -> None:
        async with http_client(server, users[user].token) as writer:
            await call(writer, "add_turn", thread_id=thread_id, role="user", content=content)

    async def markers_heard(user: str, count: int) -> None:
        with anyio.fail_after(EVENT_SECONDS):
            for (_, owner, _), session in heard.items():
                if owner == user:
                    await session.wait_for_markers(count)

    async with anyio.create_task_group() as tg:
        for (n, user, path), session in heard.items():
            subscriber = subscribe_2025 if path == "2025" else listen_2026
            await tg.start(subscriber, servers[n], users[user].token, session)
        for user in users:
            await write(user, servers[0], MARKER, "ready?")
            await markers_heard(user, 1)

        for n, server in enumerate(servers):
            for user, writes in WRITES_PER_SERVER.items():
                for i in range(writes):
                    await write(user, server, THREAD, f"{user}'s note {i} through server {n}")
        for user in users:
            for server in servers:
                await write(user, server, MARKER, "done")
        for user in users:
            await markers_heard(user, 1 + len(servers))
        tg.cancel_scope.cancel()

    told = {key: (session.count(THREAD), session.count(MARKER)) for key, session in heard.items()}
    expected = {
        (n, user, path): (WRITES_PER_SERVER[user] * len(servers), 1 + len(servers))
        for n in range(len(servers))
        for user in users
        for path in PATHS
    }
    assert told == expected
