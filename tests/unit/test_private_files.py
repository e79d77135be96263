"""The data directory's modes (mcp_memory/private_files.py) and a data file made before auto_vacuum,
converted once when opened (storage/sqlite/erasure.py)."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

from mcp_memory.private_files import exposed, make_private
from mcp_memory.storage.sqlite import db as sqlite_db
from mcp_memory.storage.sqlite.backup import backup


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_what_others_could_read_is_listed_then_made_private_and_links_are_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "memory.db-index").mkdir(parents=True)
    (data / "memory.db").write_bytes(b"x")
    (data / "memory.db-index" / "a.npz").write_bytes(b"y")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not ours")
    (data / "link").symlink_to(outside)
    for path, wanted in ((data, 0o755), (data / "memory.db-index", 0o750), (data / "memory.db", 0o644)):
        path.chmod(wanted)
    (data / "memory.db-index" / "a.npz").chmod(0o600)
    outside.chmod(0o644)

    assert {p.name: m for p, m in exposed(data)} == {
        "data": 0o755,
        "memory.db-index": 0o750,
        "memory.db": 0o644,
    }
    assert sorted(p.name for p in make_private(data)) == ["data", "memory.db", "memory.db-index"]
    assert exposed(data) == []
    assert (mode(data), mode(data / "memory.db-index"), mode(data / "memory.db")) == (0o700, 0o700, 0o600)
    assert mode(outside) == 0o644  # what a link points at is not the data directory's


def test_a_new_data_file_and_its_log_are_private_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "new" / "memory.db"
    conn = sqlite_db._connect(path)
    try:
        conn.execute("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
        assert (mode(path.parent), mode(path)) == (0o700, 0o600)
        assert mode(path.with_name("memory.db-wal")) == 0o600
        assert mode(path.with_name("memory.db-shm")) == 0o600
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # INCREMENTAL from the first table
    finally:
        conn.close()
    target = tmp_path / "backup.db"
    backup(path, target)
    assert mode(target) == 0o600


def test_a_file_made_without_auto_vacuum_is_converted_once_and_loses_its_free_pages(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    sqlite_db._connect(path).close()
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA auto_vacuum = NONE")
    old.execute("VACUUM")
    old.execute("CREATE TABLE scratch (t TEXT)")
    old.executemany("INSERT INTO scratch VALUES (?)", [("words " * 2000,)] * 50)
    old.execute("DROP TABLE scratch")
    assert old.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    assert old.execute("PRAGMA freelist_count").fetchone()[0] > 50
    old.close()

    conn = sqlite_db._connect(path)
    try:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        conn.close()
