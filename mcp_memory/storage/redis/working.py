"""Working memory on Redis: shared by every server replica, expiring on its own, safe under concurrency.

Plain Redis data structures only (a hash and a list per thread, see redis/keys.py), so it runs on
Redis 6.2+, Valkey and Redis Cluster. Every write to a thread is one Lua script (redis/scripts/),
registered once and run by EVALSHA (redis-py reloads it after a SCRIPT FLUSH or a failover).

The user's thread index lives in another hash slot than the thread, so it cannot share the thread's
atomic step on a cluster. It is written first, by an idempotent ZADD: a crash between the two calls
leaves at worst a listed thread that does not exist, which readers skip and later prune; a thread
that exists is always listed.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Self, cast

from redis.commands.core import AsyncScript

from mcp_memory.config import WorkingSettings
from mcp_memory.errors import InvalidInputError
from mcp_memory.models import Message, Scope, ThreadInfo, ThreadTotals, WorkingMemory, utcnow
from mcp_memory.storage.base import WorkingForgetCount
from mcp_memory.storage.redis.client import (
    RedisClient,
    ScriptArg,
    call_deadline,
    connect,
    load_script,
    location_of,
    translated_errors,
)
from mcp_memory.storage.redis.keys import RedisKeys, ThreadKeys

# A listed thread missing for longer than this was a failed first write, not one being created now.
_INDEX_GRACE_SECONDS = 60
_EPOCH = datetime.fromtimestamp(0, UTC)
_SCRIPTS = [
    "append",
    "get",
    "restore",
    "compact",
    "set_data",
    "lease_take",
    "lease_release",
    "forget_message",
    "forget_thread",
    "index_thread",
]


class RedisWorkingMemoryStore:
    """Each thread's live context in Redis; see the module docstring for the layout and guarantees."""

    def __init__(self, client: RedisClient, settings: WorkingSettings) -> None:
        self._client = client
        self._keys = RedisKeys(settings.key_prefix)
        self._ttl_ms = (settings.ttl_seconds or 0) * 1000
        self._index_ttl_ms = self._ttl_ms and self._ttl_ms + _INDEX_GRACE_SECONDS * 1000
        self._location = location_of(settings)
        self._deadline = call_deadline(settings)
        self._scripts: dict[str, AsyncScript] = {
            name: load_script(client, name, prelude=True) for name in _SCRIPTS
        }

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: WorkingSettings) -> AsyncIterator[Self]:
        client = connect(settings)
        try:
            store = cls(client, settings)
            with store._errors():
                await client.ping()
            yield store
        finally:
            await client.aclose()

    def _errors(self) -> AbstractContextManager[None]:
        return translated_errors("working memory", self._location, self._deadline)

    async def _run(self, script: str, keys: Sequence[str], args: Sequence[ScriptArg]) -> Any:
        with self._errors():
            return await self._scripts[script](keys=list(keys), args=list(args))

    async def _index(self, user_id: str, thread_id: str) -> None:
        await self._run(
            "index_thread", [self._keys.user_threads(user_id)], [time.time(), thread_id, self._index_ttl_ms]
        )

    def _thread(self, user_id: str, thread_id: str) -> ThreadKeys:
        return self._keys.thread(user_id, thread_id)

    async def append(
        self, user_id: str, thread_id: str, message: Message, *, context_window: int | None = None
    ) -> ThreadTotals:
        await self._index(user_id, thread_id)
        keys = self._thread(user_id, thread_id)
        args: list[ScriptArg] = [
            message.model_dump_json(),
            message.token_count,
            context_window or "",
            _now(),
            self._ttl_ms,
            message.id,
        ]
        tokens, count, window = await self._run("append", keys.data_keys, args)
        return ThreadTotals(
            token_count=int(tokens), message_count=int(count), context_window=_int_or_none(window)
        )

    async def get(self, user_id: str, thread_id: str) -> WorkingMemory | None:
        reply = await self._run("get", self._thread(user_id, thread_id).data_keys, [])
        if reply is None:
            return None
        flat, messages = reply
        meta = dict(zip(flat[::2], flat[1::2], strict=True))
        return WorkingMemory(
            user_id=user_id,
            thread_id=thread_id,
            messages=[Message.model_validate_json(m) for m in messages],
            summary=meta.get("summary", ""),
            summary_token_count=int(meta.get("summary_tokens", 0)),
            summary_version=int(meta.get("summary_version", 0)),
            context_window=_int_or_none(meta.get("context_window")),
            data=json.loads(meta.get("data", "{}")),
            updated_at=_parse_time(meta.get("updated_at")),
        )

    async def exists(self, user_id: str, thread_id: str) -> bool:
        with self._errors():
            return bool(await self._client.exists(self._thread(user_id, thread_id).meta))

    async def restore(self, memory: WorkingMemory) -> bool:
        await self._index(memory.user_id, memory.thread_id)
        keys = self._thread(memory.user_id, memory.thread_id)
        args: list[ScriptArg] = [
            memory.summary,
            memory.summary_token_count,
            memory.summary_version,
            memory.context_window or "",
            json.dumps(memory.data),
            memory.token_count,
            _now(),
            self._ttl_ms,
        ]
        args += [m.model_dump_json() for m in memory.messages]
        return bool(await self._run("restore", keys.data_keys, args))

    async def compact(
        self,
        user_id: str,
        thread_id: str,
        *,
        expected_version: int,
        removed_ids: Sequence[str],
        summary: str,
        summary_token_count: int,
    ) -> bool:
        keys = self._thread(user_id, thread_id)
        args: list[ScriptArg] = [expected_version, summary, summary_token_count, _now(), self._ttl_ms]
        args += removed_ids
        return bool(await self._run("compact", keys.data_keys, args))

    async def set_data(self, user_id: str, thread_id: str, data: dict[str, object]) -> None:
        await self._index(user_id, thread_id)
        keys = self._thread(user_id, thread_id)
        await self._run("set_data", keys.data_keys, [json.dumps(data), _now(), self._ttl_ms])

    async def try_lock(self, user_id: str, thread_id: str, owner: str, ttl_seconds: float) -> bool:
        lease_ms = max(1, round(ttl_seconds * 1000))
        return bool(
            await self._run("lease_take", [self._thread(user_id, thread_id).lease], [owner, lease_ms])
        )

    async def unlock(self, user_id: str, thread_id: str, owner: str) -> None:
        await self._run("lease_release", [self._thread(user_id, thread_id).lease], [owner])

    async def list_threads(self, user_id: str) -> list[ThreadInfo]:
        index = self._keys.user_threads(user_id)
        with self._errors():
            listed = cast(list[tuple[str, float]], await self._client.zrange(index, 0, -1, withscores=True))
            # One round trip on a single server; a cluster client splits the pipeline per node.
            pipe = self._client.pipeline(transaction=False)
            for thread_id, _ in listed:
                keys = self._thread(user_id, thread_id)
                pipe.hmget(keys.meta, ["tokens", "updated_at"])
                pipe.exists(keys.meta)
                pipe.llen(keys.messages)
            replies = await pipe.execute()
        threads, stale = [], []
        for i, (thread_id, score) in enumerate(listed):
            (tokens, updated_at), exists, count = replies[3 * i : 3 * i + 3]
            if exists:
                threads.append(
                    ThreadInfo(
                        thread_id=thread_id,
                        message_count=int(count),
                        token_count=int(tokens or 0),
                        updated_at=_parse_time(updated_at),
                    )
                )
            elif score < time.time() - _INDEX_GRACE_SECONDS:
                stale.append(thread_id)  # expired or flushed, or a first write that failed
        if stale:
            with self._errors():
                await self._client.zrem(index, *stale)
        threads.sort(
            key=lambda t: t.updated_at or _EPOCH, reverse=True
        )  # newest first, like the SQLite store
        return threads

    async def forget(self, scope: Scope, *, dry_run: bool = False) -> WorkingForgetCount:
        dry = "1" if dry_run else "0"
        user_id = scope.user_id
        if scope.memory_id is not None:
            # The thread is a hint: a message id is unique per user, so look everywhere when it misses.
            removed = 0
            if scope.thread_id is not None:
                removed = await self._forget_message(user_id, scope.thread_id, scope.memory_id, dry)
            if not removed:
                for thread_id in await self._all_threads(user_id):
                    removed += await self._forget_message(user_id, thread_id, scope.memory_id, dry)
            return WorkingForgetCount(threads=0, messages=removed)
        if scope.thread_id is not None:
            threads = [scope.thread_id]
        elif scope.everything:
            threads = await self._all_threads(user_id)
        else:
            raise InvalidInputError("a forget scope names a memory_id, a thread_id or everything")
        count = WorkingForgetCount()
        for thread_id in threads:
            existed, messages = await self._run("forget_thread", self._thread(user_id, thread_id).all, [dry])
            count.threads += int(existed)
            count.messages += int(messages)
        if not dry_run:
            with self._errors():
                if scope.thread_id is not None:
                    await self._client.zrem(self._keys.user_threads(user_id), scope.thread_id)
                else:
                    await self._client.delete(self._keys.user_threads(user_id))
        return count

    async def _forget_message(self, user_id: str, thread_id: str, memory_id: str, dry: str) -> int:
        keys = self._thread(user_id, thread_id)
        return int(await self._run("forget_message", keys.data_keys, [memory_id, dry, _now(), self._ttl_ms]))

    async def _all_threads(self, user_id: str) -> list[str]:
        """Every thread of the user: the index, plus a SCAN of the user's keys so nothing is left behind
        (a thread whose index write was lost, an index that expired or was evicted)."""
        found: set[str] = set()
        with self._errors():
            found.update(cast(list[str], await self._client.zrange(self._keys.user_threads(user_id), 0, -1)))
            async for key in self._client.scan_iter(match=self._keys.user_thread_pattern(user_id), count=500):
                thread_id = self._keys.thread_id_of(user_id, key)
                if thread_id is not None:
                    found.add(thread_id)
        return sorted(found)


def _now() -> str:
    return utcnow().isoformat()


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _int_or_none(value: str | int | None) -> int | None:
    return int(value) if value not in (None, "") else None
