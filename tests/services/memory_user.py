"""The memory as a user has it in the end-to-end client tests: installed with `mcp-memory install` into a
home of the test's own, storing in its own data dir, in git projects of its own, read back from the store.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import HANG_SECONDS, eventually
from tests.services.resident import stop_resident_servers

# The hooks hand a capture to the resident server, which stores it soon after (its first start loads the
# model): a bound against a hang only.
STORED_SECONDS = HANG_SECONDS
# What the clients' tests have one session decide and a later one ask.
DECISION = (
    "For the billing service we decided on PostgreSQL 16 behind pgbouncer, max 200 connections; "
    "Dana owns the migration."
)
QUESTION = "which database did we choose for billing and who owns the migration?"


@dataclass(frozen=True)
class Memory:
    """The memory as a user has it: installed into a client in `home`, storing in `data_dir`."""

    home: Path
    data_dir: Path
    env: dict[str, str]  # what the user's environment adds for the memory (and the hooks inherit)

    @property
    def database(self) -> Path:
        return self.data_dir / "memory.db"


def user_env(home: Path) -> dict[str, str]:
    """This process's environment without the developer's MCP_MEMORY_* settings, in the test's home."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    return env | {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")}


def mcp_memory(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`mcp-memory ARGS` as the user runs it, in their home; fails the test unless it succeeds."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_memory", *args],
        cwd=home,
        env=user_env(home) | {"XDG_CONFIG_HOME": str(home / ".config")} | env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"mcp-memory {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@contextmanager
def installed(root: Path, *install_args: str) -> Iterator[Memory]:
    """`mcp-memory install ARGS` as a user whose home is root/home, storing in root/data; every process
    the memory started is stopped after."""
    home, data_dir, temporary = root / "home", root / "data", root / "tmp"
    home.mkdir(exist_ok=True)
    temporary.mkdir()  # where a socket goes when the data dir's path is too long for one
    env = {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "tester", "TMPDIR": str(temporary)}
    try:
        mcp_memory(home, env, "install", *install_args)
        yield Memory(home=home, data_dir=data_dir, env=env)
    finally:
        stop_resident_servers(data_dir)


def git_project(path: Path, remote: str) -> Path:
    """A git repository at `path` whose origin is `remote` (the project the memory files turns under)."""
    path.mkdir(parents=True)
    for command in (["git", "init", "-q"], ["git", "remote", "add", "origin", remote]):
        done = subprocess.run(command, cwd=path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{' '.join(command)} failed: {done.stderr}"
    return path


def stored(memory: Memory, text: str) -> bool:
    """Whether `text` is in a stored memory (or turn), read from the SQLite file read-only."""
    if not memory.database.is_file():
        return False
    try:
        db = sqlite3.connect(f"file:{memory.database}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return False
    try:
        like = f"%{text}%"
        row = db.execute(
            "SELECT 1 FROM memories WHERE content LIKE ? UNION ALL SELECT 1 FROM messages WHERE content LIKE ?",
            (like, like),
        ).fetchone()
    except sqlite3.Error:  # not created yet, or busy: ask again
        return False
    finally:
        db.close()
    return row is not None


def wait_until_stored(memory: Memory, text: str) -> None:
    def files() -> str:
        return f"the data dir holds {sorted(str(p.relative_to(memory.data_dir)) for p in memory.data_dir.rglob('*'))}"

    eventually(
        lambda: stored(memory, text), what=f"{text!r} stored", seconds=STORED_SECONDS, every=0.1, detail=files
    )


def stored_rows(memory: Memory, text: str) -> list[str]:
    """The stored turns whose content is exactly `text`."""
    db = sqlite3.connect(f"file:{memory.database}?mode=ro", uri=True, timeout=5)
    try:
        return [row[0] for row in db.execute("SELECT content FROM messages WHERE content = ?", (text,))]
    finally:
        db.close()
