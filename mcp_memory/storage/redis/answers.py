"""A 2025 session's JSON-RPC messages, carried to the replica that needs them: relays over Redis pub/sub.

Behind a load balancer one session is served by several replicas, and two kinds of its messages can
reach the wrong one:

- `RedisAnswerRelay`: a replica that asks a 2025-protocol client something (MCP sampling, elicitation)
  waits for the answer; the client posts it through the load balancer, which may hand it to another
  replica. That one publishes it here, and every other replica's reader hands it to the MCP surface
  (mcp/client_answers.py), which feeds it to the session's waiting request if this replica has one.
- `RedisStreamRelay`: a replica that sends the client a message outside any request (background
  sampling, a log notification) writes it to the session's stream (its GET); when that stream is open on
  another replica, it publishes the message here, and the replica holding the stream writes it there
  (mcp/client_streams.py).

Each kind has one channel per deployment prefix, read by every replica, with the session id in each
message; a replica drops what is not for it. These messages are rare (one per sampling call) and small,
so one channel beats a registry of who asked what or who holds which stream (written per request or per
stream, cleaned up after replicas that died), and beats a channel per session (a subscription per open
stream, and on a cluster a connection per shard). Like change notifications, delivery is
fire-and-forget: a message that cannot be published is logged and lost, and a request waiting on it
times out as it would without a reply.
"""

from __future__ import annotations

import json
import logging
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Self

import redis.exceptions

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.redis.client import RedisClient, connect
from mcp_memory.storage.redis.keys import RedisKeys
from mcp_memory.storage.redis.relay import ChannelRelay

log = logging.getLogger(__name__)

# (session id, the JSON-RPC message as the client posted it or the server would write it)
SessionMessageListener = Callable[[str, str], Awaitable[None]]


class SessionMessageRelay(ChannelRelay):
    """Publishes one kind of session message for the other replicas; hears theirs."""

    WHAT = "the relay of session messages"

    def __init__(
        self, client: RedisClient, settings: WorkingSettings, listener: SessionMessageListener
    ) -> None:
        super().__init__(client, settings, self.channel_of(RedisKeys(settings.key_prefix)))
        self._listener = listener

    @staticmethod
    @abstractmethod
    def channel_of(keys: RedisKeys) -> str:
        """The channel of this kind of message under the deployment's key prefix."""

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings, listener: SessionMessageListener) -> AsyncIterator[Self]:
        """No failure when Redis is down at start (the reader subscribes once it is back): messages then
        stay on the replica they reach, as without Redis."""
        client = connect(settings)
        try:
            relay = cls(client, settings, listener)
            async with relay._reading(required=False):
                yield relay
        finally:
            await client.aclose()

    async def publish(self, session_id: str, message: str) -> None:
        """Hand one message to the other replicas; one of them needs it."""
        payload = json.dumps({"origin": self._origin, "session": session_id, "message": message})
        try:
            await self._publish(payload)
        except (redis.exceptions.RedisError, TimeoutError) as e:
            # Handled here: a request waiting on this message times out, as if the client never answered.
            log.warning("%s: could not publish through Redis at %s: %s", self.WHAT, self._location, e)

    async def _receive(self, payload: str) -> None:
        try:
            body = json.loads(payload)
            origin, session_id, message = str(body["origin"]), str(body["session"]), str(body["message"])
        except (ValueError, KeyError, TypeError):
            log.warning("%s: ignoring a message this version cannot read: %.200s", self.WHAT, payload)
            return
        if origin == self._origin:  # our own went to the other replicas
            return
        try:
            await self._listener(session_id, message)
        except Exception:  # the reader's boundary, as the event relay's: one message must not stop the rest
            log.exception("%s: listener raised; continuing", self.WHAT)


class RedisAnswerRelay(SessionMessageRelay):
    """Clients' answers to server requests, for the replica that asked."""

    WHAT = "the relay of client answers"

    @staticmethod
    def channel_of(keys: RedisKeys) -> str:
        return keys.answers_channel


class RedisStreamRelay(SessionMessageRelay):
    """Server messages for a session's stream (GET), for the replica where it is open."""

    WHAT = "the relay of messages to client streams"

    @staticmethod
    def channel_of(keys: RedisKeys) -> str:
        return keys.streams_channel
