"""A 2025 client's answer to a server request reaches the replica that asked, behind any load balancer.

The server asks a 2025-protocol client things (MCP sampling inside extract_memories, elicitation): the
request goes out on the session's stream of the replica that waits for the answer, and the client posts
its answer (a JSON-RPC response: an id, `result` or `error`, no `method`) as a new HTTP request, which a
round-robin balancer may hand to another replica. There the SDK answers 202 Accepted and drops it ("a
late or unknown request id"), and the asking replica's request times out. With Redis configured
(mcp/shared_sessions.py serves every 2025 session on every replica), this passes such an answer on:

- `ClientAnswers.unclaimed` (on the POST, before the SDK serves it): an answer this process has no
  request pending for. Once the SDK accepted the POST (202: the session exists here and belongs to the
  request's credential, by the SDK's own checks), `relay` publishes it (storage/redis/answers.py).
- `ClientAnswers.feed` (on every other replica): if this process has that request pending for the
  session, the answer goes into the session's transport, as if the client had posted it here, and the
  SDK's waiting request completes. Otherwise it is dropped (debug log); the request it answered has
  timed out, or never existed.

The SDK numbers a session's requests from 1 on every process, so two replicas serving one session would
both wait for an answer with id 1. `spread_request_ids` starts each process's numbering for the session
at a random point instead, so an id names one request among the replicas.

Pending requests live in the SDK's `JSONRPCDispatcher._pending` (the session's `Connection.outbound`),
and a transport takes posted messages through `_read_stream_writer`: with shared_sessions.py's registry,
the places this reaches into the SDK; tests/integration/test_client_answers.py fails if they move.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.types import Message, Receive

from mcp_memory.mcp.host import ServiceHost

log = logging.getLogger(__name__)

# Below 2**53, so a client that reads JSON numbers as doubles echoes every id exactly.
_ID_SPACE = 2**52
_FEED_SECONDS = 5.0  # the session's read loop takes a message at once; a stuck one must not stall the relay

HERE, RELAYED, FED = "here", "relayed", "fed"  # the routes counted in mcp_memory_client_answers_total

# session id -> (its Connection, its transport) on this process, or None
Locate = Callable[[str], tuple[Connection, StreamableHTTPServerTransport] | None]


@dataclass(frozen=True)
class Answer:
    session_id: str
    request_id: str | int
    message: str


def spread_request_ids(connection: Connection) -> None:
    """Number this process's requests on the session from a random point (see the module's docstring)."""
    dispatcher = connection.outbound
    if isinstance(dispatcher, JSONRPCDispatcher):
        dispatcher._next_id = secrets.randbelow(_ID_SPACE // 2)


def _pending_here(connection: Connection, request_id: str | int) -> bool:
    dispatcher = connection.outbound
    return isinstance(dispatcher, JSONRPCDispatcher) and coerce_request_id(request_id) in dispatcher._pending


def _answered_id(body: bytes) -> str | int | None:
    """The id a posted JSON-RPC response answers; None for anything else (the SDK 2.3 takes no batches)."""
    if b'"result"' not in body and b'"error"' not in body:
        return None  # a request or notification, as most posts are: not parsed twice
    try:
        message: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(message, dict)
        or "method" in message
        or not ("result" in message or "error" in message)
    ):
        return None
    request_id = message.get("id")
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


class ClientAnswers:
    def __init__(self, host: ServiceHost, locate: Locate) -> None:
        self._host, self._locate = host, locate
        host.answer_listener = self.feed

    async def unclaimed(self, session_id: str, receive: Receive) -> tuple[Receive, Answer | None]:
        """Read the POST's body: the receive to serve it with (the body again), and the answer in it
        when this process has no request pending for it."""
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: the SDK sees it too
                return _replay(b"", receive, first=message), None
            body += message.get("body", b"")
            more = message.get("more_body", False)
        replayed = _replay(body, receive)
        request_id = _answered_id(body)
        if request_id is None:
            return replayed, None
        held = self._locate(session_id)
        if held is not None and _pending_here(held[0], request_id):
            self._host.metrics.client_answer(HERE)
            return replayed, None
        return replayed, Answer(session_id, request_id, body.decode("utf-8", errors="replace"))

    async def relay(self, answer: Answer) -> None:
        """The SDK accepted the answer (202) and dropped it: to the replica that asked, through Redis."""
        relay = self._host.answer_relay
        if relay is None:
            return
        await relay.publish(answer.session_id, answer.message)
        self._host.metrics.client_answer(RELAYED)
        log.debug("answer to request %r of session %s relayed", answer.request_id, answer.session_id[:16])

    async def feed(self, session_id: str, message: str) -> None:
        """Another replica relayed an answer: complete the request it answers, if it is pending here."""
        try:
            parsed = jsonrpc_message_adapter.validate_json(message, by_name=False)
        except ValidationError:
            log.debug("dropping a relayed answer that is no JSON-RPC message (session %s)", session_id[:16])
            return
        if not isinstance(parsed, JSONRPCResponse | JSONRPCError) or parsed.id is None:
            return
        held = self._locate(session_id)
        if held is None or not _pending_here(held[0], parsed.id):
            log.debug("relayed answer to request %r of session %s is not ours", parsed.id, session_id[:16])
            return
        writer = held[1]._read_stream_writer
        if writer is None:  # the session is closing
            return
        try:
            with anyio.move_on_after(_FEED_SECONDS) as waited:
                await writer.send(SessionMessage(parsed))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("session %s closed before its relayed answer arrived", session_id[:16])
            return
        if waited.cancelled_caught:
            log.warning("session %s did not take a relayed answer in time", session_id[:16])
            return
        self._host.metrics.client_answer(FED)


def _replay(body: bytes, receive: Receive, first: Message | None = None) -> Receive:
    """A receive that gives `body` (or `first`) once, then whatever the client sends next."""
    pending: list[Message] = [first or {"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
