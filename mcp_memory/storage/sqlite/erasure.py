"""What a forget leaves on disk, taken away before it answers (docs/security.md, "Forgetting").

Deleting rows is not enough for the bytes: SQLite marks their pages free and, in WAL mode, writes the
change to the write-ahead log, leaving the old pages in the data file until a checkpoint copies the
log back. So the file is opened with `secure_delete` on (deleted content and freed pages are written
as zeros) and `auto_vacuum = INCREMENTAL` (free pages can be cut off the end of the file), and after
every forget `erase`:
1. runs `incremental_vacuum`: the free pages go, the file shrinks (and so do its backups);
2. checkpoints the log with TRUNCATE: the zeroed pages are copied into the data file and the log is
   cut to nothing. SQLite waits up to the connection's busy timeout for readers in other processes
   (a server with the same file open reads in short transactions); a reader that holds its read
   transaction longer keeps the old pages alive, and the checkpoint cannot finish. `erase` then says
   so, and the database retries in the background until it can (db.py), logging when it is done.

A file made before auto_vacuum was set is converted once, when it is opened (`make_reclaimable`): one
VACUUM, which rewrites the file without its free pages.
"""

from __future__ import annotations

import logging
import sqlite3
import time

log = logging.getLogger(__name__)

INCREMENTAL = 2  # PRAGMA auto_vacuum's value for INCREMENTAL


def prepare(conn: sqlite3.Connection) -> None:
    """Before the schema is made: a new file gets auto_vacuum=INCREMENTAL from its first table on (an
    existing file keeps its mode until `make_reclaimable` converts it)."""
    conn.execute("PRAGMA secure_delete = ON")  # forgotten text is overwritten, not left in free pages
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")


def make_reclaimable(conn: sqlite3.Connection, path: object) -> None:
    """Convert a file made without auto_vacuum, once: VACUUM rewrites it (taking a while on a large
    file, said in the log) and drops its free pages, which may hold what was forgotten before."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == INCREMENTAL:
        return
    started = time.perf_counter()
    size = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
    log.warning("converting %s (%.1f MB) to reclaim free space after a forget: one time", path, size / 1e6)
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError as e:  # another process writing: the next start converts it
        if "locked" not in str(e) and "busy" not in str(e):
            raise
        log.warning("%s not converted now (%s): tried again at the next start", path, e)
        return
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    log.warning("converted %s in %.1f s", path, time.perf_counter() - started)


def erase(conn: sqlite3.Connection) -> bool:
    """Free pages cut off and the log checkpointed into the file and truncated (outside a transaction,
    on the writing connection): whether nothing forgotten is left in the log or the file's old pages.
    False when another process's read transaction outlasted the busy timeout."""
    conn.executescript("PRAGMA incremental_vacuum;")  # a script: run to the end, not one page per step
    return checkpoint(conn)


def checkpoint(conn: sqlite3.Connection) -> bool:
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy
