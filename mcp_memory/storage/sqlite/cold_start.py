"""A large user's indexes built from the file in the background, answering meanwhile from what is ready.

A user with more than `stream_above` memories and no usable snapshot (storage/sqlite/snapshots.py) is
not built in one go before the first search answers (minutes at a million memories). Instead:

1. at once, a preview: an index of the user's newest PREVIEW_MEMORIES memories, both sides, in memory;
2. the streamed build (storage/sqlite/cold_build.py) runs in the background; when its words side is
   merged, it replaces the preview's (every memory by its words: a text index reading the merged
   postings where they lie), the meaning side still the preview's;
3. when the whole snapshot is written, it is loaded as after any restart and caught up, and replaces
   the preview's indexes in place: the same PartialIndex, no longer partial.

Until then the index is `partial`, and a search on it says its meaning side was incomplete (the
`meaning_incomplete` of search results, as after an import: service/searching.py). A partial index is
never saved as a snapshot nor dropped from memory. A search never waits for the build; a failed build
is logged and the next first search of the user starts another.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Protocol

import anyio

from mcp_memory.search.text_index import TextIndex
from mcp_memory.search.vector_index import VectorIndex
from mcp_memory.storage.sqlite.cold_build import BuildStopped, StreamedBuild
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.snapshots import Snapshot, SnapshotFolder, Stamp

log = logging.getLogger(__name__)

PREVIEW_MEMORIES = 5_000  # the newest memories a search answers from while the build starts
# The build waits this long before it starts, so that the search which found no snapshot answers first
# (tokenizing a chunk on a worker thread would take the interpreter from it).
BUILD_AFTER_S = 1.0


class PartialIndex(Protocol):
    """What a cold start changes of a user's index (storage/sqlite/indexes.py UserIndex)."""

    text: TextIndex
    vectors: VectorIndex
    seq: int
    unsaved: int
    lock: anyio.Lock
    partial: bool


class SearchIndexes(Protocol):
    """What a cold start uses of the indexes it fills (storage/sqlite/indexes.py SearchIndexes)."""

    stats: Any  # IndexStats

    @property
    def db(self) -> SqliteDatabase: ...
    @property
    def file_id(self) -> str: ...
    @property
    def snapshots(self) -> SnapshotFolder: ...
    def spec_key(self) -> tuple[str, int]: ...
    async def load(self, user_id: str) -> Any: ...
    async def catch_up(self, index: Any) -> None: ...
    def removed_since(self, conn: sqlite3.Connection, user_id: str, since: int) -> bool: ...
    def log_memory(self, event: str) -> None: ...
    def streamed_build(self, user_id: str) -> StreamedBuild: ...
    def preview_from_rows(self, user_id: str, seq: int, rows: Sequence[tuple[Any, ...]]) -> PartialIndex: ...


class ColdStarts:
    def __init__(self, indexes: SearchIndexes, columns: str) -> None:
        self._indexes = indexes
        self._columns = columns
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._previews: dict[str, PartialIndex] = {}  # what each build under way completes
        self._closing = False
        self.builds: dict[str, StreamedBuild] = {}  # under way, by user id (tests, benchmarks)

    async def start(self, user_id: str) -> PartialIndex:
        """The user's preview index; the full build starts in the background (once)."""
        indexes = self._indexes
        started = time.perf_counter()
        seq, rows = await indexes.db.read(lambda conn: _newest(conn, self._columns, user_id))
        preview = await anyio.to_thread.run_sync(indexes.preview_from_rows, user_id, seq, rows)
        preview.partial = True
        log.info(
            "search indexes of %s: no snapshot; answering from the newest %d memories (%.2f s) while "
            "the indexes are built from the file in the background",
            user_id,
            len(rows),
            time.perf_counter() - started,
        )
        if user_id not in self._tasks:
            self._launch(user_id, preview)
        return preview

    def _launch(self, user_id: str, preview: PartialIndex) -> None:
        self._previews[user_id] = preview
        task = asyncio.get_running_loop().create_task(self._complete(user_id, preview))
        self._tasks[user_id] = task
        task.add_done_callback(lambda done: self._finished(user_id, done))

    async def forgotten(self, user_id: str) -> None:
        """Memories of the user were deleted while their build was under way: its spill files may hold
        them (postings and vectors). The build stops, its files are removed before this returns, and it
        starts again from the file, which no longer holds them."""
        task, preview = self._tasks.get(user_id), self._previews.get(user_id)
        if task is None or preview is None:
            return
        build = self.builds.get(user_id)
        if build is not None:
            build.stop()  # a block under way on a worker thread ends it; `close` removes the files
        task.cancel()
        await asyncio.wait({task})
        self._tasks.pop(user_id, None)
        if not self._closing:
            log.info("search index build of %s started again: memories were forgotten during it", user_id)
            self._launch(user_id, preview)

    def building(self, user_id: str) -> bool:
        return user_id in self._tasks

    async def built(self, user_id: str) -> None:
        """Wait for the user's build under way, if any."""
        task = self._tasks.get(user_id)
        if task is not None:
            await asyncio.wait({task})

    def cancel(self) -> None:
        self._closing = True
        for build in self.builds.values():
            build.stop()  # a block under way on a worker thread ends it
        for task in list(self._tasks.values()):
            task.cancel()

    async def stopped(self) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks.values()))

    def _finished(self, user_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(user_id) is task:
            self._tasks.pop(user_id, None)
            self._previews.pop(user_id, None)
        if not task.cancelled() and isinstance(task.exception(), BuildStopped):
            log.info("search index build of %s stopped: the process is closing", user_id)
        elif not task.cancelled() and task.exception() is not None:
            log.warning("search indexes of %s not built from the file: %r", user_id, task.exception())

    async def _complete(self, user_id: str, preview: PartialIndex) -> None:
        indexes = self._indexes
        await anyio.sleep(BUILD_AFTER_S)
        started = time.perf_counter()
        seq = await indexes.db.read(_clock)
        build = indexes.streamed_build(user_id)
        self.builds[user_id] = build

        async def words_ready(text: TextIndex) -> None:
            async with preview.lock:  # every memory by its words; meaning still the preview's
                preview.text, preview.seq = text, min(preview.seq, seq)
                await indexes.catch_up(preview)
            log.info(
                "search indexes of %s: words side of %d memories ready (%.1f s); meaning side building",
                user_id,
                text.memories(),
                time.perf_counter() - started,
            )

        try:
            text, vectors = await build.run(self._columns, words_ready)
            stamp = Stamp(indexes.file_id, seq, *indexes.spec_key())
            await anyio.to_thread.run_sync(indexes.snapshots.save, user_id, Snapshot(stamp, text, vectors))
            del text, vectors
            loaded = await indexes.load(user_id)
            if loaded is None:
                raise RuntimeError("the snapshot just written could not be read")
            async with preview.lock:
                await indexes.catch_up(loaded)
                preview.text, preview.vectors, preview.seq = loaded.text, loaded.vectors, loaded.seq
                preview.unsaved, preview.partial = loaded.unsaved, False
            if await indexes.db.read(lambda conn: indexes.removed_since(conn, user_id, seq)):
                indexes.snapshots.remove(user_id)  # it holds what a forget deleted since: written again later
                preview.unsaved = max(preview.unsaved, 1_000_000)
        finally:
            self.builds.pop(user_id, None)
            build.close()
        indexes.stats.builds += 1
        indexes.log_memory(
            f"search indexes of {user_id} built from the file in bounded memory: "
            f"{preview.text.memories()} memories in {time.perf_counter() - started:.1f} s"
        )


def _clock(conn: sqlite3.Connection) -> int:
    seq: int = conn.execute("SELECT seq FROM change_clock").fetchone()[0]
    return seq


def _newest(conn: sqlite3.Connection, columns: str, user_id: str) -> tuple[int, list[tuple[Any, ...]]]:
    """The clock and the user's newest active memories (a walk of the table from its end)."""
    rows = conn.execute(
        f"SELECT {columns} FROM memories WHERE +user_id = ? AND +superseded_by IS NULL"
        " ORDER BY rowid DESC LIMIT ?",
        (user_id, PREVIEW_MEMORIES),
    ).fetchall()
    return _clock(conn), rows[::-1]


def more_than(conn: sqlite3.Connection, user_id: str, memories: int) -> bool:
    """Whether the user has more active memories than this (counting no further: counting a million
    took seconds)."""
    count: int = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM memories WHERE user_id = ? AND superseded_by IS NULL LIMIT ?)",
        (user_id, memories + 1),
    ).fetchone()[0]
    return count > memories
