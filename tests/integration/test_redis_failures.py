"""Redis going away: working-memory calls fail fast with an error naming Redis, and the same store
instance works again by itself once Redis is back."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread
import pytest

from mcp_memory.errors import BackendUnavailableError
from mcp_memory.models import Message, Scope, WorkingMemory
from mcp_memory.storage.redis.working import RedisWorkingMemoryStore
from tests.services.redis_server import RedisServer, redis_settings

pytestmark = pytest.mark.anyio

# Far above what timeouts and retries allow (see RedisWorkingMemoryStore._deadline); a hang fails here.
_BOUND_SECONDS = 30


def turn(n: int) -> Message:
    return Message(id=f"m{n}", role="user", content=f"message {n}", token_count=10)


def every_call(store: RedisWorkingMemoryStore) -> dict[str, Callable[[], Awaitable[object]]]:
    return {
        "append": lambda: store.append("ann", "t1", turn(99)),
        "get": lambda: store.get("ann", "t1"),
        "restore": lambda: store.restore(WorkingMemory(user_id="ann", thread_id="t9")),
        "compact": lambda: store.compact(
            "ann", "t1", expected_version=0, removed_ids=["m1"], summary="s", summary_token_count=1
        ),
        "set_data": lambda: store.set_data("ann", "t1", {"k": 1}),
        "try_lock": lambda: store.try_lock("ann", "t1", "me", 10),
        "unlock": lambda: store.unlock("ann", "t1", "me"),
        "list_threads": lambda: store.list_threads("ann"),
        "forget": lambda: store.forget(Scope(user_id="ann", everything=True), dry_run=True),
    }


async def test_open_names_redis_and_its_address_but_not_the_password() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        settings = redis_settings(f"redis://:s3cret-pw@127.0.0.1:{port}/0", timeout_seconds=1.0)
        with anyio.fail_after(_BOUND_SECONDS), pytest.raises(BackendUnavailableError) as caught:
            async with RedisWorkingMemoryStore.open(settings):
                pass
    message = str(caught.value)
    assert "Redis" in message and f"127.0.0.1:{port}" in message
    assert "s3cret-pw" not in message


async def test_calls_fail_clearly_while_redis_is_stopped_and_work_again_after_restart(
    private_redis: RedisServer,
) -> None:
    # Redis stopped refuses at once; Redis up answers within this even on a loaded machine.
    settings = redis_settings(private_redis.url, timeout_seconds=5.0)
    async with RedisWorkingMemoryStore.open(settings) as store:
        await store.append("ann", "t1", turn(1))
        await anyio.to_thread.run_sync(private_redis.stop)
        for name, call in every_call(store).items():
            with anyio.fail_after(_BOUND_SECONDS), pytest.raises(BackendUnavailableError) as caught:
                await call()
            assert "working memory (Redis) is unreachable" in str(caught.value), name

        await anyio.to_thread.run_sync(private_redis.start)
        # The same instance, not reopened: the pool replaces its dead connections by itself.
        totals = await store.append("ann", "t1", turn(2))
        # The test server keeps nothing on disk: the thread starts again (phase 2 rebuilds it from long term).
        assert (totals.message_count, totals.token_count) == (1, 10)
        for call in every_call(store).values():
            await call()  # each works again: none raises


async def test_calls_time_out_clearly_while_redis_hangs(private_redis: RedisServer) -> None:
    settings = redis_settings(private_redis.url, timeout_seconds=0.5)
    async with RedisWorkingMemoryStore.open(settings) as store:
        await store.append("ann", "t1", turn(1))
        private_redis.pause()  # accepts connections, answers nothing
        try:
            for call in (lambda: store.get("ann", "t1"), lambda: store.list_threads("ann")):
                with anyio.fail_after(_BOUND_SECONDS), pytest.raises(BackendUnavailableError) as caught:
                    await call()
                assert "working memory (Redis)" in str(caught.value) and "did not answer" in str(caught.value)
        finally:
            private_redis.resume()
        memory = await store.get("ann", "t1")
        assert memory is not None and [m.id for m in memory.messages] == ["m1"]
