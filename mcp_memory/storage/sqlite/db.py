"""The embedded database: one SQLite file shared by the working and long-term stores.

Two connections, each used from worker threads one call at a time (sqlite3 objects are not safe to
share concurrently): one for writes and working memory, one for search's reads, so a long read never
holds up a write. WAL lets readers (ours and other processes') read while one writer writes. Schema
changes are numbered migrations (migrations.py), run when the file is opened.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
from tenacity import retry, retry_if_exception, stop_after_delay, wait_random

from mcp_memory.audit import context as audit_context
from mcp_memory.errors import BackendUnavailableError, ConfigError
from mcp_memory.private_files import create_private, make_private_file, private_dir
from mcp_memory.storage.sqlite import erasure
from mcp_memory.storage.sqlite.migrations import migrate

SIDECARS = ("-wal", "-shm", "-journal")  # the files SQLite keeps beside the database
_BUSY_SECONDS = 5.0  # how long a statement waits for another connection's lock before "locked"

T = TypeVar("T")
log = logging.getLogger(__name__)

_RETRY_SECONDS = (1.0, 30.0)  # a pending erasure is tried again after 1 s, then less often, up to 30 s


class SqliteDatabase:
    """The connections to the data file and their lanes: `run`/`write` for everything, `read` for search."""

    def __init__(self, conn: sqlite3.Connection, reader: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._reader = reader
        self.path = path
        self._lane = anyio.Lock()
        self._read_lane = anyio.Lock()
        # Held on the worker thread while a connection is used, and by close: a call whose awaiting
        # task was cancelled (asyncio does not wait for the thread) must finish before its connection
        # closes under it; closing SQLite under a running statement crashes the process.
        self._in_use = {id(conn): threading.Lock(), id(reader): threading.Lock()}
        self._erasing: asyncio.Task[None] | None = None  # a forget's erasure waiting out a reader

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path) -> AsyncIterator[SqliteDatabase]:
        conn = await anyio.to_thread.run_sync(_connect, path)
        try:
            reader = await anyio.to_thread.run_sync(_connect_reader, path)
        except BaseException:
            await anyio.to_thread.run_sync(conn.close)
            raise
        db = cls(conn, reader, path)
        try:
            yield db
        finally:
            with anyio.CancelScope(shield=True):
                await db._last_erasure()
                await anyio.to_thread.run_sync(db._close, reader)
                await anyio.to_thread.run_sync(db._close, conn)

    def _close(self, conn: sqlite3.Connection) -> None:
        with self._in_use[id(conn)]:
            conn.close()

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work(conn)` on a worker thread, one at a time."""
        async with self._lane:
            return await self._call(work, self._conn)

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work(conn)` in one read transaction on a second connection, with a lane of its own.

        For search: reading the rows an index catches up on (all of a user's, on a first build) must
        not hold up the lane that working memory and writes go through. In WAL mode the whole of
        `work` sees the file as of its first read, whatever commits meanwhile.
        """

        def in_transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN")
            try:
                return work(conn)
            finally:
                conn.execute("COMMIT")

        async with self._read_lane:
            return await self._call(in_transaction, self._reader)

    async def _call(self, work: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
        def guarded() -> T:
            with self._in_use[id(conn)]:
                return work(conn)

        try:
            return await anyio.to_thread.run_sync(guarded)
        except sqlite3.ProgrammingError as e:  # used after close: a call left running at shutdown
            raise BackendUnavailableError(
                f"the memory database {self.path} is closed", backend="sqlite"
            ) from e
        except sqlite3.OperationalError as e:
            if _is_lock(e):
                raise BackendUnavailableError(
                    f"the memory database {self.path} is locked by another process; try again shortly",
                    backend="sqlite",
                ) from e
            raise BackendUnavailableError(
                f"the memory database {self.path} failed: {e}", backend="sqlite"
            ) from e
        except sqlite3.DatabaseError as e:
            raise BackendUnavailableError(
                f"the memory database {self.path} is damaged ({e}); restore it from a backup",
                backend="sqlite",
            ) from e

    async def erase_forgotten(self) -> bool:
        """After a forget: no byte of what it deleted left in the file or its log (erasure.py); the
        file shrinks by the pages it freed. False when another process's read transaction keeps the old
        pages alive past the busy timeout: the erasure is then finished in the background, and logged."""
        try:
            if await self.run(erasure.erase):
                return True
        except BackendUnavailableError as e:  # locked beyond the timeout: as a reader that stays
            log.warning("erasing what was forgotten from %s: %s", self.path, e)
        if self._erasing is None or self._erasing.done():
            self._erasing = asyncio.get_running_loop().create_task(self._erase_later())
        return False

    async def _erase_later(self) -> None:
        started, wait = time.monotonic(), _RETRY_SECONDS[0]
        log.warning(
            "a forget is pending on disk: another process is reading %s; erased as soon as it stops",
            self.path,
        )
        while True:
            await anyio.sleep(wait)
            try:
                if await self.run(erasure.checkpoint):
                    break
            except BackendUnavailableError:
                pass
            wait = min(wait * 2, _RETRY_SECONDS[1])
        log.warning(
            "the pending forget is now erased from %s (after %.1f s)", self.path, time.monotonic() - started
        )

    async def _last_erasure(self) -> None:
        """At close: one last try for a pending erasure (closing the last connection to the file
        checkpoints it too)."""
        if self._erasing is None or self._erasing.done():
            return
        self._erasing.cancel()
        try:
            done = await self._call(erasure.checkpoint, self._conn)
        except BackendUnavailableError:
            done = False
        if done:
            log.warning("the pending forget is now erased from %s (at close)", self.path)
        else:
            log.warning(
                "a forget is still pending on disk in %s at close: another process is reading it; the "
                "next forget or the last process to close the file erases it",
                self.path,
            )

    async def write(self, work: Callable[[sqlite3.Connection], T], *, change: bool = False) -> T:
        """Run `work(conn)` inside one IMMEDIATE transaction: all of it happens, or none. With `change`
        (a write of memory a user made: a put, a forget, a revision, a graph edit), the audit record of
        the change open in this context, if any and if its trail is in this file, is written inside the
        same transaction (audit/context.py)."""
        draft = audit_context.pending_in(self) if change else None
        prepared = draft.sink.prepare(draft) if draft is not None and draft.sink is not None else None

        def in_transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
                if draft is not None:
                    draft.sink.append_in(conn, draft, prepared)  # type: ignore[union-attr]
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        result = await self.run(in_transaction)
        if draft is not None:
            draft.recorded = True
        return result


def _connect(path: Path) -> sqlite3.Connection:
    try:
        private_dir(path.parent)
        # SQLite creates the -wal and -shm with the database's mode: 0600 before it opens the file.
        create_private(path)
        for sidecar in SIDECARS:
            make_private_file(path.with_name(path.name + sidecar))
    except OSError as e:
        raise ConfigError(f"cannot create the data directory {path.parent}: {e.strerror}") from e
    try:
        conn = sqlite3.connect(path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise ConfigError(f"cannot open the memory database {path}: {e}") from e
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_SECONDS * 1000)}")
        erasure.prepare(conn)  # secure_delete, auto_vacuum: what a forget leaves on disk (erasure.py)
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
        erasure.make_reclaimable(conn, path)
        # Take and drop the write lock once: another process holding it must stop us now, clearly,
        # not at the first tool call.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.OperationalError as e:
        conn.close()
        if _is_lock(e):
            raise ConfigError(
                f"the memory database {path} is locked by another process; stop it or set "
                "MCP_MEMORY_DATA_DIR to another directory"
            ) from e
        raise ConfigError(f"the memory database {path} cannot be used: {e}") from e
    except sqlite3.DatabaseError as e:
        conn.close()
        raise ConfigError(
            f"the memory database {path} is corrupt or not a database ({e}); move it aside to start "
            "afresh, or restore it from a backup"
        ) from e
    return conn


def _connect_reader(path: Path) -> sqlite3.Connection:
    """The search lane's connection: the file is already open and migrated by `_connect`."""
    conn = sqlite3.connect(path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_SECONDS * 1000)}")
    conn.execute("PRAGMA query_only = ON")
    return conn


def _is_lock(error: sqlite3.OperationalError) -> bool:
    return "locked" in str(error) or "busy" in str(error)


def _locked(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and _is_lock(error)


# Switching a new file to WAL needs the file to itself for a moment. SQLite answers "locked" at once,
# without waiting out busy_timeout, when another connection opening the same new file holds a shared
# lock meanwhile (waiting could deadlock the two), so clients starting together retry here.
@retry(
    retry=retry_if_exception(_locked),
    stop=stop_after_delay(_BUSY_SECONDS),
    wait=wait_random(0.005, 0.05),
    reraise=True,
)
def _use_wal(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
