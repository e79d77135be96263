"""Trigger counters on Redis (TriggerCounters), shared by every replica and worker process.

One hash per (user, key) in the user's hash slot (redis/keys.py): `n` the number, `mark` the mark. An
increment is one Lua script (HINCRBY, and PEXPIRE when it created the counter), so it is atomic and
its value is seen by exactly one caller; compare-and-set is one script too. Forgetting SCANs the user's
counters and UNLINKs them. The client is the working-memory one's configuration (same URL, prefix,
timeouts and retries) with a pool of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any, Self

from redis.commands.core import AsyncScript

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

_UNLINK_BATCH = 500


class RedisTriggerCounters:
    def __init__(self, client: RedisClient, settings: WorkingSettings) -> None:
        self._client = client
        self._keys = RedisKeys(settings.key_prefix)
        self._location = location_of(settings)
        self._deadline = call_deadline(settings)
        self._increment = load_script(client, "counter_increment")
        self._compare_and_set = load_script(client, "counter_compare_and_set")

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings) -> AsyncIterator[Self]:
        client = connect(settings)
        try:
            counters = cls(client, settings)
            with counters._errors():
                await client.ping()
            yield counters
        finally:
            await client.aclose()

    async def increment(
        self, user_id: str, key: str, *, by: int = 1, ttl_seconds: float | None = None
    ) -> int:
        ttl_ms = 0 if ttl_seconds is None else max(1, round(ttl_seconds * 1000))
        return int(
            await self._run(self._increment, [self._keys.learning_counter(user_id, key)], [by, ttl_ms])
        )

    async def read(self, user_id: str, key: str) -> str | None:
        with self._errors():
            mark = await self._client.hget(self._keys.learning_counter(user_id, key), "mark")
        return None if mark is None else str(mark)

    async def compare_and_set(self, user_id: str, key: str, expected: str | None, value: str) -> bool:
        args = ["" if expected is None else expected, value, "0" if expected is None else "1"]
        return bool(await self._run(self._compare_and_set, [self._keys.learning_counter(user_id, key)], args))

    async def forget(self, user_id: str, *, prefix: str = "") -> int:
        pattern = self._keys.learning_counter_pattern(user_id, prefix)
        removed = 0
        with self._errors():
            found = [key async for key in self._client.scan_iter(match=pattern, count=500)]
            # All in the user's slot, so a multi-key UNLINK is valid on a cluster too.
            for start in range(0, len(found), _UNLINK_BATCH):
                removed += int(await self._client.unlink(*found[start : start + _UNLINK_BATCH]))
        return removed

    async def _run(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        with self._errors():
            return await script(keys=list(keys), args=list(args))

    def _errors(self) -> AbstractContextManager[None]:
        return translated_errors("the learning counters", self._location, self._deadline, plural=True)
