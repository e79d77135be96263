"""Each user's in-memory search indexes for the embedded store, kept true to a file many processes share.

Claude Desktop, an IDE agent and a command-line agent each run their own `mcp-memory serve` on the
same data file. Every write of memories takes the next number of the file's change clock (the rows
carry it as `change_seq`) and every deletion leaves a tombstone, so an index that reflects clock
number S is brought up to date by reading only what changed after S, in one read transaction with
the clock itself: no window in which a commit can be missed, noticing another process's write costs
the rows it changed, and writes to another user's memories, to working memory, leases or counters
cost a user's index nothing.

An index not in memory is loaded from its snapshot beside the file (storage/sqlite/snapshots.py) and
caught up from there; only without a usable snapshot is it built from the file. Indexes live within
a memory budget: the least recently used users' are dropped first (they reload from their snapshot).
Dead rows (rewritten or removed memories) are reclaimed when they pile up (a snapshot holds live rows
only). All the heavy work runs on worker threads, one user's index under that user's lock.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import numpy as np

from mcp_memory.errors import BackendUnavailableError
from mcp_memory.models import EmbeddingSpec
from mcp_memory.search.text_index import Document, TextIndex
from mcp_memory.search.vector_index import VectorIndex
from mcp_memory.storage.sqlite.codec import parse_ts, unpack_passages
from mcp_memory.storage.sqlite.cold_build import StreamedBuild
from mcp_memory.storage.sqlite.cold_start import ColdStarts, more_than
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.snapshots import Snapshot, SnapshotFolder, Stamp, user_key

log = logging.getLogger(__name__)

# What an index reads of a memory. Row order: rowid, thread, type, created, vector, superseded_by,
# content, context, passage vectors (a long memory's).
INDEXED_COLUMNS = (
    "rowid, thread_id, type, created_at, embedding, superseded_by, content, index_context, passage_embeddings"
)
SAVE_AFTER_CHANGES = 1000  # a snapshot is rewritten once this many changes (or 5% of rows) were applied
COMPACT_AT_LEAST = 1000  # dead rows before an index is compacted (and a quarter of its rows)
TOMBSTONE_DAYS = 30  # an index idle for longer than this is rebuilt, not caught up
REFRESH_AFTER = 0.05  # seconds after a write before its user's indexes catch up in the background
# A user with more memories than this and no snapshot is built in the background, in bounded memory,
# answering meanwhile from what is ready (storage/sqlite/cold_start.py); fewer are built at once.
STREAM_ABOVE = 50_000


@dataclass(frozen=True)
class Changes:
    seq: int  # the clock's number they bring an index to
    rows: list[tuple[Any, ...]]  # INDEXED_COLUMNS of rows written since
    removed: list[int]  # rowids deleted since


@dataclass
class IndexStats:
    """What the indexes cost so far, for tests and benchmarks."""

    builds: int = 0  # from the whole file
    loads: int = 0  # from a snapshot
    saves: int = 0
    rows_applied: int = 0  # rows and tombstones applied while catching up
    evictions: int = 0


@dataclass(eq=False)
class UserIndex:
    user_id: str
    text: TextIndex
    vectors: VectorIndex
    seq: int  # the point of the file's change clock this index reflects
    unsaved: int = 0  # changes applied since the snapshot was written
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    partial: bool = False  # being built from the file: answers from what is ready (cold_start.py)

    def apply(self, changes: Changes) -> None:
        """Bring the index to `changes.seq` (blocking: a worker thread, under the lock).

        Removals first: a rowid SQLite handed out again after a deletion arrives as a new row.
        """
        for rowid in changes.removed:
            self.text.remove(rowid)
            self.vectors.remove(rowid)
        for row in changes.rows:
            document, vector = _decoded(row)
            if document is None:  # a superseded memory is kept in the file but never searched
                self.text.remove(row[0])
                self.vectors.remove(row[0])
                continue
            if not self.text.holds(document):  # a row whose vector alone was written: its text stands
                self.text.upsert(document)
            if vector is None:
                self.vectors.remove(document.rowid)
            else:
                self.vectors.upsert(document.rowid, vector, **_columns(document))
        self.seq = changes.seq
        self.unsaved += len(changes.rows) + len(changes.removed)
        # Reclaimed in memory, unless the index's bulk is read from its snapshot file: compacting would
        # read it all in (1.5 GB of vectors at a million memories). Its dead rows cost a flag each here;
        # its next snapshot holds live rows only, and the next process loads that.
        if self.text.dead > max(COMPACT_AT_LEAST, len(self.text) // 4) and not self.text.file_backed:
            self.text = self.text.compacted()
        if self.vectors.dead > max(COMPACT_AT_LEAST, len(self.vectors) // 4) and not self.vectors.file_backed:
            self.vectors = self.vectors.compacted()
        self.vectors.settle()  # grown past the approximate index's threshold: build it now

    def nbytes(self) -> int:
        return self.text.nbytes() + self.vectors.nbytes()


class SearchIndexes:
    def __init__(
        self,
        db: SqliteDatabase,
        embedding: EmbeddingSpec,
        *,
        memory_budget: int,
        ann_min_rows: int = 0,
        ann_expansion: int = 1024,
        stream_above: int | None = None,
    ) -> None:
        self._db = db
        self._stream_above = STREAM_ABOVE if stream_above is None else stream_above
        self._spec = embedding
        self._budget = memory_budget
        # How each user's VectorIndex is made: exact, and approximate from ann_min_rows vectors on.
        self._vector_args = {
            "dimension": embedding.dimension,
            "ann_min_rows": ann_min_rows,
            "ann_expansion": ann_expansion,
        }
        self._snapshots = SnapshotFolder.beside(db.path)
        self._file_id = ""
        self._users: OrderedDict[str, UserIndex] = OrderedDict()  # least recently used first
        self._open_lane = anyio.Lock()  # one load or build at a time: two first searches open once
        self._saving: set[asyncio.Task[None]] = set()
        self._refreshing: dict[str, asyncio.Task[None]] = {}  # user id -> its catch-up under way
        self._refresh_again: set[str] = set()  # written to again while catching up
        self.stats = IndexStats()
        self.cold = ColdStarts(self, INDEXED_COLUMNS)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        db: SqliteDatabase,
        embedding: EmbeddingSpec,
        *,
        memory_budget: int,
        ann_min_rows: int = 0,
        ann_expansion: int = 1024,
        stream_above: int | None = None,
    ) -> AsyncIterator[SearchIndexes]:
        indexes = cls(
            db,
            embedding,
            memory_budget=memory_budget,
            ann_min_rows=ann_min_rows,
            ann_expansion=ann_expansion,
            stream_above=stream_above,
        )
        indexes._file_id = await db.read(_file_id)
        try:
            yield indexes
        finally:
            for task in list(indexes._refreshing.values()):
                task.cancel()
            indexes.cold.cancel()
            with anyio.CancelScope(shield=True):  # a snapshot being written finishes, never half-renamed
                await indexes.cold.stopped()
                await indexes.saved()

    async def saved(self) -> None:
        """Wait for the snapshot writes under way."""
        while self._saving:
            await asyncio.wait(set(self._saving))

    @asynccontextmanager
    async def current(self, user_id: str) -> AsyncIterator[UserIndex]:
        """The user's indexes, up to date with every commit made to the file before this call, held
        (for this user) until the block ends."""
        index = await self._index_of(user_id)
        async with index.lock:
            await self._catch_up(index)
            yield index
        self._save_if_due(index)
        self._evict(keep=index)

    def refresh_soon(self, user_id: str) -> None:
        """This process just wrote the user's memories: if their indexes are in memory, catch up in the
        background, shortly (a burst of writes is applied together), so the next search finds nothing
        left to apply: a conversation's long messages are indexed as they come, not at its first search."""
        if user_id not in self._users:
            return
        if user_id in self._refreshing:
            self._refresh_again.add(user_id)
            return
        task = asyncio.get_running_loop().create_task(self._refresh(user_id))
        self._refreshing[user_id] = task
        task.add_done_callback(lambda done: self._refreshed(user_id, done))

    async def _refresh(self, user_id: str) -> None:
        while True:
            await anyio.sleep(REFRESH_AFTER)
            self._refresh_again.discard(user_id)
            index = self._users.get(user_id)
            if index is None:
                return
            async with index.lock:
                await self._catch_up(index)
            self._save_if_due(index)
            if user_id not in self._refresh_again:
                return

    def _refreshed(self, user_id: str, task: asyncio.Task[None]) -> None:
        self._refreshing.pop(user_id, None)
        self._refresh_again.discard(user_id)
        if not task.cancelled() and task.exception() is not None:
            # A cache kept ahead of time: the next search catches up itself.
            log.warning("search indexes of %s not caught up in the background: %s", user_id, task.exception())

    async def warm(self, user_id: str) -> None:
        """Load or build the user's indexes now, if they fit the budget beside those already held."""
        if user_id not in self._users and self.memory_bytes() >= self._budget:
            log.info("search indexes of %s not prepared ahead: the index memory budget is in use", user_id)
            return
        async with self.current(user_id):
            pass

    def memory_bytes(self) -> int:
        """An estimate of what the indexes held in memory take."""
        return sum(index.nbytes() for index in self._users.values())

    def users_held(self) -> int:
        """Users whose indexes are in memory now."""
        return len(self._users)

    def memories_held(self) -> int:
        """Memories in the indexes held in memory (each user's text index counts them)."""
        return sum(index.text.memories() for index in self._users.values())

    async def snapshot(self, user_id: str) -> None:
        """Write the user's snapshot now (it is otherwise written after a build and every so many
        changes), if their indexes are in memory."""
        index = self._users.get(user_id)
        if index is not None and not index.partial:
            await self._save(index)

    async def forgotten(self, user_id: str) -> None:
        """Memories of the user were deleted: a build from the file under way starts again (its spill
        files go first), and their snapshot, which still holds them, goes now."""
        await self.cold.forgotten(user_id)
        self._snapshots.remove(user_id)

    # ---- opening: a snapshot, else the whole file ---------------------------------------------

    async def _index_of(self, user_id: str) -> UserIndex:
        index = self._users.get(user_id)
        if index is None:
            async with self._open_lane:
                index = self._users.get(user_id)
                if index is None:
                    index = self._users[user_id] = await self._open_index(user_id)
                    self._log_memory(f"search indexes of {user_id} ready: {index.text.memories()} memories")
        self._users.move_to_end(user_id)
        return index

    async def _open_index(self, user_id: str) -> UserIndex:
        loaded = await self._load(user_id)
        if loaded is not None:
            return loaded
        if not await self._db.read(lambda conn: more_than(conn, user_id, self._stream_above)):
            return await self._build(user_id)
        return cast(UserIndex, await self.cold.start(user_id))  # the preview it made: ours

    # ---- what a cold start (cold_start.py) uses ------------------------------------------------

    @property
    def db(self) -> SqliteDatabase:
        return self._db

    @property
    def file_id(self) -> str:
        return self._file_id

    @property
    def snapshots(self) -> SnapshotFolder:
        return self._snapshots

    def spec_key(self) -> tuple[str, int]:
        return self._spec_key()

    async def load(self, user_id: str) -> UserIndex | None:
        return await self._load(user_id)

    async def catch_up(self, index: UserIndex) -> None:
        await self._catch_up(index)

    @staticmethod
    def removed_since(conn: sqlite3.Connection, user_id: str, since: int) -> bool:
        return _removed_since(conn, user_id, since)

    def log_memory(self, event: str) -> None:
        self._log_memory(event)

    def streamed_build(self, user_id: str) -> StreamedBuild:
        return StreamedBuild(
            self._db,
            user_id,
            self._snapshots.path,
            _decoded,
            dimension=self._spec.dimension,
            ann_min_rows=self._vector_args["ann_min_rows"],
            ann_expansion=self._vector_args["ann_expansion"],
        )

    def preview_from_rows(self, user_id: str, seq: int, rows: Sequence[tuple[Any, ...]]) -> UserIndex:
        """An index of these rows alone, exact (a preview while the whole is built)."""
        args = {**self._vector_args, "ann_min_rows": 0}
        return self._index_from_rows(user_id, seq, rows, args)

    def complete(self, user_id: str) -> bool:
        """Whether the user's indexes in memory are whole (not a cold start's preview)."""
        index = self._users.get(user_id)
        return index is not None and not index.partial

    async def _load(self, user_id: str) -> UserIndex | None:
        snapshot = await anyio.to_thread.run_sync(self._snapshots.load, user_id)
        if snapshot is None:
            return None
        stamp = snapshot.stamp
        if (stamp.file_id, stamp.model, stamp.dimension) != (self._file_id, *self._spec_key()):
            log.info("search index snapshot of another data file or model ignored")
            self._snapshots.remove(user_id)
            return None

        def indexes() -> UserIndex | None:
            try:
                text = TextIndex.from_columns(snapshot.text)
                vectors = VectorIndex.from_columns(snapshot.vectors, **self._vector_args)
            except (KeyError, IndexError, ValueError, TypeError) as e:  # arrays that do not fit together
                log.warning(
                    "search index snapshot of %s ignored (%s); the index is built from the file", user_id, e
                )
                return None
            return UserIndex(user_id, text, vectors, stamp.seq)

        index = await anyio.to_thread.run_sync(indexes)
        if index is None:
            self._snapshots.remove(user_id)
            return None
        self.stats.loads += 1
        return index

    async def _build(self, user_id: str) -> UserIndex:
        started = time.perf_counter()
        seq, rows = await self._db.read(lambda conn: _read_all(conn, user_id))
        # Off the database's lanes: tokenizing and stemming every memory is the long part.
        index = await anyio.to_thread.run_sync(self._index_from_rows, user_id, seq, rows)
        self.stats.builds += 1
        log.info(
            "search indexes of %s built from the file: %d memories in %.2f s",
            user_id,
            index.text.memories(),
            time.perf_counter() - started,
        )
        index.unsaved = max(SAVE_AFTER_CHANGES, len(index.text))  # worth a snapshot right away
        return index

    def _index_from_rows(
        self, user_id: str, seq: int, rows: Sequence[tuple[Any, ...]], args: dict[str, int] | None = None
    ) -> UserIndex:
        vectors = VectorIndex(**(args or self._vector_args))
        vectors.reserve(len(rows))
        documents = []
        for row in rows:  # active rows only (_read_all)
            document, vector = _decoded(row)
            assert document is not None
            if vector is not None:
                vectors.upsert(document.rowid, vector, **_columns(document))
            documents.append(document)
        vectors.settle()  # the approximate index, in one bulk insert, when the user has enough vectors
        return UserIndex(user_id, TextIndex.of(documents), vectors, seq)

    # ---- catching up ---------------------------------------------------------------------------

    async def _catch_up(self, index: UserIndex) -> None:
        changes = await self._db.read(lambda conn: _read_changes(conn, index.user_id, index.seq))
        if changes is None and index.partial:
            return  # its build, under way, reads the file as it is now
        if changes is None:  # the file went back (a restored backup) or the tombstones were pruned
            fresh = await self._build(index.user_id)
            index.text, index.vectors, index.seq = fresh.text, fresh.vectors, fresh.seq
            index.unsaved = fresh.unsaved
        elif changes.rows or changes.removed:
            await anyio.to_thread.run_sync(index.apply, changes)
            self.stats.rows_applied += len(changes.rows) + len(changes.removed)
        else:
            index.seq = changes.seq  # others' writes: nothing of this user's to apply

    # ---- snapshots and the memory budget -------------------------------------------------------

    def _save_if_due(self, index: UserIndex) -> None:
        due = max(SAVE_AFTER_CHANGES, len(index.text) // 20)
        if index.unsaved < due or index.lock.locked() or index.partial:
            return
        index.unsaved = 0
        task = asyncio.get_running_loop().create_task(self._save(index))
        self._saving.add(task)
        task.add_done_callback(self._saved)

    def _saved(self, task: asyncio.Task[None]) -> None:
        self._saving.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # A snapshot is a cache: failing to write one costs the next process a build, nothing else.
            log.warning("search index snapshot not written: %s", task.exception())

    async def _save(self, index: UserIndex) -> None:
        async with index.lock:  # a moment's copy; the arrays are gathered and written without the lock
            stamp = Stamp(self._file_id, index.seq, *self._spec_key())
            text, vectors = await anyio.to_thread.run_sync(
                lambda: (index.text.frozen(), index.vectors.frozen())
            )

        def write() -> None:
            snapshot = Snapshot(stamp, text.columns(), vectors.columns())
            self._snapshots.save(index.user_id, snapshot)

        await anyio.to_thread.run_sync(write)
        # A forget committed after `stamp.seq` may have removed the snapshot before the rename above
        # put this one, which still holds what it deleted, in its place.
        try:
            removed = await self._db.read(lambda conn: _removed_since(conn, index.user_id, stamp.seq))
        except BackendUnavailableError:
            removed = True  # unchecked, it may hold what a forget deleted: it goes
        if removed:
            self._snapshots.remove(index.user_id)
        else:
            self.stats.saves += 1

    def _evict(self, keep: UserIndex) -> None:
        total = self.memory_bytes()
        for user_id, index in list(self._users.items()):
            if total <= self._budget:
                break
            if index is keep or index.lock.locked() or index.partial:
                continue
            del self._users[user_id]
            total -= index.nbytes()
            self.stats.evictions += 1
            self._log_memory(f"search indexes of {user_id} dropped from memory (index memory budget)")

    def _log_memory(self, event: str) -> None:
        log.info(
            "%s; indexes in memory %.0f of %.0f MB; process RSS %s",
            event,
            self.memory_bytes() / 2**20,
            self._budget / 2**20,
            _rss(),
        )

    def _spec_key(self) -> tuple[str, int]:
        return self._spec.model, self._spec.dimension


def _decoded(row: tuple[Any, ...]) -> tuple[Document | None, np.ndarray | None]:
    """An INDEXED_COLUMNS row as its text document and vectors (one a passage); no document for a
    superseded memory."""
    rowid, thread_id, kind, created, blob, superseded, content, context, passages = row
    if superseded is not None:
        return None, None
    moment = parse_ts(created).timestamp()  # type: ignore[union-attr]
    return Document(rowid, content, context or "", thread_id, kind, moment), unpack_passages(blob, passages)


def _columns(document: Document) -> dict[str, Any]:
    return {"thread_id": document.thread_id, "type": document.type, "created": document.created}


def _file_id(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'file_id'").fetchone()
    return str(row[0])


def _clock(conn: sqlite3.Connection) -> int:
    seq: int = conn.execute("SELECT seq FROM change_clock").fetchone()[0]
    return seq


def _read_all(conn: sqlite3.Connection, user_id: str) -> tuple[int, list[tuple[Any, ...]]]:
    rows = conn.execute(
        f"SELECT {INDEXED_COLUMNS} FROM memories WHERE user_id = ? AND superseded_by IS NULL ORDER BY rowid",
        (user_id,),
    ).fetchall()
    return _clock(conn), rows


def _read_changes(conn: sqlite3.Connection, user_id: str, since: int) -> Changes | None:
    """What changed for the user after clock number `since`; None if that cannot be told any more."""
    seq = _clock(conn)
    if seq == since:
        return Changes(seq, [], [])
    horizon = int(conn.execute("SELECT value FROM meta WHERE key = 'tombstone_horizon'").fetchone()[0])
    if since > seq or since < horizon:
        return None
    removed = [
        r[0]
        for r in conn.execute(
            "SELECT row FROM memory_tombstones WHERE user_key = ? AND seq > ?", (user_key(user_id), since)
        )
    ]
    rows = conn.execute(
        f"SELECT {INDEXED_COLUMNS} FROM memories WHERE user_id = ? AND change_seq > ?", (user_id, since)
    ).fetchall()
    return Changes(seq, rows, removed)


def _removed_since(conn: sqlite3.Connection, user_id: str, since: int) -> bool:
    row = conn.execute(
        "SELECT 1 FROM memory_tombstones WHERE user_key = ? AND seq > ? LIMIT 1", (user_key(user_id), since)
    ).fetchone()
    return row is not None


def _rss() -> str:
    """The process's resident memory, where the system tells it cheaply (Linux)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return "unknown"
    return f"{pages * os.sysconf('SC_PAGE_SIZE') / 2**20:.0f} MB"
