"""Stored bytes on Azure Cosmos DB: one usage item per user beside their memories, shared by replicas.

The item lives in the memories container under the partition [user_id, USAGE_GROUP] (thread ids never
hold "~"). A write reserves its bytes before it writes (refused past the limit), gives back what it did
not use when it fails, and a deletion gives back what it deleted. Every change reads the item and
writes it back under its ETag (If-Match; a new item by create, which refuses an existing id), retrying
when another writer was first, so each change is applied exactly once whatever runs concurrently.

A change is first tried as one patch (`incr`) with a filter predicate that holds the limit (or, giving
back, keeps the count from going below zero): Cosmos DB applies it atomically, so the common case is
one request and no race. When the item is missing (404) or the predicate fails (412), the
read-and-replace above decides: it creates the item, refuses with the figures, or clamps at zero.

A user without the item (a new user, or data stored before the item existed) is counted once from their
memories' content and from what other stores add (count_also: the revisions), inside the same
compare-and-swap, so concurrent first writes agree on one figure. Giving back never creates the item:
a first count made after a deletion already leaves out what it deleted.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio
from azure.core import MatchConditions
from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosAccessConditionFailedError, CosmosResourceNotFoundError

from mcp_memory.errors import ConflictError
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery
from mcp_memory.storage.usage import Quota, content_bytes, limit_of, refuse_growth

USAGE_GROUP = "~usage"  # the partition key's second level; never a thread id
USAGE_ID = "~usage"
USAGE_TYPE = "usage"
_ATTEMPTS = 64  # each retry follows a rival's successful write; this many in a row is a storm
_BACKOFF_CAP_SECONDS = 0.05


def usage_query(user_id: str) -> CosmosQuery:
    """A query, not a point read: the local test server answers a point read of a missing item with 500."""
    return CosmosQuery(
        "SELECT * FROM c WHERE c.user_id = @user_id AND c.thread_id = @group AND c.id = @id",
        [
            {"name": "@user_id", "value": user_id},
            {"name": "@group", "value": USAGE_GROUP},
            {"name": "@id", "value": USAGE_ID},
        ],
        [user_id, USAGE_GROUP],
    )


def contents_query(user_id: str) -> CosmosQuery:
    """What a first count reads: the content of every memory of the user (no vectors)."""
    return CosmosQuery(
        "SELECT VALUE c.content FROM c WHERE c.user_id = @user_id AND IS_STRING(c.content)",
        [{"name": "@user_id", "value": user_id}],
    )


class CosmosUsage:
    def __init__(
        self,
        memories: ContainerProxy,
        counted: list[ContainerProxy],
        *,
        timeout_seconds: float,
        limit: Quota,
    ) -> None:
        self._container = memories
        self._counted = counted  # the containers holding the memories a first count reads
        self._also: list[Callable[[str], Awaitable[int]]] = []
        self._timeout = timeout_seconds
        self.limit = limit

    def count_also(self, counter: Callable[[str], Awaitable[int]]) -> None:
        """Add a user's bytes kept elsewhere (their revisions) to every first count."""
        self._also.append(counter)

    async def read(self, user_id: str) -> int:
        doc = await self._read(user_id)
        return int(doc["stored_bytes"]) if doc is not None else await self._recount(user_id)

    async def reserve(self, user_id: str, adding: int, *, refuse: bool = True) -> None:
        """Count `adding` bytes (negative: fewer) before a write, or raise LimitExceededError. With
        refuse=False, for a write whose room was checked already, it is counted whatever the limit."""
        await self._change(user_id, adding, refuse=refuse, create=True)

    async def release(self, user_id: str, removed: int) -> None:
        """Give back bytes deleted, or reserved and not written. Never refused."""
        if removed:
            await self._change(user_id, -removed, refuse=False, create=False)

    async def remove(self, user_id: str) -> None:
        """Forgetting everything: the item goes too."""
        with (
            cosmos_errors("forgetting stored-bytes usage", self._timeout),
            suppress(CosmosResourceNotFoundError),
        ):
            await self._container.delete_item(USAGE_ID, partition_key=[user_id, USAGE_GROUP])

    async def _change(self, user_id: str, by: int, *, refuse: bool, create: bool) -> None:
        if by and await self._patched(user_id, by, refuse=refuse):
            return
        for attempt in range(_ATTEMPTS):
            stored = await self._read(user_id)
            if stored is None and not create:
                return  # the next first count reads what is stored then
            before = int(stored["stored_bytes"]) if stored is not None else await self._recount(user_id)
            after = max(0, before + by)
            if refuse:
                refuse_growth(user_id, before, after, self.limit)
            body = {
                "id": USAGE_ID,
                "user_id": user_id,
                "thread_id": USAGE_GROUP,
                "type": USAGE_TYPE,
                "stored_bytes": after,
            }
            try:
                with cosmos_errors("counting stored bytes", self._timeout):
                    if stored is None:
                        await self._container.create_item(body)
                    else:
                        await self._container.replace_item(
                            USAGE_ID,
                            body,
                            etag=stored["_etag"],
                            match_condition=MatchConditions.IfNotModified,
                        )
                return
            except ConflictError:  # 409 on create / 412 on replace: another writer was first
                await anyio.sleep(random.uniform(0, min(_BACKOFF_CAP_SECONDS, 0.002 * 2**attempt)))
        raise ConflictError("the stored-bytes counter kept changing under us; try again later")

    async def _patched(self, user_id: str, by: int, *, refuse: bool) -> bool:
        """Add `by` in one atomic patch; False when the item is missing or the change needs the
        read-and-replace path (past the limit, or below zero): nothing was changed then."""
        limit = limit_of(self.limit, user_id) if refuse else None
        predicate = None
        if by < 0:
            predicate = f"FROM c WHERE c.stored_bytes >= {-by}"
        elif limit is not None:
            predicate = f"FROM c WHERE c.stored_bytes <= {limit - by}"
        with cosmos_errors("counting stored bytes", self._timeout):
            try:
                await self._container.patch_item(
                    USAGE_ID,
                    partition_key=[user_id, USAGE_GROUP],
                    patch_operations=[{"op": "incr", "path": "/stored_bytes", "value": by}],
                    filter_predicate=predicate,
                    no_response=True,
                )
            except (CosmosResourceNotFoundError, CosmosAccessConditionFailedError):
                return False
        return True

    async def _read(self, user_id: str) -> dict[str, Any] | None:
        docs = await self._query(self._container, usage_query(user_id), "reading stored-bytes usage")
        return docs[0] if docs else None

    async def _recount(self, user_id: str) -> int:
        total = 0
        for container in self._counted:
            contents = await self._query(container, contents_query(user_id), "counting stored bytes")
            total += sum(content_bytes(c) for c in contents if isinstance(c, str))
        for counter in self._also:
            total += await counter(user_id)
        return total

    async def _query(self, container: ContainerProxy, query: CosmosQuery, what: str) -> list[Any]:
        with cosmos_errors(what, self._timeout):
            kwargs = query.kwargs()
            return [item async for item in container.query_items(kwargs.pop("query"), **kwargs)]
