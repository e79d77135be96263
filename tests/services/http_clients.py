"""A 2025- or 2026-protocol MCP client over streamable HTTP with a bearer token, and a replica's counter
read from its /metrics: what the tests of several replicas behind a balancer share."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer


@asynccontextmanager
async def client(url: str, token: str, **options: Any) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS, **options) as opened:
            yield opened


async def counted_by_route(replica: NetworkServer, token: str, metric: str) -> dict[str, int]:
    """A counter labelled by route (e.g. mcp_memory_client_answers_total), as the replica's /metrics says."""
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(f"{replica.base_url}/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    found = re.findall(rf'^{metric}\{{route="(\w+)"\}} ([0-9.]+)$', response.text, re.M)
    return {route: int(float(value)) for route, value in found}
