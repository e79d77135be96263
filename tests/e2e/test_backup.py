"""`mcp-memory backup` and `mcp-memory restore` as an operator runs them, beside real servers."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.services.mcp_client import call
from tests.services.server_process import E2E_USER, ServerStarter, mcp_memory_command, server_env

COMMAND_SECONDS = 120.0


def cli(args: list[str], data_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [mcp_memory_command(), *args],
        env=server_env(data_dir),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )


def export(data_dir: Path, cwd: Path) -> list[dict[str, Any]]:
    """Every line of the user's export, the header without its time."""
    done = cli(["export", "--user", E2E_USER], data_dir, cwd)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["kind"] == "header"
    del lines[0]["exported_at"]
    return lines


def memory_ids(lines: list[dict[str, Any]]) -> set[str]:
    return {line["id"] for line in lines if line["kind"] == "memory"}


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder` with a hash of its bytes: what "nothing changed" compares."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


async def fill(start_server: ServerStarter, data_dir: Path, turns: int) -> list[str]:
    server = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    async with server.connect() as client:
        ids = [
            (
                await call(
                    client,
                    "add_turn",
                    thread_id="trip",
                    role="user",
                    content=f"Ferry ticket code{n:03d} is booked.",
                )
            )["id"]
            for n in range(turns)
        ]
        await call(client, "remember", content="Ann is vegetarian and flies from Seattle.")
    assert await anyio.to_thread.run_sync(server.stop) == 0, server.stderr()
    return ids


@pytest.mark.anyio
async def test_backup_while_servers_write_restores_every_write_acknowledged_before_it(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    data_dir, restored_dir = tmp_path / "data", tmp_path / "restored"
    server = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    acknowledged: list[str] = []
    backup_done = anyio.Event()
    written_during_backup = 0

    async def writer(name: str) -> None:
        nonlocal written_during_backup
        async with server.connect() as client:
            n = 0
            while not backup_done.is_set():
                out = await call(
                    client,
                    "add_turn",
                    thread_id=name,
                    role="user",
                    content=f"{name} says turn {n} of the run",
                )
                acknowledged.append(out["id"])
                if len(acknowledged) >= 20:
                    enough.set()
                if started.is_set():
                    written_during_backup += 1
                n += 1

    started, enough = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as writers:
        writers.start_soon(writer, "writer-a")
        writers.start_soon(writer, "writer-b")
        with anyio.fail_after(60):
            await enough.wait()
        before = set(acknowledged)  # every write acknowledged before the backup starts
        started.set()
        made = await anyio.to_thread.run_sync(
            cli, ["backup", str(tmp_path / "during.db")], data_dir, tmp_path
        )
        backup_done.set()
    assert made.returncode == 0, made.stderr
    assert "verified" in made.stdout
    assert await anyio.to_thread.run_sync(server.stop) == 0, server.stderr()

    restored = await anyio.to_thread.run_sync(
        cli, ["restore", str(tmp_path / "during.db")], restored_dir, tmp_path
    )
    assert restored.returncode == 0, restored.stderr
    in_backup = memory_ids(await anyio.to_thread.run_sync(export, restored_dir, tmp_path))
    missing = before - in_backup
    assert not missing, f"{len(missing)} acknowledged writes are not in the backup: {sorted(missing)[:5]}"
    # Whatever else it holds was written by the writers (during the backup), nothing invented.
    assert in_backup <= set(acknowledged)
    print(f"{len(before)} writes before the backup, {written_during_backup} while it ran")


@pytest.mark.anyio
async def test_restored_store_exports_the_same_memories(start_server: ServerStarter, tmp_path: Path) -> None:
    data_dir, restored_dir = tmp_path / "data", tmp_path / "restored"
    turns = await fill(start_server, data_dir, 12)
    source = await anyio.to_thread.run_sync(export, data_dir, tmp_path)
    assert set(turns) <= memory_ids(source)

    made = await anyio.to_thread.run_sync(cli, ["backup", str(tmp_path / "b.db")], data_dir, tmp_path)
    assert made.returncode == 0, made.stderr
    restored = await anyio.to_thread.run_sync(
        cli, ["restore", str(tmp_path / "b.db")], restored_dir, tmp_path
    )
    assert restored.returncode == 0, restored.stderr
    assert await anyio.to_thread.run_sync(export, restored_dir, tmp_path) == source

    # And the restored store serves: search finds a turn, the thread is whole.
    server = await anyio.to_thread.run_sync(start_server, "http", restored_dir)
    async with server.connect() as client:
        found = await call(client, "search_memory", query='"code007"', mode="text")
        assert [hit["id"] for hit in found["results"]] == [turns[7]]
        working = await call(client, "get_working_memory", thread_id="trip")
        assert [m["id"] for m in working["messages"]] == turns

    again = await anyio.to_thread.run_sync(cli, ["backup", str(tmp_path / "b.db")], data_dir, tmp_path)
    assert again.returncode == 1 and "already exists" in again.stderr, again.stderr


def damaged(kind: str, good: Path, folder: Path) -> Path:
    """A copy of a good backup, damaged the way `kind` says."""
    data = bytearray(good.read_bytes())
    path = folder / f"{kind}.db"
    if kind == "truncated":
        data = data[: len(data) // 2]
    elif kind == "corrupt":
        page = int.from_bytes(data[16:18], "big")
        for start in range(page, len(data), page):  # every page but the first: its contents scrambled
            data[start + 8 : start + page] = bytes((i * 7 + 3) % 256 for i in range(page - 8))
    elif kind == "live-copy":  # the file and its log copied while a server ran, as `cp` would
        (folder / f"{kind}.db-wal").write_bytes(b"frames of commits not yet in the file")
    elif kind == "not-sqlite":
        data = bytearray(b"this is a note, not a backup\n" * 100)
    path.write_bytes(bytes(data))
    if kind == "not-mcp-memory":
        path.unlink()
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE notes (text TEXT)")
        other.close()
    elif kind == "newer-schema":
        with sqlite3.connect(path) as newer:
            newer.execute("PRAGMA user_version = 99")
        newer.close()
    return path


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("truncated", "is truncated"),
        ("corrupt", "is damaged"),
        ("not-sqlite", "is not an SQLite database"),
        ("live-copy", "has a write-ahead log beside it"),
        ("not-mcp-memory", "not an mcp-memory store"),
        ("newer-schema", "written by a newer mcp-memory (schema 99"),
    ],
)
async def test_a_damaged_backup_is_refused_and_nothing_changes(
    start_server: ServerStarter, tmp_path: Path, kind: str, says: str
) -> None:
    data_dir, empty_dir = tmp_path / "data", tmp_path / "empty"
    await fill(start_server, data_dir, 3)
    made = await anyio.to_thread.run_sync(cli, ["backup", str(tmp_path / "good.db")], data_dir, tmp_path)
    assert made.returncode == 0, made.stderr
    bad = damaged(kind, tmp_path / "good.db", tmp_path)
    before = fingerprint(data_dir)

    for target, args in ((data_dir, ["--force"]), (empty_dir, [])):
        refused = await anyio.to_thread.run_sync(cli, ["restore", str(bad), *args], target, tmp_path)
        assert refused.returncode == 1
        assert says in refused.stderr and str(bad.name) in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    assert fingerprint(data_dir) == before
    assert not empty_dir.exists()


@pytest.mark.anyio
async def test_restore_refuses_a_store_unless_forced_then_keeps_the_old_one_aside(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    await fill(start_server, old_dir, 2)
    await fill(start_server, new_dir, 5)
    old_export = await anyio.to_thread.run_sync(export, old_dir, tmp_path)
    made = await anyio.to_thread.run_sync(cli, ["backup", str(tmp_path / "new.db")], new_dir, tmp_path)
    assert made.returncode == 0, made.stderr
    before = fingerprint(old_dir)

    refused = await anyio.to_thread.run_sync(cli, ["restore", str(tmp_path / "new.db")], old_dir, tmp_path)
    assert refused.returncode == 1
    assert "already holds a memory store" in refused.stderr and "--force" in refused.stderr
    assert fingerprint(old_dir) == before

    forced = await anyio.to_thread.run_sync(
        cli, ["restore", str(tmp_path / "new.db"), "--force"], old_dir, tmp_path
    )
    assert forced.returncode == 0, forced.stderr
    assert await anyio.to_thread.run_sync(export, old_dir, tmp_path) == await anyio.to_thread.run_sync(
        export, new_dir, tmp_path
    )
    [aside] = [p for p in old_dir.iterdir() if p.name.startswith("memory.db.before-restore-")]
    assert str(aside) in forced.stdout
    # The store it replaced is whole in its folder: opened there, it exports what it held.
    assert await anyio.to_thread.run_sync(export, aside, tmp_path) == old_export


@pytest.mark.anyio
async def test_restore_refuses_a_store_a_server_is_running_on(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    await fill(start_server, data_dir, 2)
    made = await anyio.to_thread.run_sync(cli, ["backup", str(tmp_path / "b.db")], data_dir, tmp_path)
    assert made.returncode == 0, made.stderr
    server = await anyio.to_thread.run_sync(start_server, "http", data_dir)
    async with server.connect() as client:
        await call(client, "add_turn", thread_id="live", role="user", content="Still serving.")
    refused = await anyio.to_thread.run_sync(
        cli, ["restore", str(tmp_path / "b.db"), "--force"], data_dir, tmp_path
    )
    assert refused.returncode == 1
    assert "in use by a running mcp-memory" in refused.stderr, refused.stderr
    assert not [p for p in data_dir.iterdir() if "before-restore" in p.name]
    async with server.connect() as client:  # the server is unharmed
        await call(client, "add_turn", thread_id="live", role="user", content="Still here.")


def test_backup_names_a_missing_store_and_creates_nothing(tmp_path: Path) -> None:
    missing = cli(["backup", str(tmp_path / "b.db")], tmp_path / "no-data", tmp_path)
    assert missing.returncode == 1 and "no memory database at" in missing.stderr, missing.stderr
    assert not (tmp_path / "no-data").exists() and not (tmp_path / "b.db").exists()


def test_backup_says_where_memory_is_when_it_is_not_in_the_local_file(tmp_path: Path) -> None:
    remote = {
        "MCP_MEMORY_WORKING__REDIS_URL": "redis://127.0.0.1:1/0",
        "MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT": "https://example.documents.azure.com:443/",
    }
    done = subprocess.run(
        [mcp_memory_command(), "backup", str(tmp_path / "b.db")],
        env=server_env(tmp_path / "data", remote),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    assert done.returncode == 1
    assert "working memory is on Redis" in done.stderr and "continuous backup" in done.stderr, done.stderr
    assert not (tmp_path / "b.db").exists()
