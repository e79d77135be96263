"""A 2025 client's answer to a server request reaches the replica that asked: two `mcp-memory serve`
processes sharing one Redis, behind a real nginx (tests/services/nginx.py).

extract_memories with no model configured asks the client's own model (MCP sampling) inside the call:
the request goes out on the call's event stream, and the client posts its answer as a new HTTP request,
which the balancer hands to either replica. nginx balances 2:1 (weighted round-robin: A B A, A B A, ...)
and the calls between extractions vary, so the answer lands on the replica that asked for some calls and
on the other one for others; each
replica's metrics say which happened (mcp/client_answers.py). Without the relay, every answer that lands
on the other replica is dropped there and that call fails.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from mcp_memory.storage.redis.answers import RedisAnswerRelay
from tests.helpers import HANG_SECONDS
from tests.security.bearer import UNMETERED, Credential, credential, tokens_env
from tests.services.http_clients import client, counted_by_route
from tests.services.mcp_client import call
from tests.services.nginx import Nginx, balanced
from tests.services.redis_cluster import RedisDeployment
from tests.services.redis_server import redis_settings
from tests.services.server_process import NetworkServer, ServerStarter, free_port

pytestmark = pytest.mark.anyio

CALLS = 12
CALL_SECONDS = 30  # one extraction, sampling included; a lost answer fails the call well before the client's read timeout
FACTS = [
    "The user keeps bees on the roof",
    "The user's sister lives in Lisbon",
    "The user is allergic to penicillin",
    "The user plays the cello on Sundays",
    "The user drives a green Volvo",
    "The user's dog is called Pixel",
    "The user runs a marathon every April",
    "The user collects vintage maps of Japan",
    "The user prefers tea over coffee",
    "The user works night shifts at the observatory",
    "The user learned Finnish at university",
    "The user's favourite film is Stalker",
]
LEARNING = {
    "MCP_MEMORY_LEARNING__EXTRACT_EVERY_TURNS": "0",  # only extract_memories asks the client
    "MCP_MEMORY_LEARNING__RECONCILE_EVERY_EXTRACTIONS": "0",
    "MCP_MEMORY_LEARNING__PROFILE": "false",
    "MCP_MEMORY_LEARNING__MAX_LLM_CALLS_PER_HOUR": "100000",
}


@dataclass
class Deployment:
    replicas: list[NetworkServer]
    nginx: Nginx
    ann: Credential
    ops: Credential


@pytest.fixture
def deployment(start_server: ServerStarter, tmp_path: Path, redis_url: str) -> Iterator[Deployment]:
    ann, ops = credential("ann"), credential("ops", "metrics")
    env = tokens_env([ann, ops], **UNMETERED) | LEARNING
    env |= {
        "MCP_MEMORY_WORKING__REDIS_URL": redis_url,
        "MCP_MEMORY_WORKING__KEY_PREFIX": f"mmtest-{uuid.uuid4().hex[:12]}",
    }
    replicas = [start_server("http", tmp_path / "data", env) for _ in range(2)]
    for nginx in balanced(replicas, tmp_path, weights=[2, 1]):
        yield Deployment(replicas, nginx, ann, ops)


class ClientModel:
    """The client's model: answers each sampling request with the fact the test expects next."""

    def __init__(self) -> None:
        self.next_fact = ""
        self.asked = 0

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.asked += 1
        answer = json.dumps(
            {"facts": [{"text": self.next_fact, "type": "semantic", "confidence": 0.9, "source": ["T1"]}]}
        )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer), model="client-model"
        )


async def answers_counted(replica: NetworkServer, token: str) -> dict[str, int]:
    return await counted_by_route(replica, token, "mcp_memory_client_answers_total")


async def test_sampling_answers_reach_the_replica_that_asked(deployment: Deployment) -> None:
    model = ClientModel()
    async with client(
        deployment.nginx.url, deployment.ann.token, mode="legacy", sampling_callback=model
    ) as ann:
        for n, fact in enumerate(FACTS):
            model.next_fact = fact
            await call(ann, "add_turn", thread_id="life", role="user", content=f"Note {n}: {fact.lower()}.")
            if n % 2:  # one request more: the next extraction starts at another point of nginx's cycle
                await call(ann, "get_working_memory", thread_id="life")
            with anyio.fail_after(CALL_SECONDS):
                report = await call(ann, "extract_memories", thread_id="life")
            assert report["model"] == "sampling" and report["turns_read"] == 1, report
            assert [f["content"] for f in report["facts"]] == [fact], report  # the client's answer was used
    assert model.asked == CALLS
    counted = [await answers_counted(replica, deployment.ops.token) for replica in deployment.replicas]
    total = {route: sum(c.get(route, 0) for c in counted) for route in ("here", "relayed", "fed")}
    assert total["here"] > 0 and total["fed"] > 0, counted  # both paths were taken
    assert total["here"] + total["fed"] == CALLS and total["relayed"] == total["fed"], counted


async def test_an_answer_reaches_the_other_replicas_and_never_comes_back(
    redis_deployment: RedisDeployment,
) -> None:
    settings = redis_deployment.settings()
    heard: dict[str, list[tuple[str, str]]] = {"a": [], "b": []}

    def listener(name: str) -> Any:
        async def hear(session_id: str, message: str) -> None:
            heard[name].append((session_id, message))

        return hear

    answer = '{"jsonrpc": "2.0", "id": 7, "result": {}}'
    async with (
        RedisAnswerRelay.open(settings, listener("a")) as a,
        RedisAnswerRelay.open(settings, listener("b")) as b,
    ):
        await a.publish("session-1", answer)
        await b.publish("session-2", answer)
        with anyio.fail_after(HANG_SECONDS):
            while not (heard["a"] and heard["b"]):  # noqa: ASYNC110 (answers arrive from another connection)
                await anyio.sleep(0.01)  # polling the listeners' record
    # Pub/sub keeps order per subscriber: a heard its own answer before b's, and dropped it.
    assert heard == {"a": [("session-2", answer)], "b": [("session-1", answer)]}


async def test_redis_down_at_start_does_not_stop_the_answer_relay() -> None:
    settings = redis_settings(f"redis://127.0.0.1:{free_port()}/0", timeout_seconds=0.5, retries=0)

    async def hear(session_id: str, message: str) -> None:
        raise AssertionError("nothing to hear")

    with anyio.fail_after(HANG_SECONDS):
        async with RedisAnswerRelay.open(settings, hear) as relay:
            await relay.publish("session-1", "{}")  # logged and dropped: the request it answers times out


def test_the_sdk_internals_the_relay_reaches_are_where_they_were() -> None:
    """mcp/client_answers.py reads a session's pending requests, numbers them, and feeds its transport."""
    send, receive = anyio.create_memory_object_stream[Any](1)
    dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(receive, send)  # type: ignore[arg-type]
    assert isinstance(dispatcher._pending, dict) and isinstance(dispatcher._next_id, int)
    assert "_read_stream_writer" in vars(StreamableHTTPServerTransport)
    send.close(), receive.close()
