"""Clients' answers to server requests, carried to the replica that asked: a relay over Redis pub/sub.

A server replica that asks a 2025-protocol client something (MCP sampling, elicitation) waits for the
answer; the client posts it through the load balancer, which may hand it to another replica. That one
publishes it here, with its session id, on one channel per deployment prefix; every other replica's
reader hands it to the MCP surface (mcp/client_answers.py), which feeds it to the session's waiting
request if this replica has one, and drops it otherwise. Answers are rare (one per sampling call) and
small, so one channel read by every replica beats a registry of who asked what, which would have to be
written per request and cleaned up after replicas that died. Like change notifications, delivery is
fire-and-forget: an answer that cannot be published is logged and lost, and the request that waited
for it times out as it would without a reply.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Self

import redis.exceptions

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.redis.client import RedisClient, connect
from mcp_memory.storage.redis.keys import RedisKeys
from mcp_memory.storage.redis.relay import ChannelRelay

log = logging.getLogger(__name__)

# (session id, the client's JSON-RPC message as it posted it)
AnswerListener = Callable[[str, str], Awaitable[None]]


class RedisAnswerRelay(ChannelRelay):
    """Publishes the answers this replica received for requests it did not send; hears the others'."""

    WHAT = "the relay of client answers"

    def __init__(self, client: RedisClient, settings: WorkingSettings, listener: AnswerListener) -> None:
        super().__init__(client, settings, RedisKeys(settings.key_prefix).answers_channel)
        self._listener = listener

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings, listener: AnswerListener) -> AsyncIterator[Self]:
        """No failure when Redis is down at start (the reader subscribes once it is back): answers
        then stay on the replica they reach, as without Redis."""
        client = connect(settings)
        try:
            relay = cls(client, settings, listener)
            async with relay._reading(required=False):
                yield relay
        finally:
            await client.aclose()

    async def publish(self, session_id: str, message: str) -> None:
        """Hand one answer to the other replicas; one of them asked."""
        payload = json.dumps({"origin": self._origin, "session": session_id, "message": message})
        try:
            await self._publish(payload)
        except (redis.exceptions.RedisError, TimeoutError) as e:
            # Handled here: the request that waits for this answer times out, as if the client never answered.
            log.warning("could not relay a client answer through Redis at %s: %s", self._location, e)

    async def _receive(self, payload: str) -> None:
        try:
            body = json.loads(payload)
            origin, session_id, message = str(body["origin"]), str(body["session"]), str(body["message"])
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring a client answer this version cannot read: %.200s", payload)
            return
        if origin == self._origin:  # our own went to the other replicas
            return
        try:
            await self._listener(session_id, message)
        except Exception:  # the reader's boundary, as the event relay's: one answer must not stop the rest
            log.exception("client answer listener raised; continuing")
