"""Background sampling reaches a 2025 client whose stream is open on another replica: two `mcp-memory
serve` processes sharing one Redis, behind a real nginx (tests/services/nginx.py).

After add_turn with no model configured, background learning asks the client's own model (MCP sampling)
on the session's stream, the GET the client keeps open. nginx sends every GET to the second replica and
every other request to the first (but initialize, to either), so the first runs the learning and holds no stream: the question goes
through Redis to the second, which writes it on the stream (mcp/client_streams.py), and the client's
answer comes back to the first. Without that, the question never reaches the client and no fact is
learned.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage

from mcp_memory.mcp.server import thread_uri
from tests.security.bearer import UNMETERED, Credential, credential, tokens_env
from tests.services.http_clients import client, counted_by_route
from tests.services.mcp_client import call
from tests.services.nginx import Nginx, balanced
from tests.services.server_process import NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

FACT = "The user keeps bees on the roof"
# One background extraction, sampling included, on a loaded machine; half the sampling timeout (below): a
# lost question fails this wait, not the sampling call.
LEARN_SECONDS = 60
LEARNING = {
    "MCP_MEMORY_LEARNING__EXTRACT_EVERY_TURNS": "2",
    "MCP_MEMORY_LEARNING__RECONCILE_EVERY_EXTRACTIONS": "0",
    "MCP_MEMORY_LEARNING__PROFILE": "false",
    "MCP_MEMORY_LEARNING__MAX_LLM_CALLS_PER_HOUR": "100000",
    "MCP_MEMORY_LLM__TIMEOUT_SECONDS": "120",  # a lost question fails the test's wait, not the sampling call
}


@dataclass
class Deployment:
    calls: NetworkServer  # every request but GET and initialize
    streams: NetworkServer  # every GET
    opens: NetworkServer  # initialize
    nginx: Nginx
    ann: Credential
    ops: Credential


def address_of(replica: NetworkServer) -> str:
    return f"127.0.0.1:{replica.port}"  # as nginx logs the upstream


@pytest.fixture(params=["opened-where-it-learns", "opened-where-it-streams"])
def deployment(
    request: pytest.FixtureRequest, start_server: ServerStarter, tmp_path: Path, redis_url: str
) -> Iterator[Deployment]:
    """The replica the session is opened on (the SDK's own session) sends the question or writes it on
    the stream; the other adopts the session: both ways round."""
    ann, ops = credential("ann"), credential("ops", "metrics")
    env = tokens_env([ann, ops], **UNMETERED) | LEARNING
    env |= {
        "MCP_MEMORY_WORKING__REDIS_URL": redis_url,
        "MCP_MEMORY_WORKING__KEY_PREFIX": f"mmtest-{uuid.uuid4().hex[:12]}",
    }
    calls, streams = (start_server("http", tmp_path / "data", env) for _ in range(2))
    opens = calls if request.param == "opened-where-it-learns" else streams
    for nginx in balanced([calls], tmp_path, streams=streams, opens=opens):
        yield Deployment(calls, streams, opens, nginx, ann, ops)


class ClientModel:
    """The client's model: answers every sampling request with FACT."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.asked += 1
        answer = json.dumps(
            {"facts": [{"text": FACT, "type": "semantic", "confidence": 0.9, "source": ["T1"]}]}
        )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer), model="client-model"
        )


async def stream_messages(replica: NetworkServer, token: str) -> dict[str, int]:
    return await counted_by_route(replica, token, "mcp_memory_stream_messages_total")


async def learned(ann: Client) -> list[str]:
    found = await call(ann, "search_memory", query="bees roof", types=["fact"])
    return [hit["content"] for hit in found["results"]]


async def test_background_sampling_reaches_the_client_through_the_replica_holding_its_stream(
    deployment: Deployment,
) -> None:
    model, heard = ClientModel(), anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.set()

    async with client(
        deployment.nginx.url,
        deployment.ann.token,
        mode="legacy",
        sampling_callback=model,
        message_handler=on_message,
    ) as ann:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for 2026 clients
            await ann.subscribe_resource(thread_uri("ready"))
        with anyio.fail_after(LEARN_SECONDS):
            for n in range(10_000):  # until a change is heard: the stream is open on the second replica
                await call(ann, "set_thread_data", thread_id="ready", data={"n": n})
                with anyio.move_on_after(0.5):
                    await heard.wait()
                if heard.is_set():
                    break
        await call(ann, "add_turn", thread_id="life", role="user", content="I keep bees on the roof.")
        await call(ann, "add_turn", thread_id="life", role="assistant", content="Noted.")  # learning starts
        with anyio.fail_after(LEARN_SECONDS):
            while FACT not in await learned(ann):  # noqa: ASYNC110 (learning runs in another process)
                await anyio.sleep(0.2)  # polling the server's store: learning runs in its background
    assert model.asked == 1
    assert await stream_messages(deployment.calls, deployment.ops.token) == {"relayed": 1}
    assert await stream_messages(deployment.streams, deployment.ops.token) == {"fed": 1}
    routed = [line.split() for line in deployment.nginx.log("access.log").splitlines() if line.strip()]
    # The client's stream is logged once it closes, perhaps after this: nginx's own health check stands in.
    assert {address for method, _, address in routed if method == "GET"} == {address_of(deployment.streams)}
    opened, *called = [address for method, _, address in routed if method == "POST"]
    assert opened == address_of(deployment.opens), routed
    assert set(called) == {address_of(deployment.calls)}, routed


async def test_the_sdk_internals_the_stream_relay_reaches_are_where_they_were() -> None:
    """mcp/client_streams.py replaces a session dispatcher's write stream; the dispatcher writes through it."""
    send, receive = anyio.create_memory_object_stream[Any](1)
    dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(receive, send)  # type: ignore[arg-type]
    assert dispatcher._write_stream is send
    sent: list[SessionMessage] = []

    class Recorder:
        async def send(self, item: SessionMessage) -> None:
            sent.append(item)

    dispatcher._write_stream = Recorder()  # type: ignore[assignment]
    await dispatcher.notify("notifications/message", {"level": "info", "data": "x"})
    assert [item.message for item in sent] == [
        types.JSONRPCNotification(
            jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": "x"}
        )
    ]
    send.close(), receive.close()
