"""The request rate limit shared by replicas on Redis (storage/redis/rate.py), and failing open to each
process's own buckets when Redis cannot answer."""

from __future__ import annotations

import logging
import socket

import pytest
from pydantic import SecretStr

from mcp_memory.config import Settings, WorkingSettings
from mcp_memory.mcp.middleware.rate_limit import RateLimit
from mcp_memory.storage.redis.rate import RedisRequestBuckets

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("fixture", ["redis_working_settings", "redis_cluster_working_settings"])
async def test_two_replicas_spend_from_one_bucket(request: pytest.FixtureRequest, fixture: str) -> None:
    settings: WorkingSettings = request.getfixturevalue(fixture)
    async with (
        RedisRequestBuckets.open(settings, per_second=0.01, burst=3) as first,
        RedisRequestBuckets.open(settings, per_second=0.01, burst=3) as second,
    ):
        assert [await first.take("ann"), await second.take("ann"), await first.take("ann")] == [0, 0, 0]
        refused = [await second.take("ann"), await first.take("ann")]
        assert all(wait > 0 for wait in refused)  # the burst of 3 was spent across both
        assert refused[0] == pytest.approx(100, abs=1)  # one request per 100 s
        assert await second.take("bob") == 0  # per principal


async def test_an_unreachable_redis_falls_back_to_the_process_bucket(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    working = WorkingSettings(
        redis_url=SecretStr(f"redis://127.0.0.1:{port}/0"), timeout_seconds=0.5, retries=0
    )
    security = settings.security.model_copy(update={"requests_per_second": 0.01, "request_burst": 2})
    limited = settings.model_copy(update={"security": security, "working": working})
    async with RedisRequestBuckets.open(working, per_second=0.01, burst=2) as down:
        limit = RateLimit(limited, shared=lambda: down)
        with caplog.at_level(logging.WARNING, logger="mcp_memory.mcp.middleware.rate_limit"):
            waits = [await limit.take("ann") for _ in range(3)]
    assert waits[:2] == [0, 0] and waits[2] > 0  # served, and still limited by this process
    warnings = [r for r in caplog.records if "each process limits requests on its own" in r.getMessage()]
    assert len(warnings) == 1  # once per outage, not once per request
