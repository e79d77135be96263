"""Request buckets on Redis: every replica spends a principal's requests from the same token bucket.

One hash per principal (redis/keys.py), refilled and spent by one Lua script on the server's clock, so
the check is atomic and touches one key (valid on Redis Cluster). The client is the working-memory
one's configuration (same URL, prefix, timeouts and retries) with a pool of its own.
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


class RedisRequestBuckets:
    def __init__(self, client: RedisClient, settings: WorkingSettings, per_second: float, burst: int) -> None:
        self._client = client
        self._keys = RedisKeys(settings.key_prefix)
        self._location = location_of(settings)
        self._deadline = call_deadline(settings)
        self._args = [repr(per_second), str(burst)]
        self._take = load_script(client, "rate_take")

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings, per_second: float, burst: int) -> AsyncIterator[Self]:
        """No ping: the client connects on the first request, and a Redis down at start must not stop
        the server (the rate limit falls back to per-process buckets meanwhile)."""
        client = connect(settings)
        try:
            yield cls(client, settings, per_second, burst)
        finally:
            await client.aclose()

    async def take(self, user_id: str) -> float:
        """Spend one request of the principal; 0.0 when allowed, else the seconds until one is.
        Raises BackendUnavailableError when Redis cannot answer."""
        with translated_errors("the request rate limit", self._location, self._deadline):
            wait_ms = await self._take(keys=[self._keys.request_bucket(user_id)], args=self._args)
        return int(wait_ms) / 1000
