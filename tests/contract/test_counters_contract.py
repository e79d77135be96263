"""The TriggerCounters contract (storage/learning_base.py): every backend that keeps counters passes it.

Backends: SQLite (the embedded file), Cosmos DB on the local Cosmos-protocol server (ETag-checked
items in the learning container) and a real Redis (Lua scripts). The property that matters: every
increment is applied once and its value is seen by exactly one caller, so a trigger fires on exactly
one replica; and a compare-and-set lets exactly one of several writers move a mark.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from mcp_memory.config import WorkingSettings
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.storage.learning_base import TriggerCounters
from tests.contract.conftest_long_term import local_cosmos_settings, open_cosmos, open_sqlite
from tests.helpers import HANG_SECONDS
from tests.integration.test_redis_working_store import cluster_url  # noqa: F401  # a one-node cluster
from tests.services.cosmos_server import CosmosServer
from tests.services.redis_server import RedisServer, redis_settings

pytestmark = pytest.mark.anyio

NewUser = Callable[[], str]
CONCURRENT = 12


@pytest.fixture(params=["sqlite", "cosmos", "redis", "redis-cluster"])
async def counters(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TriggerCounters]:
    match request.param:
        case "sqlite":
            from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
            from mcp_memory.storage.sqlite.revisions import SqliteTriggerCounters

            async with open_sqlite(tmp_path / "memory.db") as store:
                assert isinstance(store, SqliteLongTermStore)
                yield SqliteTriggerCounters(store.db)
        case "cosmos":
            from mcp_memory.storage.cosmos.counters import CosmosTriggerCounters
            from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

            server: CosmosServer = request.getfixturevalue("cosmos_server")
            async with open_cosmos(local_cosmos_settings(server)) as store:
                assert isinstance(store, CosmosLongTermStore)
                yield CosmosTriggerCounters(await store.open_learning_container(), timeout_seconds=10.0)
        case "redis" | "redis-cluster":
            from mcp_memory.storage.redis.counters import RedisTriggerCounters

            # redis-cluster: three masters, each user's counters on the master of the user's slot.
            fixture = (
                "redis_working_settings" if request.param == "redis" else "redis_cluster_working_settings"
            )
            settings: WorkingSettings = request.getfixturevalue(fixture)
            async with RedisTriggerCounters.open(settings) as redis_counters:
                yield redis_counters


async def test_increment_counts_per_user_and_key(counters: TriggerCounters, new_user: NewUser) -> None:
    user, other = new_user(), new_user()

    assert [await counters.increment(user, "turns:t1") for _ in range(3)] == [1, 2, 3]
    assert await counters.increment(user, "turns:t1", by=5) == 8
    assert await counters.increment(user, "turns:t2") == 1
    assert await counters.increment(other, "turns:t1") == 1


async def test_concurrent_increments_each_see_a_distinct_value(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    user = new_user()
    seen: list[int] = []

    async def count() -> None:
        seen.append(await counters.increment(user, "extractions"))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for _ in range(CONCURRENT):
                tg.start_soon(count)

    assert sorted(seen) == list(range(1, CONCURRENT + 1))  # every N-th value fires on exactly one caller


async def test_a_rate_window_ends_after_its_ttl_and_counts_from_zero(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    user = new_user()
    assert await counters.increment(user, "llm_calls:1", ttl_seconds=0.5) == 1
    # Counting again does not extend the window (only the first count sets it): polling faster than
    # the window would otherwise never see it end. The count that starts the next window gives it a
    # long one, so the next count falls in it however late it comes.
    with anyio.fail_after(HANG_SECONDS):
        while (value := await counters.increment(user, "llm_calls:1", ttl_seconds=HANG_SECONDS)) != 1:
            assert value > 1
            await anyio.sleep(0.05)  # polling until the window's TTL ends: nothing to wait on but time
    assert await counters.increment(user, "llm_calls:1", ttl_seconds=0.5) == 2


async def test_a_counter_without_ttl_is_kept(counters: TriggerCounters, new_user: NewUser) -> None:
    user = new_user()
    await counters.increment(user, "turns:t1")
    await counters.increment(user, "window", ttl_seconds=3600)

    assert await counters.increment(user, "turns:t1") == 2
    assert await counters.increment(user, "window", ttl_seconds=3600) == 2


async def test_compare_and_set_moves_a_mark_only_from_the_expected_value(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    user = new_user()
    assert await counters.read(user, "extracted:t1") is None

    assert await counters.compare_and_set(user, "extracted:t1", None, '{"through": "m1"}')
    assert await counters.read(user, "extracted:t1") == '{"through": "m1"}'
    assert not await counters.compare_and_set(user, "extracted:t1", None, "late")  # it exists now
    assert not await counters.compare_and_set(user, "extracted:t1", "stale", "late")
    assert await counters.read(user, "extracted:t1") == '{"through": "m1"}'
    assert await counters.compare_and_set(user, "extracted:t1", '{"through": "m1"}', '{"through": "m2"}')
    assert await counters.read(user, "extracted:t1") == '{"through": "m2"}'
    assert await counters.read(user, "extracted:t2") is None
    assert await counters.read(new_user(), "extracted:t1") is None


async def test_concurrent_compare_and_set_lets_exactly_one_writer_win(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    user = new_user()
    winners: list[str] = []

    async def claim(value: str) -> None:
        if await counters.compare_and_set(user, "extracted:t1", None, value):
            winners.append(value)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENT):
                tg.start_soon(claim, f"writer-{i}")

    assert len(winners) == 1
    assert await counters.read(user, "extracted:t1") == winners[0]


async def test_a_mark_and_a_number_share_a_key_without_touching_each_other(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    user = new_user()
    await counters.increment(user, "k")
    assert await counters.compare_and_set(user, "k", None, "mark")

    assert await counters.increment(user, "k") == 2
    assert await counters.read(user, "k") == "mark"


async def test_forget_with_a_prefix_removes_only_those_keys(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    user, other = new_user(), new_user()
    for key in ("turns:t1", "turns:t2", "extractions", "llm_calls:7"):
        await counters.increment(user, key)
    await counters.compare_and_set(user, "extracted:t1", None, "m1")
    await counters.increment(other, "turns:t1")

    assert await counters.forget(user, prefix="turns:") == 2

    assert await counters.increment(user, "turns:t1") == 1
    assert await counters.increment(user, "extractions") == 2
    assert await counters.read(user, "extracted:t1") == "m1"
    assert await counters.increment(other, "turns:t1") == 2


async def test_forget_everything_of_a_user(counters: TriggerCounters, new_user: NewUser) -> None:
    user, other = new_user(), new_user()
    for key in ("turns:t1", "extractions", "llm_calls:7"):
        await counters.increment(user, key)
    await counters.compare_and_set(user, "extracted:t1", None, "m1")
    await counters.increment(other, "extractions")

    assert await counters.forget(user) == 4

    assert await counters.read(user, "extracted:t1") is None
    assert await counters.increment(user, "extractions") == 1
    assert await counters.increment(other, "extractions") == 2
    assert await counters.forget(new_user()) == 0


async def test_keys_may_hold_any_characters(counters: TriggerCounters, new_user: NewUser) -> None:
    """Keys carry thread ids and free text: separators, glob and hash-tag characters, slashes (not valid
    in a Cosmos DB id), long ones. None of them may widen a prefix match or collide with another key."""
    user = new_user()
    odd = ["a*", "a?b", "a[bc]", "a{x}/b#c\\d", "a b:c%", "a" + "x" * 400]
    for i, key in enumerate(odd):
        assert await counters.increment(user, key, by=i + 1) == i + 1
    await counters.increment(user, "ab")

    assert await counters.forget(user, prefix="a*") == 1  # the literal "a*" only, not everything after "a"

    assert await counters.increment(user, "a?b") == 3
    assert await counters.increment(user, "ab") == 2
    assert await counters.forget(user, prefix="a{x}/") == 1


# -- Redis only: Cluster (hash-tag rules) --------------------------------------------------------------


async def test_redis_counters_work_on_redis_cluster(cluster_url: str) -> None:  # noqa: F811
    """Every key of a user's counters is in the user's slot: the multi-key UNLINK of forget is legal on
    a cluster, which refuses a command whose keys span two slots."""
    from mcp_memory.storage.redis.counters import RedisTriggerCounters

    settings = redis_settings(cluster_url, cluster=True)
    async with RedisTriggerCounters.open(settings) as on_cluster:
        for key in ("turns:t1", "turns:t2", "extractions"):
            assert await on_cluster.increment("ann", key, ttl_seconds=600) == 1
        assert await on_cluster.compare_and_set("ann", "extracted:t1", None, "m1")
        assert await on_cluster.increment("ann:x", "turns:t1") == 1  # a user whose id starts like ann's

        assert await on_cluster.forget("ann", prefix="turns:") == 2
        assert await on_cluster.forget("ann") == 2
        assert await on_cluster.read("ann", "extracted:t1") is None
        assert await on_cluster.increment("ann:x", "turns:t1") == 2


async def test_redis_counters_unreachable_is_a_clear_error(private_redis: RedisServer) -> None:
    from mcp_memory.storage.redis.counters import RedisTriggerCounters

    settings = redis_settings(private_redis.url, retries=0, timeout_seconds=1.0)
    async with RedisTriggerCounters.open(settings) as on_redis:
        assert await on_redis.increment("ann", "turns:t1") == 1
        private_redis.stop()

        with pytest.raises(
            BackendUnavailableError, match=r"learning counters \(Redis\) are unreachable at 127\.0\.0\.1:\d+"
        ):
            await on_redis.increment("ann", "turns:t1")


async def test_the_llm_budget_admits_exactly_its_limit_under_concurrency(
    counters: TriggerCounters, new_user: NewUser
) -> None:
    from mcp_memory.errors import LimitExceededError
    from mcp_memory.learning.budget import LlmBudget

    user = new_user()
    budget = LlmBudget(counters, limit=5, background_limit=3)
    admitted: list[bool] = []  # per admitted call: was it a background one

    async def call(background: bool) -> None:
        try:
            await budget.charge(user, "a call", background=background)
        except LimitExceededError:
            return
        admitted.append(background)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENT):
                tg.start_soon(call, i % 2 == 0)
    usage = await budget.view(user)
    assert len(admitted) == usage.used == 5  # refused calls gave their increments back
    assert admitted.count(True) == usage.background_used <= 3
