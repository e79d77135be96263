"""bench/shared_file.py's processes and the machine: the code under test, the environment and command of a
server or measuring child process (this script again, --child KIND), a data dir's index snapshot, and a
watch on the data file that sees another connection commit."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

SCRIPT = Path(__file__).resolve().with_name("shared_file.py")  # children run the script again
USER = "bench"
THREAD_SIZE = 100  # seeded turns per thread
LIVE_THREADS = 3  # threads added through the real add_turn (working memory exists for them)
LIVE_TURNS = 10  # turns in each
BATCH = 500  # memories per long_term.put while seeding
START_SECONDS = 120.0  # a server process answering (stdio initialize, GET /health)
CALL_SECONDS = 300.0  # one call, at most (a search may rebuild a 100k index on a busy machine)
CHILD_SECONDS = 900.0  # one measuring child process, at most
STOP_SECONDS = 10.0
INDEX_MEMORY_ENV = "MCP_MEMORY_LONG_TERM__INDEX_MEMORY_MB"


def load() -> str:
    """The 1/5/15-minute load averages, as uptime prints them."""
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "n/a"


def code_under_test() -> dict[str, str]:
    """Which mcp_memory this process imported, and the git commit of the tree it lives in."""
    import mcp_memory

    package = Path(mcp_memory.__file__).resolve().parent
    where = {"mcp_memory": str(package), "commit": "n/a", "modified": "n/a"}
    try:
        where["commit"] = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(package), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.splitlines()
        where["modified"] = f"{len(changed)} file(s) under mcp_memory/ differ from the commit"
    except (OSError, subprocess.SubprocessError):
        pass
    return where


def child_env(data_dir: Path, user: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment (PYTHONPATH included: children run the same code) minus MCP_MEMORY_* settings,
    plus the data dir, the user, and the index memory budget when one was given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    env |= {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": user}
    if INDEX_MEMORY_ENV in os.environ:
        env[INDEX_MEMORY_ENV] = os.environ[INDEX_MEMORY_ENV]
    return env | (extra or {})


def server_command() -> list[str]:
    """`mcp-memory` next to this Python (the venv's console script), else `python -m mcp_memory`.
    Both import mcp_memory through PYTHONPATH first, so a worktree on PYTHONPATH is what runs."""
    script = Path(sys.executable).parent / "mcp-memory"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mcp_memory"]


def server_code(cwd: Path) -> str:
    """The mcp_memory a server process started like ours imports (same Python, env, cwd)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import mcp_memory; print(mcp_memory.__file__)"],
        env=child_env(cwd, USER),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return probe.stdout.strip()


def run_child(kind: str, data_dir: Path, cwd: Path, args: list[str], user: str = USER) -> dict[str, Any]:
    """This script as a child process (--child kind): a fresh process on the data dir; its JSON answer
    plus its wall time from start to exit."""
    began = time.perf_counter()
    child = subprocess.run(
        [sys.executable, str(SCRIPT), "--child", kind, *args],
        env=child_env(data_dir, user),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CHILD_SECONDS,
    )
    if child.returncode != 0:
        raise RuntimeError(f"child {kind} failed ({child.returncode}): {child.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    answer["process_s"] = time.perf_counter() - began
    return answer


def snapshot_dir(data_dir: Path, sqlite_file: str = "memory.db") -> str:
    """What is in `<data_dir>/<sqlite_file>-index/` (where a store may keep index snapshots)."""
    folder = data_dir / f"{sqlite_file}-index"
    if not folder.is_dir():
        return "absent"
    files = [p for p in folder.rglob("*") if p.is_file()]
    return f"{len(files)} files, {sum(p.stat().st_size for p in files) / 2**20:.1f} MB"


class FileWatch:
    """A connection of our own to the data file, only to see when another connection commits
    (PRAGMA data_version); it never writes."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    async def quiet(self, settle: float = 0.25, longest: float = 10.0) -> int:
        """Wait until nothing was committed for `settle` seconds (at most `longest`): the other process's
        background work after a turn (learning counters) lands before the timed search."""
        deadline = time.perf_counter() + longest
        seen, since = self.version(), time.perf_counter()
        while time.perf_counter() < deadline:
            await anyio.sleep(0.05)
            now = self.version()
            if now != seen:
                seen, since = now, time.perf_counter()
            elif time.perf_counter() - since >= settle:
                break
        return seen

    def close(self) -> None:
        self._conn.close()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(CALL_SECONDS):
        result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text if result.content else '?'}")  # type: ignore[union-attr]
    return result.structured_content or {}
