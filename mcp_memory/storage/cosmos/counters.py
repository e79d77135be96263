"""Trigger counters on Azure Cosmos DB (TriggerCounters), shared by every replica and worker process.

One item per (user, key) in the learning container (cosmos/setup.py), under the partition
[user_id, COUNTERS_GROUP], so a user's counters are one logical partition. Every change reads the item
and writes it back under its ETag (If-Match; a new item by create, which refuses an existing id): when
another writer changed it in between, Cosmos DB answers 412 (or 409) and we read again and retry. So
each increment is applied exactly once and returns a value no other caller sees, which is what makes a
trigger fire on exactly one replica.

An increment of a live counter is one patch (`incr`, atomic on the server) whose filter predicate
holds only while the window is open; a missing item (404) or an ended window (412) takes the
read-and-replace path, which creates the item or starts the window again.

Rate windows (ttl_seconds) keep their end in the item (`expires`, epoch seconds) and count from zero
after it; the item also carries a Cosmos `ttl` a little longer than the window, so Azure deletes
windows nobody touches again. Expiry is decided by `expires`, never by the TTL sweep, whose timing is
not ours to rely on.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import anyio
from azure.core import MatchConditions
from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosAccessConditionFailedError, CosmosResourceNotFoundError

from mcp_memory.errors import ConflictError
from mcp_memory.storage.cosmos.calls import each_concurrently
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery

# The second partition-key level of counters; memory ids (the level's other use) never start with "~".
COUNTERS_GROUP = "~counters"
COUNTER_TYPE = "counter"
# Lets Azure's TTL sweep remove a window only well after it ended (it is already ignored by then).
_TTL_GRACE_SECONDS = 3600
# Each retry follows a rival's successful write; this many in a row means a storm, not bad luck.
_ATTEMPTS = 64
_BACKOFF_CAP_SECONDS = 0.05
_CONCURRENCY = 16


def counter_id(key: str) -> str:
    """Item ids are <= 255 chars without / \\ ? #; keys are free text, so the id is their digest."""
    return "counter:" + hashlib.sha256(key.encode()).hexdigest()[:40]


def counter_query(user_id: str, key: str) -> CosmosQuery:
    """One counter, by id inside the user's counter partition. A query, not a point read: the local test
    server answers a point read of a missing item with 500, and a query by id costs barely more."""
    return CosmosQuery(
        "SELECT * FROM c WHERE c.user_id = @user_id AND c.group_id = @group_id AND c.id = @id",
        [
            {"name": "@user_id", "value": user_id},
            {"name": "@group_id", "value": COUNTERS_GROUP},
            {"name": "@id", "value": counter_id(key)},
        ],
        [user_id, COUNTERS_GROUP],
    )


def prefix_query(user_id: str, prefix: str) -> CosmosQuery:
    return CosmosQuery(
        "SELECT c.id FROM c WHERE c.user_id = @user_id AND c.group_id = @group_id AND c.type = @type"
        " AND STARTSWITH(c.key, @prefix)",
        [
            {"name": "@user_id", "value": user_id},
            {"name": "@group_id", "value": COUNTERS_GROUP},
            {"name": "@type", "value": COUNTER_TYPE},
            {"name": "@prefix", "value": prefix},
        ],
        [user_id, COUNTERS_GROUP],
    )


def _live(doc: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The item unless its rate window has ended (then it counts as absent)."""
    if doc is None or (doc.get("expires") is not None and doc["expires"] <= now):
        return None
    return doc


class CosmosTriggerCounters:
    def __init__(self, container: ContainerProxy, *, timeout_seconds: float) -> None:
        self._container = container
        self._timeout = timeout_seconds

    async def increment(
        self, user_id: str, key: str, *, by: int = 1, ttl_seconds: float | None = None
    ) -> int:
        patched = await self._incremented(user_id, key, by)
        if patched is not None:
            return patched

        def change(doc: dict[str, Any] | None, now: float) -> dict[str, Any]:
            if doc is not None:
                return {**doc, "number": int(doc.get("number", 0)) + by}
            fresh = self._new(user_id, key, number=by)
            if ttl_seconds is not None:
                fresh["expires"] = now + ttl_seconds
                fresh["ttl"] = math.ceil(ttl_seconds) + _TTL_GRACE_SECONDS
            return fresh

        written = await self._update(user_id, key, change, "counting")
        assert written is not None  # change() always writes
        return int(written["number"])

    async def _incremented(self, user_id: str, key: str, by: int) -> int | None:
        """The counter after adding `by` in one patch, or None when it is missing or its window has
        ended (nothing was changed then)."""
        live = f"FROM c WHERE NOT IS_NUMBER(c.expires) OR c.expires > {time.time()!r}"
        with cosmos_errors(f"counting (learning counter {key!r})", self._timeout):
            try:
                doc = await self._container.patch_item(
                    counter_id(key),
                    partition_key=[user_id, COUNTERS_GROUP],
                    patch_operations=[{"op": "incr", "path": "/number", "value": by}],
                    filter_predicate=live,
                )
            except (CosmosResourceNotFoundError, CosmosAccessConditionFailedError):
                return None
        return int(doc["number"])

    async def read(self, user_id: str, key: str) -> str | None:
        doc = _live(await self._read(user_id, key), time.time())
        return None if doc is None else doc.get("mark")

    async def compare_and_set(self, user_id: str, key: str, expected: str | None, value: str) -> bool:
        def change(doc: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
            current = None if doc is None else doc.get("mark")
            if current != expected:
                return None  # someone else moved the mark: write nothing
            return {**(doc or self._new(user_id, key, number=0)), "mark": value}

        return await self._update(user_id, key, change, "moving a mark") is not None

    async def forget(self, user_id: str, *, prefix: str = "") -> int:
        docs = await self._query(prefix_query(user_id, prefix), "finding learning counters to forget")

        async def delete(doc: dict[str, Any]) -> None:
            # Already gone (expired by TTL, forgotten concurrently) is what was asked for.
            with (
                cosmos_errors("forgetting learning counters", self._timeout),
                suppress(CosmosResourceNotFoundError),
            ):
                await self._container.delete_item(doc["id"], partition_key=[user_id, COUNTERS_GROUP])

        await each_concurrently([lambda d=d: delete(d) for d in docs], _CONCURRENCY)  # type: ignore[misc]
        return len(docs)

    # -- plumbing -------------------------------------------------------------------------------------

    def _new(self, user_id: str, key: str, *, number: int) -> dict[str, Any]:
        return {
            "id": counter_id(key),
            "user_id": user_id,
            "group_id": COUNTERS_GROUP,
            "type": COUNTER_TYPE,
            "key": key,
            "number": number,
            "mark": None,
            "expires": None,
        }

    async def _update(
        self,
        user_id: str,
        key: str,
        change: Callable[[dict[str, Any] | None, float], dict[str, Any] | None],
        what: str,
    ) -> dict[str, Any] | None:
        """Read the counter, apply `change` (None = write nothing) and write the result only if nobody
        wrote in between; retry on a lost race. Returns what was written."""
        for attempt in range(_ATTEMPTS):
            stored = await self._read(user_id, key)
            now = time.time()
            live = _live(stored, now)
            wanted = change(live, now)
            if wanted is None:
                return None
            # The system properties (_etag, _ts, ...) of the read item are not ours to write back. An
            # ended window is rewritten as a fresh counter on the same item, under its ETag too.
            body = {k: v for k, v in wanted.items() if not k.startswith("_")}
            try:
                with cosmos_errors(f"{what} (learning counter {key!r})", self._timeout):
                    if stored is None:
                        await self._container.create_item(body)
                    else:
                        await self._container.replace_item(
                            stored["id"],
                            body,
                            etag=stored["_etag"],
                            match_condition=MatchConditions.IfNotModified,
                        )
            except ConflictError:  # 409 on create / 412 on replace: another writer was first
                await _backoff(attempt)
                continue
            return body
        raise ConflictError(
            f"learning counter {key!r} kept changing under us ({_ATTEMPTS} attempts); try again later"
        )

    async def _read(self, user_id: str, key: str) -> dict[str, Any] | None:
        docs = await self._query(counter_query(user_id, key), "reading a learning counter")
        return docs[0] if docs else None

    async def _query(self, query: CosmosQuery, what: str) -> list[dict[str, Any]]:
        with cosmos_errors(what, self._timeout):
            kwargs = query.kwargs()
            return [item async for item in self._container.query_items(kwargs.pop("query"), **kwargs)]


async def _backoff(attempt: int) -> None:
    """Jittered, growing pause between retries, so rivals stop colliding (capped: a counter is tiny)."""
    await anyio.sleep(random.uniform(0, min(_BACKOFF_CAP_SECONDS, 0.002 * 2**attempt)))
