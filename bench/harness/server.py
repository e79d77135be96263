"""Start the real server and connect a client, as a user's MCP client would.

- `clean_env(data_dir, settings)`: this process's environment (PYTHONPATH too: a worktree on PYTHONPATH is
  what the server runs) without the developer's MCP_MEMORY_* settings, plus the bench's data dir, user,
  embedder and log level, then `settings` (MCP_MEMORY_* given on the command line).
- `serve_command()`: `python -m mcp_memory serve --in-process` with this Python (no resident server left
  behind); `console_script()`: the venv's `mcp-memory`.
- `stdio(command, env, workdir)`: the server as a child over stdio, the MCP SDK's `Client` connected to
  it, its stderr appended to workdir/server.stderr.
- `http(workdir, env)`: `mcp-memory serve --transport http|sse` as a process on a free port
  (tests/services/server_process.py's NetworkServer, which the tests use too); `server.connect()`.
- `server_code(env, cwd)`: where a server started like that imports mcp_memory from (say it in reports
  that compare two checkouts).
- In process: `open_service(settings)` (mcp_memory.service.assembly), re-exported here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Literal

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_memory.service.assembly import open_service
from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer, free_port

__all__ = [
    "READ_TIMEOUT_SECONDS",
    "NetworkServer",
    "clean_env",
    "console_script",
    "free_port",
    "http",
    "open_service",
    "serve_command",
    "server_code",
    "stdio",
]

USER = "bench"


def clean_env(
    data_dir: Path,
    settings: Mapping[str, str] | None = None,
    *,
    user: str = USER,
    embedder: str | None = "local",
    log_level: str | None = "INFO",
) -> dict[str, str]:
    """This process's environment without MCP_MEMORY_*, plus the bench's: data dir, user, embedder (the
    shipped local model unless told; None leaves the server's default), log level (INFO: the request
    lines server-side figures are read from; None leaves the default), then `settings`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    env |= {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": user}
    if embedder is not None:
        env["MCP_MEMORY_EMBEDDING__PROVIDER"] = embedder
    if log_level is not None:
        env["MCP_MEMORY_LOG_LEVEL"] = log_level
    return env | dict(settings or {})


def console_script() -> str:
    """The `mcp-memory` console script next to this Python (the venv's bin); exits saying how to get it."""
    script = Path(sys.executable).parent / ("mcp-memory.exe" if os.name == "nt" else "mcp-memory")
    if not script.is_file():
        raise SystemExit(f"the mcp-memory console script is missing at {script}; run `pip install -e .[dev]`")
    return str(script)


def serve_command(*args: str) -> list[str]:
    """`python -m mcp_memory serve --in-process [args]` with this Python: the server is the mcp_memory
    this process would import (a PYTHONPATH checkout first, else the installed one)."""
    return [sys.executable, "-m", "mcp_memory", "serve", "--in-process", *args]


def server_code(env: Mapping[str, str], cwd: Path | None = None) -> str:
    """Where a server process started with env (and cwd) imports mcp_memory from."""
    found = subprocess.run(
        [sys.executable, "-c", "import mcp_memory; print(mcp_memory.__file__)"],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=cwd or tempfile.gettempdir(),
    )
    return found.stdout.strip() or found.stderr.strip()[-300:]


@asynccontextmanager
async def stdio(
    command: list[str],
    env: Mapping[str, str],
    workdir: Path,
    *,
    read_timeout: float = READ_TIMEOUT_SECONDS,
    stderr_name: str = "server.stderr",
) -> AsyncIterator[Client]:
    """The server `command` as a child over stdio, and the MCP SDK's Client connected to it; its stderr
    is appended to workdir/stderr_name (read it for the server's log lines)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(env), cwd=workdir)
    with (workdir / stderr_name).open("a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=read_timeout) as client:
            yield client


@contextmanager
def http(
    workdir: Path, env: Mapping[str, str], transport: Literal["http", "sse"] = "http"
) -> Iterator[NetworkServer]:
    """`mcp-memory serve --transport http|sse` on a free port until the block ends (stopped then);
    `server.url`, `server.connect()`, `server.stderr()`, `server.pid`."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = NetworkServer(transport, workdir, dict(env))
    server.start()
    try:
        yield server
    finally:
        server.stop()
