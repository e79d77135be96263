"""A real local Cosmos-protocol server for the suite: npm package @vercel/cosmosdb-server.

Installed once into <repo>/.cache/cosmosdb-server (or $COSMOS_LOCAL_SERVER_DIR), started per session on
127.0.0.1 over plain HTTP (--no-ssl; the SDK then needs enable_endpoint_discovery=False, or it would
follow the https:// endpoints the server advertises), on a port the OS picks, and stopped at the end.
The server checks no signatures, but the SDK signs every request with the key, so it must be valid
base64: the well-known public Cosmos DB emulator key is used (it protects nothing).

It supports databases, containers (MultiHash keys accepted), CRUD, patch, parameterized SQL with
TOP / ORDER BY / IS_DEFINED / ARRAY_CONTAINS / COUNT / MAX / SUM, paging and ETag 412s. It lacks
VectorDistance, FullTextScore, FullTextContains*, RANK RRF, GROUP BY, DISTINCT, OFFSET/LIMIT, TTL expiry,
transactional batch with hierarchical keys, and answers a point read of a missing item with 500.
It keys items by the first partition-key level only, so ids must be unique per user.
A failure to install or start it fails the tests that need it; it is never a skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "@vercel/cosmosdb-server@1.0.1"
EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
_READY = re.compile(r"Ready to accept HTTP connections at ([\d.]+):(\d+)")
_START_SECONDS = 30.0
_INSTALL_SECONDS = 300.0


@dataclass(frozen=True)
class CosmosServer:
    endpoint: str
    key: str
    # The server process, for fault tests that pause it (SIGSTOP/SIGCONT keeps its in-memory data).
    process: subprocess.Popen[str] | None = None


def _install_dir() -> Path:
    override = os.environ.get("COSMOS_LOCAL_SERVER_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / ".cache" / "cosmosdb-server"


def _cli(install_dir: Path) -> Path:
    return install_dir / "node_modules" / "@vercel" / "cosmosdb-server" / "lib" / "cli.js"


def _install(install_dir: Path) -> Path:
    cli = _cli(install_dir)
    if cli.exists():
        return cli
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("the Cosmos DB contract tests need Node.js and npm on PATH to install " + PACKAGE)
    install_dir.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(install_dir),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                PACKAGE,
            ],
            capture_output=True,
            text=True,
            timeout=_INSTALL_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"npm install {PACKAGE} into {install_dir} took longer than {_INSTALL_SECONDS:g}s")
    if result.returncode != 0 or not cli.exists():
        pytest.fail(f"npm install {PACKAGE} into {install_dir} failed:\n{result.stderr[-2000:]}")
    return cli


def _wait_ready(process: subprocess.Popen[str]) -> tuple[str, int]:
    """Read the server's output until it says where it listens (it picks the port: -p 0), then keep
    draining it in the background so a chatty server never blocks on a full pipe."""
    found: list[tuple[str, int]] = []
    output: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if not ready.is_set():
                output.append(line)
                match = _READY.search(line)
                if match:
                    found.append((match.group(1), int(match.group(2))))
                    ready.set()
        ready.set()  # the process ended

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(_START_SECONDS) or not found:
        process.kill()
        pytest.fail(
            f"the local Cosmos DB server did not start within {_START_SECONDS:g}s "
            f"(exit code {process.poll()}):\n{''.join(output)[-2000:]}"
        )
    return found[0]


@contextmanager
def local_cosmos_server() -> Iterator[CosmosServer]:
    """Install (once) and run the server until the block ends. Also used by bench/cosmos_local_latency.py."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("the Cosmos DB contract tests need Node.js (node) on PATH to run " + PACKAGE)
    cli = _install(_install_dir())
    process = subprocess.Popen(
        [node, str(cli), "--host", "127.0.0.1", "-p", "0", "--no-ssl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        host, port = _wait_ready(process)
        yield CosmosServer(endpoint=f"http://{host}:{port}", key=EMULATOR_KEY, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def cosmos_server() -> Iterator[CosmosServer]:
    with local_cosmos_server() as server:
        yield server


@pytest.fixture
def private_cosmos_server() -> Iterator[CosmosServer]:
    """A server of this test's own, for tests that pause it; never the session's shared one."""
    with local_cosmos_server() as server:
        yield server
