"""Server replicas sharing one Redis (and one long-term store): one summarizer per thread at a time, a
crashed summarizer's lease expiring by itself, and change notifications reaching clients of any replica."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server, thread_uri
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.storage.redis.keys import RedisKeys
from mcp_memory.views import AddTurnResult
from tests.helpers import HANG_SECONDS
from tests.integration.redis_service_support import (
    USER,
    SlowSummarizer,
    check_thread,
    recorded_service,
    service_settings,
)
from tests.services.mcp_client import call
from tests.services.redis_cluster import RedisDeployment

pytestmark = pytest.mark.anyio

WINDOW = 512


def replica_settings(
    base: Settings, redis_url: str, data_dir: Path, *, cluster: bool = False, **overrides: object
) -> Settings:
    """What every replica of one deployment is configured with: the same Redis, prefix and long term."""
    prefix = f"mmtest-{uuid.uuid4().hex[:12]}"
    settings = service_settings(base, redis_url, data_dir, key_prefix=prefix, cluster=cluster)
    return settings.model_copy(update=overrides)


async def add_turns(service: MemoryService, writer: str, count: int, acknowledged: list[str]) -> None:
    for n in range(count):
        content = f"{writer} reports item {n}: the Oslo office ordered {n + 3} laptops for the March rollout."
        acknowledged.append((await service.add_turn(USER, "shared", "user", content, None, WINDOW)).turn.id)


async def test_two_replicas_never_summarize_one_thread_at_the_same_time(
    fast_settings: Settings, redis_url: str, tmp_path: Path
) -> None:
    settings = replica_settings(fast_settings, redis_url, tmp_path / "data")
    refused = anyio.Event()  # either replica was refused the lease
    async with (
        recorded_service(settings, lease_refused=refused) as (a, on_a),
        recorded_service(settings, lease_refused=refused) as (b, on_b),
    ):
        # One summarizer shared by both replicas, slow like an LLM call: it sees every overlap. Each
        # call is held until a replica has asked for the lease while it was held, so there is one.
        slow = SlowSummarizer(a.summarizer, release=refused)
        a, b = dataclasses.replace(a, summarizer=slow), dataclasses.replace(b, summarizer=slow)
        acknowledged: list[str] = []
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for writer in range(4):
                    tg.start_soon(add_turns, a, f"replica A writer {writer}", 10, acknowledged)
                    tg.start_soon(add_turns, b, f"replica B writer {writer}", 10, acknowledged)
        assert slow.calls >= 2, (
            "both replicas kept the thread over its threshold, so it was summarized repeatedly"
        )
        assert on_a.leases_refused + on_b.leases_refused >= 1, (
            "a replica asked for the lease while it was held"
        )
        assert slow.most_inside == 1
        assert len(on_a.compacted) + len(on_b.compacted) == slow.calls, "every summary written was applied"
        await check_thread(a, [on_a, on_b], "shared", acknowledged)


async def test_a_crashed_summarizers_lease_expires_and_the_next_turn_summarizes(
    fast_settings: Settings, redis_url: str, tmp_path: Path
) -> None:
    settings = replica_settings(fast_settings, redis_url, tmp_path / "data")
    lease_key = RedisKeys(settings.working.key_prefix).thread(USER, "shared").lease
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    async with recorded_service(settings) as (service, recorder):
        acknowledged: list[str] = []

        async def add_turn() -> AddTurnResult:
            result = await service.add_turn(
                USER, "shared", "user", "The rollout moved to April 2.", None, WINDOW
            )
            acknowledged.append(result.turn.id)
            return result

        # Filled to just below its threshold first: the dead replica's lease is then taken right before
        # the one turn that asks for it.
        with anyio.fail_after(HANG_SECONDS):
            usage = (await add_turn()).working_memory
            per_turn = usage.token_count  # every turn adds the same tokens
            while usage.token_count + per_turn <= usage.threshold_tokens:
                usage = (await add_turn()).working_memory
        # A replica took the lease and died before releasing it. Its lease is long enough to be held
        # however slowly the next turn runs on a loaded machine.
        assert await service.stores.working.try_lock(USER, "shared", "crashed-replica", HANG_SECONDS)
        result = await add_turn()
        assert result.working_memory.token_count > result.working_memory.threshold_tokens
        assert not result.summarized and recorder.leases_refused >= 1, "the dead replica's lease still held"
        # The lease runs out by itself (Redis holds it with an expiry); time passes: its last 0.1 s.
        assert await raw.pttl(lease_key) > 0, "the dead replica's lease would never expire"
        await raw.pexpire(lease_key, 100)
        with anyio.fail_after(HANG_SECONDS):  # polling until Redis expires the dead replica's lease
            while await raw.exists(lease_key):  # noqa: ASYNC110 (the lease expires inside Redis)
                await anyio.sleep(0.05)
        result = await service.add_turn(USER, "shared", "assistant", "Noted: April 2.", None, WINDOW)
        acknowledged.append(result.turn.id)
        assert result.summarized
        assert result.working_memory.token_count <= result.working_memory.threshold_tokens
        await check_thread(service, [recorder], "shared", acknowledged)
    await raw.aclose()


async def test_a_client_of_one_replica_hears_about_a_turn_added_through_another(
    fast_settings: Settings, redis_deployment: RedisDeployment, tmp_path: Path
) -> None:
    deployment = redis_deployment
    settings = replica_settings(fast_settings, deployment.url, tmp_path / "data", cluster=deployment.cluster)
    uri = thread_uri("watched")
    async with Client(build_server(settings)) as on_a, Client(build_server(settings)) as on_b:
        async with on_a.listen(resource_subscriptions=[uri]) as subscription:
            added = await call(on_b, "add_turn", thread_id="watched", role="user", content="seen from A?")
            with anyio.fail_after(HANG_SECONDS):
                event = await subscription.__anext__()
            assert event == ResourceUpdated(uri=uri)
        # Both replicas read the one working memory.
        read = await on_a.read_resource(uri)
        assert added["id"] in read.contents[0].text  # type: ignore[union-attr]
