"""2025-protocol MCP sessions on Redis, so that every replica can serve every session.

One hash per session (redis/keys.py): `state` (the surface's JSON: owner, protocol version, client
params), `sub:<uri>` per resource subscription, and `ended` once the client deleted it (a tombstone that
lives out the expiry, so a replica still holding the session learns it ended). Every write and every
read re-arms the expiry in the same round trip: a session lives as long as it is used. What the state
means is the MCP surface's business (mcp/shared_sessions.py); this only keeps it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Self

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.redis.client import (
    RedisClient,
    call_deadline,
    connect,
    load_script,
    location_of,
    translated_errors,
)
from mcp_memory.storage.redis.keys import RedisKeys

WHAT = "the shared MCP sessions"
STATE, ENDED, SUBSCRIPTION = "state", "ended", "sub:"


class RedisSessionStore:
    def __init__(self, client: RedisClient, settings: WorkingSettings) -> None:
        self._client = client
        self._keys = RedisKeys(settings.key_prefix)
        self._location = location_of(settings)
        self._deadline = call_deadline(settings)
        self._touch = load_script(client, "session_touch")
        self._set_script = load_script(client, "session_set")

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings) -> AsyncIterator[Self]:
        """No ping: a Redis down at start must not stop the server (sessions stay per process meanwhile)."""
        client = connect(settings)
        try:
            yield cls(client, settings)
        finally:
            await client.aclose()

    async def save(self, session_id: str, state: str, ttl_ms: int) -> None:
        """Record a new session (a new one replaces whatever the id held)."""
        await self._set(session_id, ttl_ms, replace=True, fields=(STATE, state))

    async def touch(self, session_id: str, ttl_ms: int) -> tuple[str | None, bool, frozenset[str]]:
        """(state, ended, subscribed URIs), the expiry re-armed; (None, False, {}) when Redis does not
        know the session."""
        with translated_errors(WHAT, self._location, self._deadline, plural=True):
            flat = await self._touch(keys=[self._keys.session(session_id)], args=[ttl_ms])
        fields: dict[str, str] = dict(zip(flat[::2], flat[1::2], strict=True))
        uris = frozenset(name[len(SUBSCRIPTION) :] for name in fields if name.startswith(SUBSCRIPTION))
        return fields.get(STATE), ENDED in fields, uris

    async def end(self, session_id: str, ttl_ms: int) -> None:
        """The client deleted the session: only the tombstone stays, until the expiry."""
        await self._set(session_id, ttl_ms, replace=True, fields=(ENDED, "1"))

    async def subscribe(self, session_id: str, uri: str, ttl_ms: int) -> None:
        await self._set(session_id, ttl_ms, replace=False, fields=(SUBSCRIPTION + uri, "1"))

    async def unsubscribe(self, session_id: str, uri: str) -> None:
        with translated_errors(WHAT, self._location, self._deadline, plural=True):
            await self._client.hdel(self._keys.session(session_id), SUBSCRIPTION + uri)

    async def _set(self, session_id: str, ttl_ms: int, *, replace: bool, fields: tuple[str, str]) -> None:
        """One script: a replica that dies half-way leaves no session without its expiry."""
        with translated_errors(WHAT, self._location, self._deadline, plural=True):
            await self._set_script(
                keys=[self._keys.session(session_id)], args=[ttl_ms, "1" if replace else "0", *fields]
            )
