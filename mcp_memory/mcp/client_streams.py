"""A server message for a 2025 client's stream reaches the replica where that stream is open.

Outside any request, the server writes to a 2025-protocol client on the session's standalone stream, the
GET the client keeps open: background learning's MCP sampling (after add_turn with no model configured),
log notifications. Behind a round-robin balancer that GET may be open on replica B while background
learning runs on replica A, which served the add_turn; the SDK on A finds no stream and drops the
message, and the sampling request times out. With Redis configured (mcp/shared_sessions.py serves every
2025 session on every replica), this passes such a message on:

- `ClientStreams.install` / `wrap`: every session this process holds writes through a `StandaloneStream`
  (the session dispatcher's write stream, wrapped). It hands each message to the SDK as before; a
  standalone one (a request or notification tied to no client request) that this process has no stream
  for is also published (storage/redis/answers.py, the `streams` channel).
- `ClientStreams.feed` (on every other replica): if the session's stream is open here, the message goes
  to the SDK's transport, which writes it on the stream as its own. Otherwise it is dropped (debug log).

The request stays pending on A; the client's answer comes back through the balancer and reaches A by
mcp/client_answers.py. Change notifications (resources/updated, list_changed) are not passed on: every
replica hears every change through the event relay (storage/redis/relay.py) and the one holding the
stream notifies it, so passing them on too would notify twice. If no replica holds a stream, the message
is lost, as without Redis: a request times out, and learning tries again later.

The dispatcher's `_write_stream` is where this reaches into the SDK (replaced on a session the SDK's
manager created; an adopted session's dispatcher is built with the wrapper); tests/integration/
test_client_streams.py fails if it moves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp.shared.subscriptions import LISTEN_STREAM_METHODS
from mcp_types import JSONRPCNotification, JSONRPCRequest, jsonrpc_message_adapter
from pydantic import ValidationError

from mcp_memory.mcp.host import ServiceHost

log = logging.getLogger(__name__)

RELAYED, FED = "relayed", "fed"  # the routes counted in mcp_memory_stream_messages_total
_STATE_KEY = "mcp_memory.standalone_stream"  # the session's StandaloneStream, in Connection.state
_FEED_SECONDS = 5.0  # the SDK's router takes a message at once; a stuck one must not stall the relay

# session id -> its Connection on this process, or None
Locate = Callable[[str], Connection | None]


def is_standalone(item: SessionMessage) -> bool:
    """A message for the session's stream (GET) that another replica's stream must carry instead."""
    message, metadata = item.message, item.metadata
    if not isinstance(message, JSONRPCRequest | JSONRPCNotification):
        return False  # responses ride the stream of the request they answer
    if isinstance(metadata, ServerMessageMetadata) and metadata.related_request_id is not None:
        return False  # on the stream of the client request it belongs to, on this replica
    return not (isinstance(message, JSONRPCNotification) and message.method in LISTEN_STREAM_METHODS)


class StandaloneStream:
    """A session dispatcher's write stream: the SDK's own, and the other replicas for what it cannot carry."""

    def __init__(self, inner: Any, session_id: str, streams: ClientStreams) -> None:
        self._inner, self._session_id, self._streams = inner, session_id, streams

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(item)  # first: a request is pending before anyone can answer it
        if is_standalone(item):
            await self._streams.relay(self._session_id, item)

    async def deliver(self, message: SessionMessage) -> None:
        """Write a message another replica relayed, as the SDK writes its own (not passed on again)."""
        await self._inner.send(message)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> StandaloneStream:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()


class ClientStreams:
    def __init__(self, host: ServiceHost, locate: Locate, listening: Callable[[str], bool]) -> None:
        self._host, self._locate, self._listening = host, locate, listening
        host.stream_listener = self.feed

    def wrap(self, session_id: str, write_stream: Any) -> StandaloneStream:
        """The write stream to build an adopted session's dispatcher with; `remember` it once connected."""
        return StandaloneStream(write_stream, session_id, self)

    def install(self, connection: Connection) -> None:
        """Route a session's standalone messages through a StandaloneStream (once per connection)."""
        dispatcher, session_id = connection.outbound, connection.session_id
        if (
            not isinstance(dispatcher, JSONRPCDispatcher)
            or session_id is None
            or _STATE_KEY in connection.state
        ):
            return
        if isinstance(dispatcher._write_stream, StandaloneStream):  # an adopted session: built with one
            stream = dispatcher._write_stream
        else:
            stream = dispatcher._write_stream = self.wrap(session_id, dispatcher._write_stream)
        connection.state[_STATE_KEY] = stream

    async def relay(self, session_id: str, item: SessionMessage) -> None:
        """A standalone message: to the other replicas, unless the session's stream is open here."""
        relay = self._host.stream_relay
        if relay is None or self._listening(session_id):
            return
        message = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        await relay.publish(session_id, message)
        self._host.metrics.stream_message(RELAYED)
        log.debug("%s for session %s relayed", getattr(item.message, "method", "?"), session_id[:16])

    async def feed(self, session_id: str, message: str) -> None:
        """Another replica relayed a message: write it on the session's stream, if it is open here."""
        connection = self._locate(session_id) if self._listening(session_id) else None
        stream = None if connection is None else connection.state.get(_STATE_KEY)
        if not isinstance(stream, StandaloneStream):
            log.debug("relayed message for session %s: its stream is not open here", session_id[:16])
            return
        try:
            parsed = jsonrpc_message_adapter.validate_json(message, by_name=False)
        except ValidationError:
            log.debug("dropping a relayed message that is no JSON-RPC message (session %s)", session_id[:16])
            return
        try:
            with anyio.move_on_after(_FEED_SECONDS) as waited:
                await stream.deliver(SessionMessage(parsed))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("session %s closed before its relayed message arrived", session_id[:16])
            return
        if waited.cancelled_caught:
            log.warning("session %s did not take a relayed message in time", session_id[:16])
            return
        self._host.metrics.stream_message(FED)
