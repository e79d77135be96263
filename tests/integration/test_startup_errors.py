"""`mcp-memory serve` refuses to start on a bad data file or bad settings with one clear line, no traceback.

Each test runs the real console script with stdin closed: a healthy stdio server would start, read EOF
and exit 0, so a non-zero exit is the startup error under test. The subprocess timeout is the deadline.
The server runs in the process itself (--in-process); through the relay the same line comes from the
server the relay starts in its place (tests/e2e/test_relay.py).
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.services.server_process import mcp_memory_command, server_env

DEADLINE_SECONDS = 60.0
GARBAGE = bytes(range(256)) * 16


def serve(
    data_dir: Path, overrides: Mapping[str, str] | None = None, *args: str, drop: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = server_env(data_dir, overrides)
    for name in drop:
        del env[name]
    return subprocess.run(
        [mcp_memory_command(), "serve", "--in-process", *args],
        env=env,
        cwd=data_dir.parent,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str], exit_code: int = 1) -> str:
    """The single line the user sees; fails on a traceback, another exit code or extra output."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == exit_code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mcp-memory: "), lines[0]
    return lines[0]


def make_data_file(data_dir: Path) -> Path:
    """A real data file, written by the server itself (hashing embedder)."""
    made = serve(data_dir)
    assert made.returncode == 0, made.stderr
    return data_dir / "memory.db"


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Another process's view: a connection holding an EXCLUSIVE transaction on the file (private, as
    the server makes it: a file others could read would add the start's repair line)."""
    path.touch(mode=0o600)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("CREATE TABLE IF NOT EXISTS other_app (x)")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO other_app VALUES (1)")
        yield
    finally:
        holder.close()


def test_garbage_data_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memory.db"
    path.parent.mkdir(mode=0o700)  # as the server makes it: a 0755 one is repaired, and said
    path.write_bytes(GARBAGE)
    path.chmod(0o600)
    line = one_line_error(serve(path.parent))
    assert str(path) in line and "corrupt or not a database" in line and "move it aside" in line


def test_damaged_pages_behind_a_valid_header_name_the_file(tmp_path: Path) -> None:
    path = make_data_file(tmp_path / "data")
    content = path.read_bytes()
    path.write_bytes(content[:100] + (GARBAGE * (len(content) // len(GARBAGE) + 1))[: len(content) - 100])
    line = one_line_error(serve(path.parent))
    assert str(path) in line and "corrupt" in line


def test_a_file_locked_by_another_process_says_locked(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memory.db"
    path.parent.mkdir(mode=0o700)
    with exclusive_lock(path):
        result = serve(path.parent)
    line = one_line_error(result)
    assert str(path) in line and "locked by another process" in line


def test_an_existing_data_file_locked_by_another_process_says_locked(tmp_path: Path) -> None:
    path = make_data_file(tmp_path / "data")
    with exclusive_lock(path):
        result = serve(path.parent)
    line = one_line_error(result)
    assert str(path) in line and "locked" in line


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("MCP_MEMORY_SUMMARY__THRESHOLD", "2", "MCP_MEMORY_SUMMARY__THRESHOLD: Input should be less than 1"),
        ("MCP_MEMORY_EMBEDDING__PROVIDER", "nope", "MCP_MEMORY_EMBEDDING__PROVIDER: Input should be 'local'"),
        ("MCP_MEMORY_USER_ID", "bad user!", "user_id 'bad user!' must be"),
    ],
)
def test_an_invalid_setting_exits_2_naming_it(tmp_path: Path, name: str, value: str, says: str) -> None:
    result = serve(tmp_path / "data", {name: value})
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("mcp-memory: invalid settings:\n"), result.stderr
    assert says in result.stderr
    assert not (tmp_path / "data").exists(), "nothing is written before the settings are valid"


def test_data_written_by_another_embedder_is_refused(tmp_path: Path) -> None:
    path = make_data_file(tmp_path / "data")  # recorded as the hashing embedder's
    line = one_line_error(serve(path.parent, drop=("MCP_MEMORY_EMBEDDING__PROVIDER",)))  # the default: local
    assert str(path) in line and "embedded with hash" in line and "all-MiniLM-L6-v2" in line
    assert "configure the original embedder" in line


def test_a_data_dir_that_is_a_file_is_named(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "data"
    not_a_dir.write_text("I am a file")
    line = one_line_error(serve(not_a_dir))
    assert str(not_a_dir) in line


def test_a_port_in_use_is_named(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        quiet = {"MCP_MEMORY_LOG_LEVEL": "WARNING"}  # the "service ready" line comes before the bind
        result = serve(tmp_path / "data", quiet, "--transport", "http", "--port", str(port))
    line = one_line_error(result)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line
