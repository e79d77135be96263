"""Cosmos DB calls the stores share: a query read to the end, and many calls run concurrently."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from azure.cosmos.aio import ContainerProxy

from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery


async def query_all(
    container: ContainerProxy, query: CosmosQuery, what: str, seconds: float
) -> list[dict[str, Any]]:
    """Every item the query returns; `what` names the work in the error a failure raises."""
    with cosmos_errors(what, seconds):
        kwargs = query.kwargs()
        return [item async for item in container.query_items(kwargs.pop("query"), **kwargs)]


async def each_concurrently(
    calls: Sequence[Callable[[], Awaitable[None]]], limit: anyio.CapacityLimiter | int
) -> None:
    """Run calls concurrently, at most `limit` at once; the first failure is raised as itself. A number
    limits these calls only (a limiter of their own): other callers' calls never wait for their slots."""
    if len(calls) == 1:
        await calls[0]()
        return
    limiter = anyio.CapacityLimiter(limit) if isinstance(limit, int) else limit

    async def limited(call: Callable[[], Awaitable[None]]) -> None:
        async with limiter:
            await call()

    try:
        async with anyio.create_task_group() as tg:
            for call in calls:
                tg.start_soon(limited, call)
    except ExceptionGroup as group:
        first: BaseException = group
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
