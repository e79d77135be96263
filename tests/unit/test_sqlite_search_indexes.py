"""The SQLite store's in-memory search indexes stay true to a file that other processes write: they
catch up on exactly what changed (never rebuilding for it), a build that overlaps a commit cannot leave
them stale, other users' writes and working memory cost them nothing, snapshots let a new process load
instead of build, memory stays within its budget, and search runs off the event loop.

Two stores opened on one path have two connections each, like two processes: SQLite tells them apart
only by connection.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest

from mcp_memory.models import Message, Scope
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.text_index import TextIndex
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.indexes import SearchIndexes
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
from mcp_memory.storage.sqlite.snapshots import Snapshot, SnapshotFolder
from mcp_memory.storage.sqlite.working import SqliteWorkingMemoryStore
from tests.contract.conftest_long_term import EMBEDDING, embed, memory
from tests.helpers import HANG_SECONDS

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def opened(path: Path, **options: Any) -> AsyncIterator[SqliteLongTermStore]:
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, EMBEDDING, **options) as store:
        yield store


def text_query(user: str, text: str, **fields: object) -> tuple[str, SearchQuery]:
    return user, SearchQuery.model_validate({"text": text, "mode": "text", **fields})


async def ids(store: SqliteLongTermStore, query: tuple[str, SearchQuery]) -> list[str]:
    return [h.memory.id for h in await store.search(*query, None)]


async def vector_ids(store: SqliteLongTermStore, user: str, text: str) -> list[str]:
    query = SearchQuery(text=text, mode="vector")
    return [h.memory.id for h in await store.search(user, query, embed(text))]


async def snapshots_written(store: SqliteLongTermStore) -> None:
    """Wait until the background snapshot writes started so far have finished."""
    with anyio.fail_after(HANG_SECONDS):
        await store.indexes.saved()


class Gate:
    """Holds a worker thread at a point of the test's choosing: `reached` is set when it gets there,
    and it waits there until `release()`."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self._go = threading.Event()

    def wait_here(self) -> None:  # on the worker thread
        anyio.from_thread.run_sync(self.reached.set)
        assert self._go.wait(30), "the test never released the gate"

    def release(self) -> None:
        self._go.set()


def gated(monkeypatch: pytest.MonkeyPatch, owner: type, name: str, gate: Gate) -> None:
    """Make `owner.name` (a function run on a worker thread) wait at the gate first, once."""
    original: Callable[..., Any] = getattr(owner, name)
    used: list[bool] = []

    def waiting(*args: Any, **kwargs: Any) -> Any:
        if not used:
            used.append(True)
            gate.wait_here()
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, waiting)


async def test_writes_and_forgets_through_another_process_are_searched(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as mine, opened(path) as theirs:
        await mine.put([memory("u", "bike", "I ride my bicycle")])
        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]  # builds this store's index

        await theirs.put([memory("u", "repair", "the bicycle needs a chain, bicycle")])
        assert await ids(mine, text_query("u", "bicycle")) == ["repair", "bike"]

        await theirs.forget(Scope(user_id="u", memory_id="repair"))
        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]
        assert await vector_ids(mine, "u", "bicycle") == ["bike"]

        # A rewrite and a supersession elsewhere: the old text is not found, the superseded row not at all.
        await theirs.put([memory("u", "bike", "I ride my tandem")])
        assert await ids(mine, text_query("u", "bicycle")) == []
        assert await ids(mine, text_query("u", "tandem")) == ["bike"]
        await theirs.put([memory("u", "bike", "I ride my tandem", superseded_by="other")])
        assert await ids(mine, text_query("u", "tandem")) == []
        assert await vector_ids(mine, "u", "tandem") == []

        stats = mine.indexes.stats
        assert (stats.builds, stats.loads) == (1, 0)  # all of it caught up, never rebuilt
        assert stats.rows_applied == 4  # one row for each of the four foreign writes


async def test_a_build_that_overlaps_a_foreign_commit_cannot_leave_a_stale_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as mine, opened(path) as theirs:
        await mine.put([memory("u", "bike", "I ride my bicycle")])
        gate = Gate()
        gated(monkeypatch, SearchIndexes, "_index_from_rows", gate)  # the first build has read the file
        second: list[str] = []

        async def second_search() -> None:
            second.extend(await ids(mine, text_query("u", "bicycle")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ids, mine, text_query("u", "bicycle"))
            await gate.reached.wait()
            await theirs.put([memory("u", "repair", "the bicycle needs a chain")])  # acknowledged
            tg.start_soon(second_search)  # starts after the commit, while the first build still runs
            await anyio.wait_all_tasks_blocked()
            gate.release()

        assert sorted(second) == ["bike", "repair"]
        assert sorted(await ids(mine, text_query("u", "bicycle"))) == ["bike", "repair"]
        assert mine.indexes.stats.builds == 1  # one build, then caught up


async def test_other_users_writes_and_working_memory_cost_this_users_index_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with (
        opened(path) as mine,
        SqliteDatabase.open(path) as db,
        SqliteLongTermStore.open(db, EMBEDDING) as theirs,
    ):
        await mine.put([memory("u", "bike", "I ride my bicycle")])
        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]
        stats = mine.indexes.stats
        before = (stats.builds, stats.loads, stats.rows_applied)

        working = SqliteWorkingMemoryStore(db)
        await theirs.put([memory("v", "bike", "Vera rides a bicycle too")])
        await theirs.put([memory("v", "car", "Vera's bicycle rack")])
        await theirs.forget(Scope(user_id="v", memory_id="bike"))
        await working.append("u", "t1", Message(id="m1", role="user", content="a bicycle in working memory"))
        await working.set_data("u", "t1", {"k": "v"})
        assert await working.try_lock("u", "t1", "someone", 30)

        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]
        assert (stats.builds, stats.loads, stats.rows_applied) == before

        await theirs.put([memory("u", "car", "a bicycle rack for the car")])  # this user's: one row
        assert sorted(await ids(mine, text_query("u", "bicycle"))) == ["bike", "car"]
        assert (stats.builds, stats.loads, stats.rows_applied) == (before[0], before[1], before[2] + 1)


async def test_a_new_process_loads_the_snapshot_and_catches_up_from_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as first:
        await first.put([memory("u", f"m{i}", f"my bicycle number {i}", minutes=i) for i in range(5)])
        assert len(await ids(first, text_query("u", "bicycle"))) == 5
        await snapshots_written(first)
        assert first.indexes.stats.saves == 1
        await first.put([memory("u", "late", "a bicycle bought after the snapshot", minutes=9)])
        await first.forget(Scope(user_id="u", memory_id="m0"))
        assert not SnapshotFolder.beside(path).file_of("u").exists()  # it held m0: gone with it

    async with opened(path) as second:
        found = await ids(second, text_query("u", "bicycle"))
        assert sorted(found) == ["late", "m1", "m2", "m3", "m4"]
        assert (second.indexes.stats.builds, second.indexes.stats.loads) == (1, 0)  # no snapshot: built
        await snapshots_written(second)

    async with opened(path) as third:
        await third.put([memory("u", "newest", "a bicycle bell", minutes=10)])
        assert sorted(await ids(third, text_query("u", "bicycle"))) == sorted([*found, "newest"])
        stats = third.indexes.stats
        assert (stats.builds, stats.loads, stats.rows_applied) == (0, 1, 1)


async def test_a_snapshot_renamed_into_place_after_a_forget_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as mine, opened(path) as theirs:
        await mine.put([memory("u", "bike", "I ride my bicycle"), memory("u", "old", "an old bicycle")])
        gate = Gate()
        gated(monkeypatch, SnapshotFolder, "save", gate)
        await ids(mine, text_query("u", "bicycle"))  # builds, and starts writing a snapshot
        await gate.reached.wait()  # the snapshot holds "old" and is not in place yet
        await theirs.forget(Scope(user_id="u", memory_id="old"))  # finds no snapshot to remove
        gate.release()
        await snapshots_written(mine)
        assert not SnapshotFolder.beside(path).file_of("u").exists()
        assert mine.indexes.stats.saves == 0


async def test_a_snapshot_of_another_data_file_is_ignored(tmp_path: Path) -> None:
    async with opened(tmp_path / "a" / "memory.db") as a:
        await a.put([memory("u", "bike", "I ride my bicycle")])
        await ids(a, text_query("u", "bicycle"))
        await snapshots_written(a)
    async with opened(tmp_path / "b" / "memory.db") as b:
        await b.put([memory("u", "tea", "green tea")])
    (tmp_path / "b" / "memory.db-index").mkdir(exist_ok=True)
    SnapshotFolder.beside(tmp_path / "a" / "memory.db").file_of("u").rename(
        SnapshotFolder.beside(tmp_path / "b" / "memory.db").file_of("u")
    )
    async with opened(tmp_path / "b" / "memory.db") as b:
        assert await ids(b, text_query("u", "bicycle")) == []
        assert await ids(b, text_query("u", "tea")) == ["tea"]
        assert (b.indexes.stats.builds, b.indexes.stats.loads) == (1, 0)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "mismatched"])
async def test_a_damaged_snapshot_is_ignored_and_the_index_built(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as first:
        await first.put([memory("u", f"m{i}", f"my bicycle number {i}", minutes=i) for i in range(20)])
        await ids(first, text_query("u", "bicycle"))
        await snapshots_written(first)
    folder = SnapshotFolder.beside(path)
    snapshot = folder.file_of("u")
    whole = snapshot.read_bytes()
    if damage == "mismatched":  # a well-formed file whose arrays do not fit together
        saved = folder.load("u")
        assert saved is not None
        text = {**saved.text, "offsets": saved.text["offsets"] + 10**6}
        folder.save("u", Snapshot(saved.stamp, text, saved.vectors))
    else:
        snapshot.write_bytes(whole[: len(whole) * 2 // 3] if damage == "truncated" else b"PK" + whole[40:])

    async with opened(path) as second:
        assert len(await ids(second, text_query("u", "bicycle", limit=50))) == 20
        assert (second.indexes.stats.builds, second.indexes.stats.loads) == (1, 0)


async def test_indexes_stay_within_the_memory_budget_least_recently_used_first(tmp_path: Path) -> None:
    async with opened(tmp_path / "memory.db", index_memory=1) as store:
        for user in ("ann", "bob", "cy"):
            await store.put([memory(user, f"{user}-bike", f"{user} rides a bicycle")])
            assert await ids(store, text_query(user, "bicycle")) == [f"{user}-bike"]
            await snapshots_written(store)
        assert list(store.indexes._users) == ["cy"]  # the one in use is always kept
        assert store.indexes.stats.evictions == 2

        assert await ids(store, text_query("ann", "bicycle")) == ["ann-bike"]
        assert store.indexes.stats.loads == 1  # back from its snapshot, not rebuilt


async def test_dead_rows_are_reclaimed(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as mine, opened(path) as theirs:
        await mine.put([memory("u", "note", "version 0 of my note")])
        await ids(mine, text_query("u", "note"))
        for version in range(1, 2500):  # each rewrite leaves the old text on a dead row
            await theirs.put([memory("u", "note", f"version {version} of my note")])
            if version % 500 == 0:
                await ids(mine, text_query("u", "note"))
        assert await ids(mine, text_query("u", '"version 2499"', phrases=["version 2499"])) == ["note"]
        assert await ids(mine, text_query("u", '"version 2498"', phrases=["version 2498"])) == []
        await snapshots_written(mine)
        index = mine.indexes._users["u"]
        assert len(index.text) == 1
        assert index.text.dead <= 1000  # reclaimed as they piled up


async def test_a_search_runs_off_the_event_loop_and_off_the_write_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.db"
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, EMBEDDING) as store:
        working = SqliteWorkingMemoryStore(db)
        await store.put([memory("u", "bike", "I ride my bicycle")])
        await ids(store, text_query("u", "bicycle"))
        gate = Gate()
        gated(monkeypatch, TextIndex, "search", gate)
        found: list[str] = []

        async def search() -> None:
            found.extend(await ids(store, text_query("u", "bicycle")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            await gate.reached.wait()  # BM25 is scoring on a worker thread, held there
            # Meanwhile the loop and the database serve other sessions: a write and working memory.
            with anyio.fail_after(HANG_SECONDS):
                await store.put([memory("u", "car", "a car")])
                await working.append("u", "t1", Message(id="m1", role="user", content="hello"))
                assert (await working.get("u", "t1")) is not None
            assert found == []
            gate.release()
        assert found == ["bike"]


async def test_a_phrase_of_stopwords_is_matched_verbatim(tmp_path: Path) -> None:
    async with opened(tmp_path / "memory.db") as store:
        await store.put(
            [
                memory("u", "hamlet", "to be or not to be", minutes=1),
                memory("u", "words", "be quick, to the point", minutes=2),
                memory("u", "other", "nothing in common", minutes=3),
            ]
        )
        assert await ids(store, text_query("u", '"to be"', phrases=["to be"])) == ["hamlet"]
        assert await ids(store, text_query("u", 'point "to the"', phrases=["to the"])) == ["words"]


async def test_an_index_behind_pruned_tombstones_is_rebuilt_not_caught_up(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with opened(path) as mine, opened(path) as theirs:
        await mine.put([memory("u", "bike", "I ride my bicycle"), memory("u", "old", "an old bicycle")])
        await ids(mine, text_query("u", "bicycle"))
        await theirs.forget(Scope(user_id="u", memory_id="old"))
        # A month later (the tombstone's time moved back), the next forget prunes it.
        conn = sqlite3.connect(path)
        with conn:
            conn.execute("UPDATE memory_tombstones SET deleted_at = deleted_at - 31 * 86400")
        conn.close()
        await theirs.put([memory("u", "x", "something else")])
        await theirs.forget(Scope(user_id="u", memory_id="x"))

        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]  # the pruned deletion is not missed
        assert mine.indexes.stats.builds == 2


async def test_warming_stops_at_the_memory_budget(tmp_path: Path) -> None:
    async with opened(tmp_path / "memory.db", index_memory=1) as store:
        await store.put([memory("ann", "a", "ann's bicycle"), memory("bob", "b", "bob's bicycle")])
        await store.warm("ann")
        await store.warm("bob")  # the budget is spent: left to bob's first search
        assert list(store.indexes._users) == ["ann"]
        assert await ids(store, text_query("bob", "bicycle")) == ["b"]


async def test_closing_the_file_waits_for_a_read_whose_task_was_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncio does not wait for a worker thread when the task awaiting it is cancelled (a warm-up at
    shutdown); closing the connection under the statement it still runs crashed the process."""
    gate = Gate()
    close = SqliteDatabase._close

    def closing(self: SqliteDatabase, conn: sqlite3.Connection) -> None:
        gate.release()  # the read goes on now, while the connection is being closed
        close(self, conn)

    monkeypatch.setattr(SqliteDatabase, "_close", closing)

    def long_read(conn: sqlite3.Connection) -> int:
        gate.wait_here()
        count = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000)"
        return int(conn.execute(f"{count} SELECT count(*) FROM n").fetchone()[0])

    async with SqliteDatabase.open(tmp_path / "memory.db") as db:
        task = asyncio.get_running_loop().create_task(db.read(long_read))
        await gate.reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # Reaching this line is the test: the process did not crash, and the read ran to its end first.


async def test_a_large_user_s_vectors_get_an_approximate_index_that_snapshots_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_memory.search import vector_index

    monkeypatch.setattr(vector_index, "EXACT_AT_MOST", 10)  # at this size every search is approximate
    path = tmp_path / "memory.db"
    words = ["kayak", "violin", "garden", "comet", "harbour", "lantern", "meadow", "quartz"]
    texts = [f"{words[i % 8]} note {i} about {words[(i * 3) % 8]}" for i in range(120)]
    async with opened(path, ann_min_memories=100) as store:
        await store.put([memory("ann", f"m{i}", text) for i, text in enumerate(texts)])
        assert (await vector_ids(store, "ann", texts[7]))[0] == "m7"
        async with store.indexes.current("ann") as index:
            assert index.vectors.approximate
        await snapshots_written(store)  # the one after the build: it would land after ours, and go
        await store.forget(Scope(user_id="ann", memory_id="m7"))
        assert "m7" not in await vector_ids(store, "ann", texts[7])  # gone at once, graph or not
        await store.indexes.snapshot("ann")
        await snapshots_written(store)
    async with opened(path, ann_min_memories=100) as again:  # another process: loads, does not build
        assert (await vector_ids(again, "ann", texts[9]))[0] == "m9"
        assert again.indexes.stats.loads == 1 and again.indexes.stats.builds == 0
        async with again.indexes.current("ann") as index:
            assert index.vectors.approximate and len(index.vectors) == 119
        hybrid = SearchQuery(text=texts[12], mode="hybrid")
        assert (await again.search("ann", hybrid, embed(texts[12])))[0].memory.id == "m12"


WORDS = ["kayak", "violin", "garden", "comet", "harbour", "lantern", "meadow", "quartz"]


def ann_texts(start: int, count: int) -> list[str]:
    return [f"{WORDS[i % 8]} note {i} about {WORDS[(i * 3) % 8]}" for i in range(start, start + count)]


CRASHING_WRITER = """
import asyncio, os, sys
sys.path.insert(0, os.getcwd())
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
from mcp_memory.search.query import SearchQuery
from tests.contract.conftest_long_term import EMBEDDING, embed, memory
from tests.unit.test_sqlite_search_indexes import ann_texts

async def main(path):
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, EMBEDDING, ann_min_memories=100) as store:
        await store.put([memory("ann", f"m{i}", text) for i, text in enumerate(ann_texts(120, 60), start=120)])
        await store.search("ann", SearchQuery(text="kayak", mode="vector"), embed("kayak"))
        os.fsync = lambda fd: os._exit(9)  # the process dies mid-write: the bytes written, never renamed
        await store.indexes.snapshot("ann")

from pathlib import Path
asyncio.run(main(Path(sys.argv[1])))
"""


async def test_a_writer_that_crashes_mid_snapshot_leaves_the_last_whole_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import sys
    import time

    from mcp_memory.search import vector_index

    monkeypatch.setattr(vector_index, "EXACT_AT_MOST", 10)
    path = tmp_path / "memory.db"
    async with opened(path, ann_min_memories=100) as store:
        await store.put([memory("ann", f"m{i}", text) for i, text in enumerate(ann_texts(0, 120))])
        await vector_ids(store, "ann", "kayak")
        await store.indexes.snapshot("ann")
        await snapshots_written(store)
    folder = SnapshotFolder.beside(path)
    whole = folder.file_of("ann").read_bytes()

    # Another process adds 60 memories (committed) and dies while writing its snapshot, graph and all.
    child = await anyio.run_process([sys.executable, "-c", CRASHING_WRITER, str(path)], check=False)
    assert child.returncode == 9, child.stderr.decode()
    [leftover] = folder.path.glob("*.tmp")
    assert folder.file_of("ann").read_bytes() == whole  # the last whole snapshot, untouched

    async with opened(path, ann_min_memories=100) as again:
        texts = ann_texts(0, 180)
        for i in (7, 150, 179):  # from before the snapshot and from the crashed process's writes
            assert (await vector_ids(again, "ann", texts[i]))[0] == f"m{i}"
        stats = again.indexes.stats
        assert (stats.loads, stats.builds, stats.rows_applied) == (1, 0, 60)  # loaded, caught up
        async with again.indexes.current("ann") as index:
            assert index.vectors.approximate and len(index.vectors) == 180
        # The crashed writer's temporary file goes with the next save once it is clearly abandoned.
        old = time.time() - 2 * 3600
        os.utime(leftover, (old, old))
        await again.indexes.snapshot("ann")
        await snapshots_written(again)
    assert not leftover.exists() and folder.file_of("ann").exists()
    async with opened(path, ann_min_memories=100) as third:
        assert (await vector_ids(third, "ann", texts[150]))[0] == "m150"
        assert (third.indexes.stats.loads, third.indexes.stats.rows_applied) == (1, 0)


async def test_two_processes_cross_the_graph_threshold_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_memory.search import vector_index

    monkeypatch.setattr(vector_index, "EXACT_AT_MOST", 10)
    path = tmp_path / "memory.db"
    texts = ann_texts(0, 140)
    async with opened(path, ann_min_memories=100) as a, opened(path, ann_min_memories=100) as b:
        await a.put([memory("ann", f"m{i}", texts[i]) for i in range(70)])
        assert (await vector_ids(a, "ann", texts[3]))[0] == "m3"  # 70 rows: exact
        await b.put([memory("ann", f"m{i}", texts[i]) for i in range(70, 140)])
        assert (await vector_ids(b, "ann", texts[3]))[0] == "m3"  # b builds: 140 rows, with the graph
        assert (await vector_ids(a, "ann", texts[100]))[0] == "m100"  # a catches up past the threshold
        for store in (a, b):
            async with store.indexes.current("ann") as index:
                assert index.vectors.approximate and len(index.vectors) == 140
        await b.forget(Scope(user_id="ann", memory_id="m100"))
        assert "m100" not in await vector_ids(a, "ann", texts[100])  # a's graph still holds it: filtered
        await a.put([memory("ann", "m140", "a violin by the harbour")])
        assert (await vector_ids(b, "ann", "a violin by the harbour"))[0] == "m140"
        for store in (a, b):  # both write a snapshot of the same point: the last rename wins
            await store.indexes.snapshot("ann")
            await snapshots_written(store)
    async with opened(path, ann_min_memories=100) as c:
        assert (await vector_ids(c, "ann", texts[120]))[0] == "m120"
        assert "m100" not in await vector_ids(c, "ann", texts[100])
        assert (c.indexes.stats.loads, c.indexes.stats.builds) == (1, 0)
        async with c.indexes.current("ann") as index:
            assert index.vectors.approximate and len(index.vectors) == 140


async def test_a_large_index_read_from_its_file_is_compacted_by_its_next_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_memory.search import text_index, vector_index
    from mcp_memory.storage.sqlite import indexes, snapshots

    # At this test's size, the paths a million memories take: bulk left in the file, compaction due early.
    monkeypatch.setattr(vector_index, "EXACT_AT_MOST", 10)
    monkeypatch.setattr(text_index, "KEEP_POSTINGS_BELOW", 0)
    monkeypatch.setattr(snapshots, "OPEN_AT_LEAST", 1)
    monkeypatch.setattr(indexes, "SAVE_AFTER_CHANGES", 10**6)  # snapshots only when the test asks
    monkeypatch.setattr(indexes, "COMPACT_AT_LEAST", 1)  # a quarter of the rows dead is enough
    path = tmp_path / "memory.db"
    texts = ann_texts(0, 150)
    async with opened(path, ann_min_memories=100) as first:
        await first.put([memory("ann", f"m{i}", text) for i, text in enumerate(texts)])
        await vector_ids(first, "ann", texts[0])
        await first.indexes.snapshot("ann")
        await snapshots_written(first)
    forgotten = {f"m{i}" for i in range(0, 150, 2)}  # half: past the compaction threshold
    async with opened(path, ann_min_memories=100) as second:
        await vector_ids(second, "ann", texts[1])
        async with second.indexes.current("ann") as index:
            assert index.vectors.file_backed and index.text.file_backed
        for memory_id in sorted(forgotten):
            await second.forget(Scope(user_id="ann", memory_id=memory_id))
        for i in (1, 3, 149):
            assert (await vector_ids(second, "ann", texts[i]))[0] == f"m{i}"
        assert not forgotten & set(await ids(second, text_query("ann", "note", limit=50)))
        async with second.indexes.current("ann") as index:
            # Not read into memory to be compacted: the dead rows stay flagged.
            assert index.vectors.file_backed and index.text.file_backed and index.vectors.dead == 75
        await second.indexes.snapshot("ann")
        await snapshots_written(second)
    async with opened(path, ann_min_memories=100) as third:  # loads the snapshot: live rows only
        assert (await vector_ids(third, "ann", texts[149]))[0] == "m149"
        async with third.indexes.current("ann") as index:
            assert index.vectors.dead == 0 and len(index.vectors) == 75 and index.vectors.file_backed
