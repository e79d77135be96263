"""The embedded database: one SQLite file shared by the working and long-term stores.

Two connections, each used from worker threads one call at a time (sqlite3 objects are not safe to
share concurrently): one for writes and working memory, one for search's reads, so a long read never
holds up a write. WAL lets readers (ours and other processes') read while one writer writes. Schema changes are numbered migrations
recorded in PRAGMA user_version.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
from tenacity import retry, retry_if_exception, stop_after_delay, wait_random

from mcp_memory.audit import context as audit_context
from mcp_memory.errors import BackendUnavailableError, ConfigError

_BUSY_SECONDS = 5.0  # how long a statement waits for another connection's lock before "locked"

log = logging.getLogger(__name__)
T = TypeVar("T")

MIGRATIONS: list[str] = [
    # 1: working memory, long-term memories, full-text index
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE threads (
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        summary_tokens INTEGER NOT NULL DEFAULT 0,
        summary_version INTEGER NOT NULL DEFAULT 0,
        context_window INTEGER,
        data TEXT NOT NULL DEFAULT '{}',
        token_count INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, thread_id)
    );

    -- Summarization leases live apart from threads: taking one must not create a thread.
    CREATE TABLE leases (
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires REAL NOT NULL,
        PRIMARY KEY (user_id, thread_id)
    );

    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        token_count INTEGER NOT NULL
    );
    CREATE INDEX messages_by_thread ON messages (user_id, thread_id, seq);
    CREATE UNIQUE INDEX messages_by_id ON messages (user_id, thread_id, id);

    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        thread_id TEXT,
        role TEXT,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        index_context TEXT NOT NULL,
        embedding BLOB,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT,
        token_count INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        superseded_by TEXT,
        supersede_reason TEXT,
        superseded_at TEXT,
        UNIQUE (user_id, id)
    );
    CREATE INDEX memories_by_thread ON memories (user_id, thread_id, created_at);
    CREATE INDEX memories_by_hash ON memories (user_id, content_hash);

    -- Two columns so BM25 can weigh a memory's own words above its context (bm25(..., 1.0, w)).
    -- Porter stemming: a question and its answer often differ only in word endings (bench/locomo.py).
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        content, index_context, content='memories', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, content, index_context)
        VALUES (new.rowid, new.content, new.index_context);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, index_context)
        VALUES ('delete', old.rowid, old.content, old.index_context);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, index_context)
        VALUES ('delete', old.rowid, old.content, old.index_context);
        INSERT INTO memories_fts(rowid, content, index_context)
        VALUES (new.rowid, new.content, new.index_context);
    END;
    """,
    # 2: learning: immutable revisions of long-term memories, trigger counters and marks
    """
    CREATE TABLE revisions (
        pk INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        thread_id TEXT,
        memory_type TEXT NOT NULL,
        seq INTEGER NOT NULL,
        action TEXT NOT NULL,
        cause TEXT NOT NULL,
        content TEXT NOT NULL,
        metadata TEXT NOT NULL,
        superseded_by TEXT,
        supersede_reason TEXT,
        source_text TEXT,
        labels TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (user_id, id),
        UNIQUE (user_id, memory_id, seq)
    );
    CREATE INDEX revisions_by_thread ON revisions (user_id, thread_id);
    CREATE INDEX revisions_by_time ON revisions (created_at);

    CREATE TABLE learning_counters (
        user_id TEXT NOT NULL,
        key TEXT NOT NULL,
        number INTEGER NOT NULL DEFAULT 0,
        mark TEXT,
        expires REAL,
        PRIMARY KEY (user_id, key)
    );
    """,
    # 3: which memories are a user's active ones, answerable without reading the rows (text search)
    """
    CREATE INDEX memories_active ON memories (user_id, superseded_by, type);
    """,
    # 4: text search ranks on an in-memory index now (search/text_index.py); 3's index is unread
    """
    DROP INDEX memories_active;
    """,
    # 5: several processes share the file. Each write of memories takes the next number of a change
    # clock, so a process's in-memory search indexes catch up on what changed since the number they
    # reflect (storage/sqlite/indexes.py), and deletions leave tombstones (no content) for them to read.
    # The FTS5 index goes: the in-memory BM25 index serves quoted phrases as well.
    """
    CREATE TABLE change_clock (seq INTEGER NOT NULL);
    INSERT INTO change_clock (seq) VALUES (0);
    ALTER TABLE memories ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memories_by_change ON memories (user_id, change_seq);
    -- user_key: a hash of the user id, so a forgotten user's id is not kept with their tombstones.
    CREATE TABLE memory_tombstones (
        seq INTEGER NOT NULL,
        user_key TEXT NOT NULL,
        row INTEGER NOT NULL,
        deleted_at REAL NOT NULL
    );
    CREATE INDEX memory_tombstones_by_user ON memory_tombstones (user_key, seq);
    CREATE INDEX memory_tombstones_by_time ON memory_tombstones (deleted_at);
    INSERT INTO meta (key, value) VALUES ('tombstone_horizon', '0');
    INSERT INTO meta (key, value) VALUES ('file_id', lower(hex(randomblob(16))));
    DROP TRIGGER memories_ai;
    DROP TRIGGER memories_ad;
    DROP TRIGGER memories_au;
    DROP TABLE memories_fts;
    """,
    # 6: each user's stored bytes (security.max_stored_bytes): the UTF-8 bytes of their memories'
    # content and of their revisions' content and source text (storage/usage.py), kept by triggers in
    # the transaction of every write and deletion, so the counter is exact whichever process writes,
    # and forget and revision retention need no code of their own. An existing file is counted once,
    # here. A user's row goes with their last byte, so forgetting everything leaves no row naming them.
    """
    CREATE TABLE usage (user_id TEXT PRIMARY KEY, stored_bytes INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO usage (user_id, stored_bytes)
        SELECT user_id, sum(bytes) FROM (
            SELECT user_id, length(CAST(content AS BLOB)) AS bytes FROM memories
            UNION ALL
            SELECT user_id,
                length(CAST(content AS BLOB)) + coalesce(length(CAST(source_text AS BLOB)), 0) AS bytes
            FROM revisions
        ) GROUP BY user_id;
    CREATE TRIGGER usage_ai AFTER INSERT ON memories BEGIN
        INSERT INTO usage (user_id, stored_bytes) VALUES (new.user_id, length(CAST(new.content AS BLOB)))
        ON CONFLICT (user_id) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    END;
    CREATE TRIGGER usage_ad AFTER DELETE ON memories BEGIN
        UPDATE usage SET stored_bytes = stored_bytes - length(CAST(old.content AS BLOB))
        WHERE user_id = old.user_id;
        DELETE FROM usage WHERE user_id = old.user_id AND stored_bytes <= 0;
    END;
    CREATE TRIGGER usage_au AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO usage (user_id, stored_bytes)
        VALUES (new.user_id, length(CAST(new.content AS BLOB)) - length(CAST(old.content AS BLOB)))
        ON CONFLICT (user_id) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    END;
    -- Revisions are immutable: only inserts and deletions change their bytes.
    CREATE TRIGGER usage_revisions_ai AFTER INSERT ON revisions BEGIN
        INSERT INTO usage (user_id, stored_bytes)
        VALUES (
            new.user_id,
            length(CAST(new.content AS BLOB)) + coalesce(length(CAST(new.source_text AS BLOB)), 0)
        )
        ON CONFLICT (user_id) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    END;
    CREATE TRIGGER usage_revisions_ad AFTER DELETE ON revisions BEGIN
        UPDATE usage SET stored_bytes = stored_bytes
            - length(CAST(old.content AS BLOB)) - coalesce(length(CAST(old.source_text AS BLOB)), 0)
        WHERE user_id = old.user_id;
        DELETE FROM usage WHERE user_id = old.user_id AND stored_bytes <= 0;
    END;
    """,
    # 7: list_memories pages a user's memories by (created_at, id), across threads: read in that order
    # from an index instead of sorting every row of the user for each page.
    """
    CREATE INDEX memories_by_time ON memories (user_id, created_at, id);
    """,
    # 8: shared spaces. A space's rows are keyed "@" + its name where a user's are keyed by their id,
    # and say who wrote them; every row before this one is a personal memory, written by its owner
    # (author NULL), so nothing needs rewriting.
    """
    ALTER TABLE memories ADD COLUMN author TEXT;
    ALTER TABLE messages ADD COLUMN author TEXT;
    """,
    # 9: the knowledge graph (storage/graph_base.py): entities, their observations (each also a row of
    # memories, type "observation", which search finds), relations between entity names, and links from
    # an entity to the memories that mention it. Every table is keyed by the owner (user or space).
    """
    CREATE TABLE graph_entities (
        user_id TEXT NOT NULL,
        name TEXT NOT NULL,
        entity_type TEXT NOT NULL,
        author TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, name)
    );
    CREATE INDEX graph_entities_in_order ON graph_entities (user_id, created_at, name);
    CREATE TABLE graph_observations (
        user_id TEXT NOT NULL,
        entity TEXT NOT NULL,
        content TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        author TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, entity, content)
    );
    CREATE INDEX graph_observations_by_memory ON graph_observations (user_id, memory_id);
    CREATE TABLE graph_relations (
        user_id TEXT NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        relation_type TEXT NOT NULL,
        author TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, source, target, relation_type)
    );
    CREATE INDEX graph_relations_by_target ON graph_relations (user_id, target);
    CREATE TABLE graph_links (
        user_id TEXT NOT NULL,
        entity TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        thread_id TEXT,
        PRIMARY KEY (user_id, entity, memory_id)
    );
    CREATE INDEX graph_links_by_memory ON graph_links (user_id, memory_id);
    CREATE INDEX graph_links_by_thread ON graph_links (user_id, thread_id);
    """,
    # 10: a long memory's passage vectors (search/passages.py), float32 rows of the embedding's dimension,
    # one a passage in order; NULL for a memory of one passage (its vector is `embedding`).
    """
    ALTER TABLE memories ADD COLUMN passage_embeddings BLOB;
    """,
    # 11: the audit trail (audit/, storage/sqlite/audit.py): one hash-chained record a change or a read of
    # a space, written in the change's transaction; the columns beside `record` are its copies to filter
    # by. 'audit_key' keys the pseudonyms that stand for forgotten users.
    """
    CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        ledger TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        thread_id TEXT,
        hash TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX audit_log_by_ledger ON audit_log (ledger, seq);
    INSERT INTO meta (key, value) VALUES ('audit_key', lower(hex(randomblob(32))));
    """,
]


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
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the data directory {path.parent}: {e.strerror}") from e
    try:
        conn = sqlite3.connect(path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise ConfigError(f"cannot open the memory database {path}: {e}") from e
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_SECONDS * 1000)}")
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")  # forgotten text is overwritten, not left in free pages
        _migrate(conn)
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


def _migrate(conn: sqlite3.Connection) -> None:
    while True:
        # The version is read inside the write transaction: two clients starting at once on a new
        # file must not both run migration 1 (the second would find its tables already there).
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise ConfigError(
                    f"the memory database was written by a newer mcp-memory (schema {version});"
                    " upgrade mcp-memory"
                )
            if version == len(MIGRATIONS):
                conn.execute("COMMIT")
                return
            _run_script(conn, MIGRATIONS[version])
            conn.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        log.info("memory database migrated to schema %d", version + 1)


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT our transaction first; run statement by statement instead.
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
