"""The WorkingMemoryStore contract: every backend (SQLite, a real Redis) behaves the same way."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_memory.models import Message, Scope, WorkingMemory
from mcp_memory.storage.base import WorkingForgetCount, WorkingMemoryStore
from mcp_memory.storage.redis.working import RedisWorkingMemoryStore
from tests.contract.conftest import WorkingStoreOpener
from tests.helpers import HANG_SECONDS
from tests.services.redis_server import delete_prefix, redis_settings

anyio_test = pytest.mark.anyio


def turn(n: int | str, tokens: int = 10, content: str | None = None) -> Message:
    return Message(id=f"m{n}", role="user", content=content or f"message {n}", token_count=tokens)


async def fill(store: WorkingMemoryStore, user: str, thread: str, count: int, tokens: int = 10) -> None:
    for i in range(count):
        await store.append(user, thread, turn(i, tokens))


async def ids(store: WorkingMemoryStore, user: str, thread: str) -> list[str]:
    memory = await store.get(user, thread)
    assert memory is not None
    return [m.id for m in memory.messages]


async def info(store: WorkingMemoryStore, user: str, thread: str) -> tuple[int, int]:
    """(message_count, token_count) as list_threads reports them."""
    (found,) = [t for t in await store.list_threads(user) if t.thread_id == thread]
    return found.message_count, found.token_count


@anyio_test
async def test_append_returns_running_totals(working_store: WorkingMemoryStore) -> None:
    totals = [await working_store.append("ann", "t1", turn(i, tokens=i + 1)) for i in range(4)]
    assert [t.token_count for t in totals] == [1, 3, 6, 10]
    assert [t.message_count for t in totals] == [1, 2, 3, 4]
    assert {t.context_window for t in totals} == {None}


@anyio_test
async def test_get_returns_what_was_appended_in_order(working_store: WorkingMemoryStore) -> None:
    sent = [
        Message(
            id="a", role="user", content='héllo {brace} "quoted"', metadata={"k": [1, "x"]}, token_count=3
        ),
        Message(id="b", role="agent", content="", token_count=0),
        Message(id="c", role="tool", content="line\nbreak", token_count=5),
    ]
    for message in sent:
        await working_store.append("ann", "t1", message)
    memory = await working_store.get("ann", "t1")
    assert memory is not None
    assert memory.messages == sent
    assert (memory.summary, memory.summary_token_count, memory.summary_version) == ("", 0, 0)
    assert memory.data == {}
    assert memory.token_count == 8
    assert memory.updated_at is not None


@anyio_test
async def test_get_of_a_thread_never_written_is_none(working_store: WorkingMemoryStore) -> None:
    await working_store.append("ann", "t1", turn(1))
    assert await working_store.get("ann", "t2") is None
    assert await working_store.get("bob", "t1") is None


@anyio_test
async def test_ids_with_separators_do_not_collide(working_store: WorkingMemoryStore) -> None:
    await working_store.append("a", "b:c", turn(1))
    await working_store.append("a:b", "c", turn(2))
    assert await ids(working_store, "a", "b:c") == ["m1"]
    assert await ids(working_store, "a:b", "c") == ["m2"]
    assert [t.thread_id for t in await working_store.list_threads("a")] == ["b:c"]


@anyio_test
async def test_context_window_is_set_when_given_and_kept_otherwise(working_store: WorkingMemoryStore) -> None:
    assert (await working_store.append("ann", "t1", turn(1))).context_window is None
    assert (await working_store.append("ann", "t1", turn(2), context_window=32_000)).context_window == 32_000
    assert (await working_store.append("ann", "t1", turn(3))).context_window == 32_000
    assert (await working_store.append("ann", "t1", turn(4), context_window=8_000)).context_window == 8_000
    memory = await working_store.get("ann", "t1")
    assert memory is not None and memory.context_window == 8_000


@anyio_test
async def test_list_threads_reports_each_thread_of_the_user_only(working_store: WorkingMemoryStore) -> None:
    await fill(working_store, "ann", "t1", 2, tokens=5)
    await fill(working_store, "ann", "t2", 1, tokens=7)
    await fill(working_store, "bob", "t1", 3)
    threads = {t.thread_id: t for t in await working_store.list_threads("ann")}
    assert set(threads) == {"t1", "t2"}
    assert (threads["t1"].message_count, threads["t1"].token_count) == (2, 10)
    assert (threads["t2"].message_count, threads["t2"].token_count) == (1, 7)
    assert all(t.updated_at is not None for t in threads.values())
    assert [(t.thread_id, t.message_count) for t in await working_store.list_threads("bob")] == [("t1", 3)]
    assert await working_store.list_threads("carol") == []


@anyio_test
async def test_compact_replaces_the_oldest_messages_by_a_summary(working_store: WorkingMemoryStore) -> None:
    await fill(working_store, "ann", "t1", 5)
    replaced = await working_store.compact(
        "ann",
        "t1",
        expected_version=0,
        removed_ids=["m0", "m1", "m2"],
        summary="they met",
        summary_token_count=7,
    )
    assert replaced is True
    memory = await working_store.get("ann", "t1")
    assert memory is not None
    assert [m.id for m in memory.messages] == ["m3", "m4"]
    assert (memory.summary, memory.summary_token_count, memory.summary_version) == ("they met", 7, 1)
    assert await info(working_store, "ann", "t1") == (2, 27)
    assert (await working_store.append("ann", "t1", turn(5))).token_count == 37


@anyio_test
async def test_compact_refuses_a_stale_version(working_store: WorkingMemoryStore) -> None:
    await fill(working_store, "ann", "t1", 4)
    assert await working_store.compact(
        "ann", "t1", expected_version=0, removed_ids=["m0"], summary="first", summary_token_count=2
    )
    before = await working_store.get("ann", "t1")
    stale = await working_store.compact(
        "ann", "t1", expected_version=0, removed_ids=["m1"], summary="second", summary_token_count=3
    )
    assert stale is False
    assert await working_store.get("ann", "t1") == before


@pytest.mark.parametrize(
    "removed",
    [["m1"], ["m1", "m0"], ["m0", "m2"], ["m0", "m1", "m2", "m3"], ["m0", "nope"]],
    ids=["not-oldest", "wrong-order", "gap", "more-than-exist", "unknown-id"],
)
@anyio_test
async def test_compact_refuses_ids_that_are_not_the_oldest_messages(
    working_store: WorkingMemoryStore, removed: list[str]
) -> None:
    await fill(working_store, "ann", "t1", 3)
    before = await working_store.get("ann", "t1")
    assert not await working_store.compact(
        "ann", "t1", expected_version=0, removed_ids=removed, summary="s", summary_token_count=1
    )
    assert await working_store.get("ann", "t1") == before


@anyio_test
async def test_compact_keeps_messages_appended_after_the_snapshot(working_store: WorkingMemoryStore) -> None:
    await fill(working_store, "ann", "t1", 3)
    snapshot = await working_store.get("ann", "t1")
    assert snapshot is not None
    # Other writers add turns while the summarizer's LLM call is running.
    await working_store.append("ann", "t1", turn("late-1", tokens=4))
    await working_store.append("ann", "t1", turn("late-2", tokens=6))
    assert await working_store.compact(
        "ann",
        "t1",
        expected_version=snapshot.summary_version,
        removed_ids=[m.id for m in snapshot.messages[:2]],
        summary="summary of m0 m1",
        summary_token_count=3,
    )
    assert await ids(working_store, "ann", "t1") == ["m2", "mlate-1", "mlate-2"]
    assert await info(working_store, "ann", "t1") == (3, 3 + 10 + 4 + 6)


@anyio_test
async def test_compact_of_a_missing_thread_is_refused(working_store: WorkingMemoryStore) -> None:
    assert not await working_store.compact(
        "ann", "nothing", expected_version=0, removed_ids=[], summary="s", summary_token_count=1
    )
    assert await working_store.get("ann", "nothing") is None


@anyio_test
async def test_restore_writes_only_when_the_thread_is_absent(working_store: WorkingMemoryStore) -> None:
    rebuilt = WorkingMemory(
        user_id="ann",
        thread_id="t1",
        messages=[turn(7, tokens=3), turn(8, tokens=4)],
        summary="earlier: they met",
        summary_token_count=5,
        summary_version=3,
        context_window=16_000,
        data={"mood": "calm"},
    )
    assert await working_store.restore(rebuilt) is True
    memory = await working_store.get("ann", "t1")
    assert memory is not None
    assert memory.model_dump(exclude={"updated_at"}) == rebuilt.model_dump(exclude={"updated_at"})
    assert await info(working_store, "ann", "t1") == (2, 12)

    other = rebuilt.model_copy(update={"messages": [turn(9)], "summary": "another writer's"})
    assert await working_store.restore(other) is False
    assert await working_store.get("ann", "t1") == memory

    await working_store.append("ann", "t2", turn(1))
    assert await working_store.restore(rebuilt.model_copy(update={"thread_id": "t2"})) is False
    assert await ids(working_store, "ann", "t2") == ["m1"]


@anyio_test
async def test_set_data_creates_the_thread_and_replaces_its_data(working_store: WorkingMemoryStore) -> None:
    await working_store.set_data("ann", "t1", {"topic": "travel", "n": 1})
    memory = await working_store.get("ann", "t1")
    assert memory is not None and memory.data == {"topic": "travel", "n": 1} and memory.messages == []
    await working_store.set_data("ann", "t1", {"steps": [1, 2]})
    await working_store.append("ann", "t1", turn(1))
    memory = await working_store.get("ann", "t1")
    assert memory is not None and memory.data == {"steps": [1, 2]}
    assert [t.thread_id for t in await working_store.list_threads("ann")] == ["t1"]


@anyio_test
async def test_the_lease_excludes_other_owners_until_released(working_store: WorkingMemoryStore) -> None:
    await working_store.append("ann", "t1", turn(1))
    assert await working_store.try_lock("ann", "t1", "replica-a", 60)
    assert not await working_store.try_lock("ann", "t1", "replica-b", 60)
    await working_store.unlock("ann", "t1", "replica-b")  # not the holder: no effect
    assert not await working_store.try_lock("ann", "t1", "replica-c", 60)
    assert await working_store.try_lock("ann", "t2", "replica-b", 60)  # leases are per thread
    await working_store.unlock("ann", "t1", "replica-a")
    assert await working_store.try_lock("ann", "t1", "replica-b", 60)


@anyio_test
async def test_a_crashed_holders_lease_expires_by_itself(working_store: WorkingMemoryStore) -> None:
    await working_store.append("ann", "t1", turn(1))
    assert await working_store.try_lock("ann", "t1", "crashed", 0.2)
    with anyio.fail_after(HANG_SECONDS):
        while not await working_store.try_lock("ann", "t1", "next", 60):  # noqa: ASYNC110 (polling the store)
            await anyio.sleep(0.05)  # until the crashed holder's lease expires
    assert not await working_store.try_lock("ann", "t1", "crashed", 60)
    await working_store.unlock("ann", "t1", "crashed")  # its late release must not free the successor's
    assert not await working_store.try_lock("ann", "t1", "third", 60)


@anyio_test
async def test_forget_one_message_fixes_the_totals(working_store: WorkingMemoryStore) -> None:
    for i, tokens in enumerate([1, 2, 3]):
        await working_store.append("ann", "t1", turn(i, tokens))
    await working_store.append("bob", "t1", turn(1, 100))
    one = Scope(user_id="ann", thread_id="t1", memory_id="m1")
    assert await working_store.forget(one, dry_run=True) == WorkingForgetCount(threads=0, messages=1)
    assert await ids(working_store, "ann", "t1") == ["m0", "m1", "m2"]
    assert await working_store.forget(one) == WorkingForgetCount(threads=0, messages=1)
    assert await ids(working_store, "ann", "t1") == ["m0", "m2"]
    assert await info(working_store, "ann", "t1") == (2, 4)
    assert (await working_store.append("ann", "t1", turn(3, 5))).token_count == 9
    # Without the thread: found wherever it is.
    assert await working_store.forget(Scope(user_id="ann", memory_id="m2")) == WorkingForgetCount(messages=1)
    assert await working_store.forget(Scope(user_id="ann", memory_id="nope")) == WorkingForgetCount()
    assert await ids(working_store, "ann", "t1") == ["m0", "m3"]
    # A wrong thread hint does not hide the message.
    wrong_hint = Scope(user_id="ann", thread_id="t9", memory_id="m3")
    assert await working_store.forget(wrong_hint) == WorkingForgetCount(messages=1)
    assert await ids(working_store, "ann", "t1") == ["m0"]
    assert await ids(working_store, "bob", "t1") == ["m1"]


@anyio_test
async def test_forget_a_thread(working_store: WorkingMemoryStore) -> None:
    await fill(working_store, "ann", "t1", 3)
    await fill(working_store, "ann", "t2", 1)
    scope = Scope(user_id="ann", thread_id="t1")
    assert await working_store.forget(scope, dry_run=True) == WorkingForgetCount(threads=1, messages=3)
    assert await ids(working_store, "ann", "t1") == ["m0", "m1", "m2"]
    assert await working_store.forget(scope) == WorkingForgetCount(threads=1, messages=3)
    assert await working_store.get("ann", "t1") is None
    assert [t.thread_id for t in await working_store.list_threads("ann")] == ["t2"]
    assert await working_store.forget(scope) == WorkingForgetCount()


@anyio_test
async def test_forget_everything_of_one_user(working_store: WorkingMemoryStore) -> None:
    await fill(working_store, "ann", "t1", 2)
    await fill(working_store, "ann", "t2", 1)
    await working_store.set_data("ann", "t3", {"only": "data"})
    await fill(working_store, "bob", "t1", 1)
    everything = Scope(user_id="ann", everything=True)
    assert await working_store.forget(everything, dry_run=True) == WorkingForgetCount(threads=3, messages=3)
    assert len(await working_store.list_threads("ann")) == 3
    assert await working_store.forget(everything) == WorkingForgetCount(threads=3, messages=3)
    assert await working_store.list_threads("ann") == []
    for thread in ("t1", "t2", "t3"):
        assert await working_store.get("ann", thread) is None
    assert await ids(working_store, "bob", "t1") == ["m0"]


@anyio_test
async def test_forget_needs_a_scope(working_store: WorkingMemoryStore) -> None:
    with pytest.raises(ValueError, match="scope"):
        await working_store.forget(Scope(user_id="ann"))


# One step of a random history:
# ("append", tokens) | ("compact", how many, summary tokens) | ("forget", which message)
_operation = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 50)),
    st.tuples(st.just("compact"), st.integers(0, 6), st.integers(0, 30)),
    st.tuples(st.just("forget"), st.integers(0, 20)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(_operation, max_size=20))
def test_token_totals_always_equal_the_recount(
    working_store_opener: WorkingStoreOpener, history: list[tuple[Any, ...]]
) -> None:
    thread = uuid.uuid4().hex  # the store persists across examples; each example has its own thread

    async def play() -> None:
        async with working_store_opener() as store:
            for step, op in enumerate(history):
                memory = await store.get("ann", thread)
                if op[0] == "append":
                    await store.append("ann", thread, turn(step, tokens=op[1]))
                elif op[0] == "compact" and memory is not None:
                    removed = [m.id for m in memory.messages[: op[1]]]
                    assert await store.compact(
                        "ann",
                        thread,
                        expected_version=memory.summary_version,
                        removed_ids=removed,
                        summary=f"summary {step}",
                        summary_token_count=op[2],
                    )
                elif op[0] == "forget" and memory is not None and memory.messages:
                    victim = memory.messages[op[1] % len(memory.messages)].id
                    await store.forget(Scope(user_id="ann", thread_id=thread, memory_id=victim))
                memory = await store.get("ann", thread)
                if memory is not None:
                    assert await info(store, "ann", thread) == (len(memory.messages), memory.token_count)

    anyio.run(play, backend="asyncio")


# TTL: SQLite keeps threads until forgotten; Redis expires idle ones by itself.


@anyio_test
async def test_redis_thread_expires_after_its_ttl(redis_url: str) -> None:
    settings_ = redis_settings(redis_url, ttl_seconds=1)
    try:
        async with RedisWorkingMemoryStore.open(settings_) as store:
            await fill(store, "ann", "t1", 3)
            await store.set_data("ann", "t1", {"k": "v"})
            assert await store.get("ann", "t1") is not None
            with anyio.fail_after(HANG_SECONDS):
                while await store.get("ann", "t1") is not None:  # noqa: ASYNC110 (polling Redis expiry)
                    await anyio.sleep(0.1)  # until Redis expires the idle thread
            assert await store.list_threads("ann") == []
            # Nothing of the old thread survives: a new turn starts from zero.
            totals = await store.append("ann", "t1", turn("new", tokens=4))
            assert (totals.token_count, totals.message_count) == (4, 1)
            assert await ids(store, "ann", "t1") == ["mnew"]
    finally:
        delete_prefix(redis_url, settings_.key_prefix)


@anyio_test
async def test_exists_tells_a_live_thread_from_a_missing_one(working_store: WorkingMemoryStore) -> None:
    assert await working_store.exists("ann", "t1") is False
    await working_store.append("ann", "t1", turn(1))
    assert await working_store.exists("ann", "t1") is True
    assert await working_store.exists("bob", "t1") is False, "threads are per user"
    await working_store.forget(Scope(user_id="ann", thread_id="t1"))
    assert await working_store.exists("ann", "t1") is False
