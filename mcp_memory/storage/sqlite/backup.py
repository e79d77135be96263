"""Backing up and restoring the embedded data file: `mcp-memory backup` and `mcp-memory restore`.

A backup is made with SQLite's VACUUM INTO in one read transaction, so it is the file as of one moment
even while servers write to it (WAL mode: they keep writing meanwhile, and nothing they commit after
that moment is in the copy), and it holds only the pages in use: no free page, where a forgotten text
could linger, and no larger than the memories need. It is created 0600, as the data file is. It is written to a temporary name beside the target, switched out of WAL mode
(one self-contained file), checked, flushed to disk and renamed, so the target is a whole, verified
backup or does not exist.

Restore checks the file before it touches anything: an SQLite file, whole (not shorter than its
header says), passing `integrity_check`, an mcp-memory store (its tables and `meta` row) of a schema
this version knows. Only then does it copy it beside the data file and rename it into place. A data
file already there is refused unless forced; forced, the old file (with its WAL, shared-memory file
and search-index snapshots) is moved into a folder named by the time, never deleted. A data file that
another process holds open is never replaced.

The search-index snapshots (`<data file>-index/`) are caches, rebuilt from the file: they are neither
backed up nor restored.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mcp_memory.errors import ConfigError
from mcp_memory.private_files import DIR_MODE, create_private, private_dir
from mcp_memory.storage.sqlite.migrations import MIGRATIONS

HEADER = b"SQLite format 3\x00"
_STORE_TABLES = frozenset({"meta", "threads", "messages", "memories"})
# The files SQLite keeps beside a data file, and the search-index snapshots' folder.
COMPANIONS = ("-wal", "-shm", "-journal", "-index")


class BackupError(ConfigError):
    """A backup cannot be made or restored; the message names the file and the problem."""


@dataclass(frozen=True)
class StoreFacts:
    """What a verified file holds."""

    path: Path
    schema: int
    memories: int
    users: int
    file_id: str
    size: int

    def describe(self) -> str:
        memories = "1 memory" if self.memories == 1 else f"{self.memories:,} memories"
        owners = "1 user or space" if self.users == 1 else f"{self.users:,} users and spaces"
        return f"{memories} of {owners}, schema {self.schema}, {self.size:,} bytes"


@dataclass(frozen=True)
class RestoreReport:
    facts: StoreFacts
    data_file: Path
    kept_aside: Path | None  # where the data file it replaced now is


def backup(data_file: Path, target: Path) -> StoreFacts:
    """Copy the live data file to `target` (which must not exist yet), consistently, and verify it."""
    if not data_file.is_file():
        raise BackupError(f"there is no memory database at {data_file} to back up")
    if target.exists():
        raise BackupError(f"{target} already exists; name a new file (backups never overwrite)")
    if not target.parent.is_dir():
        raise BackupError(f"the folder {target.parent} does not exist")
    partial = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:8]}")
    try:
        _copy_live(data_file, partial)
        facts = inspect(partial)
        _rename(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return StoreFacts(target, facts.schema, facts.memories, facts.users, facts.file_id, facts.size)


def _copy_live(data_file: Path, partial: Path) -> None:
    try:
        # mode=rw: never create a data file that is not there. VACUUM INTO reads the file in one read
        # transaction (the file as of one moment; writers in WAL mode are not held up meanwhile) and
        # writes only the pages in use: no free page, which could hold what a forget deleted, is copied.
        source = sqlite3.connect(f"{data_file.resolve().as_uri()}?mode=rw", uri=True, timeout=30)
    except sqlite3.Error as e:
        raise BackupError(f"cannot open the memory database {data_file}: {e}") from e
    try:
        create_private(partial)  # 0600, empty: the backup is as private as the store
        source.execute("VACUUM INTO ?", (str(partial),))
        copy = sqlite3.connect(partial, isolation_level=None)
        try:
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
        finally:
            copy.close()
    except sqlite3.Error as e:
        raise BackupError(f"cannot back up {data_file}: {e}") from e
    except OSError as e:
        raise BackupError(f"cannot write {partial}: {e.strerror}") from e
    finally:
        source.close()
    _flush(partial)


def inspect(path: Path) -> StoreFacts:
    """Check that `path` is a whole mcp-memory store this version can open, or say what is wrong."""
    if not path.is_file():
        raise BackupError(f"{path} is not a file")
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        # Its latest commits are in the log, which a copy of the file alone would silently leave out.
        raise BackupError(
            f"{path} has a write-ahead log beside it ({wal.name}): it is a live database or a copy of one, "
            "not a backup; make one with `mcp-memory backup`"
        )
    size = path.stat().st_size
    with path.open("rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(HEADER):
        raise BackupError(f"{path} is not an SQLite database (no SQLite header); it is not a backup")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The header's page count holds when its "valid for" number matches the change counter.
    counted = header[92:96] == header[24:28]
    if counted and pages and size < pages * page_size:
        raise BackupError(
            f"{path} is truncated: {size:,} bytes where its header says {pages * page_size:,}; "
            "it cannot be restored"
        )
    try:
        # immutable: read the file as it is, taking no locks and creating no -wal or -shm beside it.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as e:
        raise BackupError(f"{path} cannot be opened as an SQLite database: {e}") from e
    try:
        return _facts(conn, path, size)
    except sqlite3.DatabaseError as e:
        raise BackupError(f"{path} is damaged ({e}); it cannot be restored") from e
    finally:
        conn.close()


def _facts(conn: sqlite3.Connection, path: Path, size: int) -> StoreFacts:
    problems = [row[0] for row in conn.execute("PRAGMA integrity_check(5)")]
    if problems != ["ok"]:
        raise BackupError(
            f"{path} is damaged (integrity_check: {'; '.join(problems)}); it cannot be restored"
        )
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    schema = conn.execute("PRAGMA user_version").fetchone()[0]
    if not tables >= _STORE_TABLES or schema == 0:
        raise BackupError(f"{path} is an SQLite database but not an mcp-memory store")
    if schema > len(MIGRATIONS):
        raise BackupError(
            f"{path} was written by a newer mcp-memory (schema {schema}; this one knows up to "
            f"{len(MIGRATIONS)}); upgrade mcp-memory to restore it"
        )
    row = conn.execute("SELECT value FROM meta WHERE key = 'file_id'").fetchone()
    memories, users = conn.execute("SELECT count(*), count(DISTINCT user_id) FROM memories").fetchone()
    return StoreFacts(path, schema, memories, users, row[0] if row else "", size)


def restore(source: Path, data_file: Path, *, force: bool, now: datetime | None = None) -> RestoreReport:
    """Put a verified copy of `source` at `data_file`; an existing one only with `force`, kept aside."""
    facts = inspect(source)
    present = [p for p in _store_files(data_file) if p.exists()]
    if present and not force:
        raise BackupError(
            f"{data_file.parent} already holds a memory store ({', '.join(p.name for p in present)}); "
            "restore into an empty data dir, or add --force to move the current store aside first"
        )
    if data_file.exists():
        _refuse_if_in_use(data_file)
    try:
        private_dir(data_file.parent)
    except OSError as e:
        raise BackupError(f"cannot create the data directory {data_file.parent}: {e.strerror}") from e
    incoming = data_file.with_name(f".{data_file.name}.restoring-{uuid.uuid4().hex[:8]}")
    try:
        _copy_backup(source, incoming)
        kept_aside = _move_aside(present, data_file, now or datetime.now(UTC)) if present else None
        _rename(incoming, data_file)
    finally:
        incoming.unlink(missing_ok=True)
    return RestoreReport(facts, data_file, kept_aside)


def _store_files(data_file: Path) -> list[Path]:
    return [data_file, *(data_file.with_name(data_file.name + suffix) for suffix in COMPANIONS)]


def _refuse_if_in_use(data_file: Path) -> None:
    """In WAL mode an exclusive lock is refused while any other connection has the file open, even an
    idle one: a running server. Taking it also folds the WAL into the file, so what is moved aside is
    whole by itself."""
    try:
        conn = sqlite3.connect(data_file, timeout=0.5, isolation_level=None)
    except sqlite3.Error as e:
        raise BackupError(f"cannot open the current memory database {data_file}: {e}") from e
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("COMMIT")
        with contextlib.suppress(sqlite3.DatabaseError):  # a damaged current file is moved aside as it is
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            raise BackupError(
                f"{data_file} is in use by a running mcp-memory (or another program); stop it, then restore"
            ) from e
    except sqlite3.DatabaseError:
        pass  # damaged: nothing can have it open usefully; it is moved aside as it is
    finally:
        conn.close()


def _copy_backup(source: Path, incoming: Path) -> None:
    try:
        backup_file = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            create_private(incoming)
            copy = sqlite3.connect(incoming, isolation_level=None)
            try:
                backup_file.backup(copy)
                copy.execute("PRAGMA journal_mode = WAL")  # as the server runs it
                problems = [row[0] for row in copy.execute("PRAGMA quick_check(5)")]
            finally:
                copy.close()
        finally:
            backup_file.close()
    except sqlite3.Error as e:
        raise BackupError(f"cannot copy {source} into the data dir: {e}") from e
    except OSError as e:
        raise BackupError(f"cannot write {incoming}: {e.strerror}") from e
    if problems != ["ok"]:
        raise BackupError(f"the copy of {source} did not verify ({'; '.join(problems)}); nothing was changed")
    _flush(incoming)


def _move_aside(present: list[Path], data_file: Path, now: datetime) -> Path:
    folder = data_file.with_name(f"{data_file.name}.before-restore-{now.strftime('%Y%m%dT%H%M%SZ')}")
    moved: list[Path] = []
    try:
        folder.mkdir(mode=DIR_MODE)
        for path in present:
            path.rename(folder / path.name)
            moved.append(path)
    except OSError as e:
        for path in moved:  # put back what was moved: the store stays as it was
            (folder / path.name).rename(path)
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise BackupError(
            f"cannot move the current store aside into {folder}: {e}; nothing was changed"
        ) from e
    return folder


def _rename(partial: Path, target: Path) -> None:
    os.replace(partial, target)
    _flush_folder(target.parent)


def _flush(path: Path) -> None:
    with path.open("rb+") as f:
        os.fsync(f.fileno())


def _flush_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some systems cannot open a folder; the rename stands, only its durability is weaker
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
