"""A forget is true when it answers (issue 58): right after `forget` returns, no file under the data
directory holds a byte of what it deleted (the data file, its -wal and -shm, the search-index
snapshots), while a second real server has the same file open and has read it; the file shrinks by
what was freed, and so does a backup. A reader that outlasts the wait makes the receipt say "pending",
and the erasure then finishes by itself. Every file the servers and the command line write is 0600 in
a 0700 directory, and a start repairs what is not.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest

from tests.services.mcp_client import call
from tests.services.server_process import (
    E2E_USER,
    NetworkServer,
    ServerStarter,
    mcp_memory_command,
    server_env,
)

pytestmark = pytest.mark.anyio

ERASE_BOUND_SECONDS = 60.0  # how long the background erasure may take once the reader is gone
COMMAND_SECONDS = 120.0


def holders(data_dir: Path, needle: str) -> list[str]:
    """Every file under the data directory (bytes, whatever it is) holding the needle."""
    return sorted(
        str(path.relative_to(data_dir))
        for path in data_dir.rglob("*")
        if path.is_file() and needle.encode() in path.read_bytes()
    )


def marker() -> str:
    """A word no stemmer changes and no other test writes: found only where this test put it."""
    return "qz" + uuid.uuid4().hex[:12].replace("e", "k") + "xv"


async def settled_snapshots(data_dir: Path) -> None:
    """Wait until the servers' first index snapshots are written (after their builds), so none is being
    written while the test scans."""
    folder = data_dir / "memory.db-index"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(folder.glob("*.npz")) and not any(folder.glob("*.tmp")):
            return
        await anyio.sleep(0.2)
    pytest.fail(f"no search index snapshot was written in {folder}")


def used_bytes(data_file: Path) -> int:
    """The file's size as SQLite sees it, its log included."""
    conn = sqlite3.connect(f"{data_file.as_uri()}?mode=ro", uri=True)
    try:
        return int(
            conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        )
    finally:
        conn.close()


async def fill_and_read(server: NetworkServer, doomed: str, kept: str, chunk: str) -> None:
    async with server.connect() as client:
        for n in range(8):
            await call(client, "add_turn", thread_id="doomed", role="user", content=f"{doomed} {n} {chunk}")
        await call(client, "add_turn", thread_id="kept", role="user", content=f"{kept} stays here")
        assert (await call(client, "search_memory", query=doomed, mode="text"))["results"]


async def test_nothing_of_a_forgotten_thread_is_in_any_file_right_after_forget_while_another_server_reads(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    doomed, kept = marker(), marker()
    first = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    await fill_and_read(first, doomed, kept, "filler words " * 6000)
    # A second process with the same file open, having read what is forgotten (its index holds it).
    second = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    async with second.connect() as reader:
        assert (await call(reader, "search_memory", query=doomed, mode="text"))["results"]
        await settled_snapshots(data_dir)
        assert holders(data_dir, doomed), "the scan must see the text before the forget"
        size_before = used_bytes(data_dir / "memory.db")

        async with first.connect() as client:
            receipt = await call(client, "forget", thread_id="doomed")
        found = holders(data_dir, doomed)  # right after the answer, the second server still running

        assert receipt["long_term"]["by_type"]["turn"] == 8 and not receipt.get("pending"), receipt
        assert "Nothing of it is left on disk" in receipt["note"], receipt["note"]
        assert found == [], f"the forgotten text is still in {found}"
        assert holders(data_dir, kept), "what was not forgotten stays"
        # The log is empty: all of it is in the file.
        size_after = await anyio.to_thread.run_sync(os.path.getsize, data_dir / "memory.db")
        assert size_after < size_before / 2, (size_before, size_after)
        # The second server sees it gone too, and writes nothing of it back.
        assert not (await call(reader, "search_memory", query=doomed, mode="text"))["results"]
    assert holders(data_dir, doomed) == []

    backup = tmp_path / "after-forget.db"
    done = await anyio.to_thread.run_sync(cli, ["backup", str(backup)], data_dir, tmp_path)
    assert done.returncode == 0, done.stderr
    assert doomed.encode() not in backup.read_bytes() and kept.encode() in backup.read_bytes()
    conn = sqlite3.connect(f"{backup.as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0  # no free page copied
    finally:
        conn.close()
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


HOLD_A_READ = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
print(conn.execute("SELECT count(*) FROM memories").fetchone()[0], flush=True)
sys.stdin.readline()  # the read transaction stays open until the test says so
conn.execute("COMMIT")
conn.close()
"""


def hold_a_read(data_file: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD_A_READ, str(data_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def erased_within(data_dir: Path, needle: str, seconds: float) -> list[str]:
    """The files still holding the needle once it is gone from all, or the time is up."""
    deadline = time.monotonic() + seconds
    while (left := holders(data_dir, needle)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


async def test_a_reader_that_outlasts_the_wait_makes_the_receipt_say_pending_then_it_is_erased(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    doomed, kept = marker(), marker()
    server = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    await fill_and_read(server, doomed, kept, "filler words " * 200)
    reader = await anyio.to_thread.run_sync(hold_a_read, data_dir / "memory.db")
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert int(reader.stdout.readline()) > 0  # it has read, and holds its read transaction
        async with server.connect() as client:
            receipt = await call(client, "forget", thread_id="doomed")
        assert receipt["pending"] is True, receipt
        assert "still on disk while another process reads" in receipt["note"], receipt["note"]
        assert holders(data_dir, doomed), "said pending: the bytes are indeed still there"
        reader.stdin.write("done\n")
        reader.stdin.flush()
        assert reader.wait(timeout=30) == 0
    finally:
        reader.kill()
        reader.wait()
    left = await anyio.to_thread.run_sync(erased_within, data_dir, doomed, ERASE_BOUND_SECONDS)
    assert left == [], f"the pending erasure did not finish once the reader stopped: {left}"
    assert "the pending forget is now erased" in server.stderr()


async def test_forget_of_a_thread_that_does_not_exist_says_nothing_matched(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    server = await anyio.to_thread.run_sync(start_server, "http", tmp_path / "data")
    async with server.connect() as client:
        await call(client, "add_turn", thread_id="real", role="user", content="something")
        receipt = await call(client, "forget", thread_id="no-such-thread")
        dry = await call(client, "forget", thread_id="no-such-thread", dry_run=True)
    for answer in (receipt, dry):
        assert answer["long_term"]["memories"] == 0 and not answer.get("pending")
        assert answer["note"] == "Nothing matched: no thread 'no-such-thread' here; nothing was deleted."


def cli(args: list[str], data_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [mcp_memory_command(), *args],
        env=server_env(data_dir) | {"HOME": str(cwd)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )


def doctor(data_dir: Path, cwd: Path) -> list[str]:
    """What `mcp-memory doctor --json` reports readable by others."""
    done = cli(["doctor", "--json"], data_dir, cwd)
    assert done.returncode == 0, done.stderr
    exposed: list[str] = json.loads(done.stdout)["exposed"]
    return exposed


def modes(data_dir: Path) -> dict[str, str]:
    return {
        str(path.relative_to(data_dir)) or ".": oct(stat.S_IMODE(path.lstat().st_mode))
        for path in (data_dir, *data_dir.rglob("*"))
        if not path.is_symlink()
    }


async def test_every_file_the_server_writes_is_private_and_a_start_repairs_what_is_not(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    server = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    async with server.connect() as client:
        await call(client, "add_turn", thread_id="t", role="user", content="private words " * 50)
        await call(client, "search_memory", query="private words")
    await settled_snapshots(data_dir)
    written = modes(data_dir)
    assert {"memory.db", "memory.db-wal", "memory.db-shm", "memory.db-index"} <= set(written), written
    wrong = {p: m for p, m in written.items() if m not in ("0o600", "0o700")}
    assert wrong == {}, wrong
    assert await anyio.to_thread.run_sync(doctor, data_dir, tmp_path) == []
    assert await anyio.to_thread.run_sync(server.stop) == 0, server.stderr()

    # As an older version left them: readable by everyone.
    for path in (data_dir, *data_dir.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    reported = await anyio.to_thread.run_sync(doctor, data_dir, tmp_path)
    assert any("memory.db (644)" in line for line in reported), reported
    again = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    async with again.connect() as client:
        await call(client, "search_memory", query="private words")
    wrong = {p: m for p, m in modes(data_dir).items() if m not in ("0o600", "0o700")}
    assert wrong == {}, wrong
    assert again.stderr().count("private to this user") == 1, again.stderr()
    exported = tmp_path / "export.jsonl"
    done = await anyio.to_thread.run_sync(
        cli, ["export", "--user", E2E_USER, "-o", str(exported)], data_dir, tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert b"private words" in exported.read_bytes() and stat.S_IMODE(exported.stat().st_mode) == 0o600
