"""The real `mcp-memory` process for end-to-end tests, over stdio, SSE or streamable HTTP.

Every server runs the installed console script with an environment of its own: the developer's
MCP_MEMORY_* variables are dropped, the data dir is private, the user is `e2e`, the embedder is the
shipped hashing one unless a test asks for the real local model, and the working directory is a
scratch dir so no stray .env is read. SSE and HTTP servers are long-running processes (started,
polled on GET /health, terminated, killed after a grace period); a stdio "server" is the command a
client launches per connection: a relay to the data dir's resident server (mcp_memory/relay/), which it
starts, unless `in_process`. Every resident server a stdio server started is stopped after the test (or
after the module, for the module's `stdio_server`). Each keeps its stderr in a file, shown in the report
of a failing test (a stdio server's with its resident server's log).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO, TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client

from tests.helpers import HANG_SECONDS
from tests.services.resident import stop_resident

Transport = Literal["stdio", "sse", "http"]
Server = TypeVar("Server", bound="NetworkServer")
TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "http")
E2E_USER = "e2e"
START_SECONDS = HANG_SECONDS  # a bound against a hang: a loaded machine starts a server late, not never
STOP_SECONDS = 30.0  # above the server's own 10 s shutdown grace for background jobs, and its teardown
READ_TIMEOUT_SECONDS = 60.0  # a hung server fails the call instead of hanging the suite


def mcp_memory_command() -> str:
    """The `mcp-memory` console script installed next to this Python (the venv's bin)."""
    script = Path(sys.executable).parent / ("mcp-memory.exe" if os.name == "nt" else "mcp-memory")
    if not script.is_file():
        pytest.fail(f"the mcp-memory console script is missing at {script}; run `pip install -e .[dev]`")
    return str(script)


def server_env(data_dir: Path, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment minus the developer's MCP_MEMORY_* settings, plus the test's own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    env |= {
        "MCP_MEMORY_DATA_DIR": str(data_dir),
        "MCP_MEMORY_USER_ID": E2E_USER,
        "MCP_MEMORY_EMBEDDING__PROVIDER": "hash",
        "MCP_MEMORY_TOOLS": "all",  # every tool (the default profile leaves out the graph and forget_user)
    }
    env |= dict(overrides or {})
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def tail(text: str, chars: int = 4000) -> str:
    """The end of a server's stderr, for failure messages."""
    return text[-chars:] if text else "(nothing on stderr)"


class McpMemoryServer(Protocol):
    transport: Transport
    stderr_path: Path

    def connect(self, **options: Any) -> Client: ...

    def stderr(self) -> str: ...


class NetworkServer:
    """`mcp-memory serve --transport sse|http` as a long-running process on a free port."""

    def __init__(
        self,
        transport: Literal["sse", "http"],
        workdir: Path,
        env: dict[str, str],
        *,
        port: int | None = None,
    ) -> None:
        self.transport: Transport = transport
        self.workdir = workdir
        self.env = env
        self.port = 0
        self.fixed_port = port
        self.stderr_path = workdir / f"mcp-memory-{transport}.stderr"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/sse" if self.transport == "sse" else f"{self.base_url}/mcp"

    @property
    def pid(self) -> int | None:
        """The running server's process id (None when it is not running)."""
        return self._process.pid if self._process is not None else None

    def connect(self, **options: Any) -> Client:
        """A client for this server, to enter with `async with`; options go to the Client (mode, ...)."""
        transport = sse_client(self.url) if self.transport == "sse" else self.url
        return Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS, **options)

    def stderr(self) -> str:
        """Everything the process wrote to stderr so far."""
        return _read(self.stderr_path)

    def start(self) -> None:
        assert self._process is None, "already running"
        for _ in range(3):  # a free port can be taken by someone else before the server binds it
            self.port = self.fixed_port or free_port()
            self._spawn()
            if self._wait_healthy():
                return
            exit_code = self.stop()
            if "cannot listen on" not in self.stderr() or self.fixed_port:
                break
        pytest.fail(
            f"`mcp-memory {' '.join(self.arguments())}` did not answer GET {self.health_path} within "
            f"{START_SECONDS:g}s (exit code {exit_code}); its stderr ends:\n{tail(self.stderr())}"
        )

    def stop(self) -> int | None:
        """Terminate (SIGTERM), kill after a grace period; the exit code, None if it never ran."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    def exited_early(self) -> bool:
        return self._process is not None and self._process.poll() is not None

    def _spawn(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.stderr_path.open("ab") as stderr:
            # "{port}" in a value (e.g. the OAuth resource URL) is the port this start chose.
            env = {name: value.replace("{port}", str(self.port)) for name, value in self.env.items()}
            self._process = subprocess.Popen(
                [mcp_memory_command(), *self.arguments()],
                env=env,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    health_path = "/health"  # polled until it answers 200: the server is up

    def arguments(self) -> list[str]:
        """The command's arguments after `mcp-memory`."""
        return ["serve", "--transport", self.transport, "--port", str(self.port)]

    def _wait_healthy(self) -> bool:
        """Poll GET health_path until it answers; False when the process exits or the deadline passes."""
        assert self._process is not None
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and self._process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.base_url}{self.health_path}", timeout=1) as response:
                    if response.status == 200:
                        return True
            except OSError:  # URLError is an OSError: not listening yet
                pass
            time.sleep(0.05)  # polling a starting process, not a test waiting on behaviour
        return False


# The data dirs whose resident server a stdio server may have started (stopped after each test), and
# those a module-scoped fixture keeps for its tests (stopped at its end).
_RELAYED_DATA_DIRS: set[Path] = set()
_KEPT_DATA_DIRS: set[Path] = set()


class StdioServer:
    """`mcp-memory serve` over stdio: each connect() launches the command, as a desktop client does; it
    relays to the data dir's resident server, or serves in its own process with `in_process`."""

    transport: Transport = "stdio"

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        command: str | None = None,
        args: list[str] | None = None,
        *,
        in_process: bool = False,
    ) -> None:
        self.workdir = workdir
        self.env = env
        self.command = command or mcp_memory_command()
        self.args = args if args is not None else ["serve", *(["--in-process"] if in_process else [])]
        self.stderr_path = workdir / "mcp-memory-stdio.stderr"
        self._errlog: TextIO | None = None

    @property
    def data_dir(self) -> Path:
        """Where the command keeps its data (and its resident server's socket and log)."""
        configured = self.env.get("MCP_MEMORY_DATA_DIR")
        if configured:
            return Path(configured)
        home = Path(self.env.get("HOME", str(Path.home())))
        return Path(self.env.get("XDG_DATA_HOME") or home / ".local" / "share") / "mcp-memory"

    def connect(self, **options: Any) -> Client:
        """A client that launches the command; options go to the Client (mode, message_handler, ...)."""
        _RELAYED_DATA_DIRS.add(self.data_dir)
        # stdio_client merges env over a few inherited variables (HOME, PATH, ...) only; ours is complete.
        params = StdioServerParameters(command=self.command, args=self.args, env=self.env, cwd=self.workdir)
        return Client(
            stdio_client(params, errlog=self._open_errlog()),
            read_timeout_seconds=READ_TIMEOUT_SECONDS,
            **options,
        )

    def stderr(self) -> str:
        """The command's stderr, then its resident server's log (where a relayed session's server logs)."""
        if self._errlog is not None:
            self._errlog.flush()
        resident_log = _read(self.data_dir / "hooks" / "hooks.log")
        return _read(self.stderr_path) + (
            f"\n--- resident server log ---\n{resident_log}" if resident_log else ""
        )

    def close(self) -> None:
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def _open_errlog(self) -> TextIO:
        if self._errlog is None:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._errlog = self.stderr_path.open("a")
        return self._errlog


# ---- fixtures ---------------------------------------------------------------------------------------


def _network_server(
    tmp_path_factory: pytest.TempPathFactory, transport: Literal["sse", "http"]
) -> Iterator[NetworkServer]:
    workdir = tmp_path_factory.mktemp(f"mcp-memory-{transport}")
    yield from running(
        NetworkServer(transport, workdir, server_env(workdir / "data")), f"the {transport} server"
    )


def running(server: Server, what: str) -> Iterator[Server]:
    """Start the server, yield it, stop it; fail the tests that used it if it died on the way."""
    server.start()
    try:
        yield server
    finally:
        exited_early = server.exited_early()
        server.stop()
        if exited_early:
            pytest.fail(f"{what} died during the tests; its stderr ends:\n{tail(server.stderr())}")


@pytest.fixture(scope="module")
def sse_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetworkServer]:
    """One SSE server process per test module (hashing embedder); tests use their own thread ids."""
    yield from _network_server(tmp_path_factory, "sse")


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetworkServer]:
    """One streamable-HTTP server process per test module (hashing embedder)."""
    yield from _network_server(tmp_path_factory, "http")


@pytest.fixture(scope="module")
def stdio_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    """The stdio command on one data dir per test module; each connection is a new process."""
    workdir = tmp_path_factory.mktemp("mcp-memory-stdio")
    server = StdioServer(workdir, server_env(workdir / "data"))
    _KEPT_DATA_DIRS.add(server.data_dir)
    try:
        yield server
    finally:
        server.close()
        stop_resident(server.data_dir)
        _KEPT_DATA_DIRS.discard(server.data_dir)
        _RELAYED_DATA_DIRS.discard(server.data_dir)


@pytest.fixture(autouse=True)
def _stop_relayed_residents() -> Iterator[None]:
    """Stop the resident servers the test's own stdio servers started."""
    yield
    for data_dir in list(_RELAYED_DATA_DIRS - _KEPT_DATA_DIRS):
        stop_resident(data_dir)
        _RELAYED_DATA_DIRS.discard(data_dir)


@pytest.fixture(params=TRANSPORTS)
def mcp_server(request: pytest.FixtureRequest) -> McpMemoryServer:
    """The same test over stdio, SSE and streamable HTTP."""
    server: McpMemoryServer = request.getfixturevalue(f"{request.param}_server")
    return server


class ServerStarter:
    """Starts SSE/HTTP servers of one test's own (for restarts and isolation); stops them all at the end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[NetworkServer] = []

    def __call__(
        self,
        transport: Literal["sse", "http"],
        data_dir: Path,
        overrides: Mapping[str, str] | None = None,
        *,
        port: int | None = None,
    ) -> NetworkServer:
        """`port`: listen there (a test that registers the URL elsewhere first); default: a free one."""
        workdir = self.workdir / f"{transport}-{len(self.started)}"
        server = NetworkServer(transport, workdir, server_env(data_dir, overrides), port=port)
        self.started.append(server)
        server.start()
        return server

    def stop_all(self) -> None:
        for server in self.started:
            server.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[ServerStarter]:
    """start_server(transport, data_dir, overrides=None) -> a running NetworkServer of this test's own."""
    starter = ServerStarter(tmp_path)
    try:
        yield starter
    finally:
        starter.stop_all()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the stderr of every server a failing test used to its report."""
    report = yield
    if report.when == "call" and report.failed:
        for value in getattr(item, "funcargs", {}).values():
            servers = value.started if isinstance(value, ServerStarter) else [value]
            for server in servers:
                if isinstance(server, NetworkServer | StdioServer):
                    report.sections.append(
                        (f"mcp-memory {server.transport} server stderr", tail(server.stderr()))
                    )
    return report
