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
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services.node_service import cache_dir, node, npm_install, stop, wait_for_line

PACKAGE = "@vercel/cosmosdb-server@1.0.1"
EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
_READY = re.compile(r"Ready to accept HTTP connections at ([\d.]+):(\d+)")


@dataclass(frozen=True)
class CosmosServer:
    endpoint: str
    key: str
    # The server process, for fault tests that pause it (SIGSTOP/SIGCONT keeps its in-memory data).
    process: subprocess.Popen[str] | None = None


def _install_dir() -> Path:
    override = os.environ.get("COSMOS_LOCAL_SERVER_DIR")
    return Path(override) if override else cache_dir("cosmosdb-server")


# The server as its cli.js starts it, but answering with keep-alive (its cli has no flag for it).
_KEEP_ALIVE = """
const server = require(process.argv[1]).createHttpServer({ keepAlive: true });
server.listen(0, "127.0.0.1", () => {
  console.log(`Ready to accept HTTP connections at 127.0.0.1:${server.address().port}`);
});
"""


@contextmanager
def local_cosmos_server(*, keep_alive: bool = False) -> Iterator[CosmosServer]:
    """Install (once) and run the server until the block ends. Also used by the Cosmos benches.

    It closes every connection after its answer (a new TCP connection per request, which Azure does
    not do); `keep_alive` keeps them open, as bench/cosmos_cost.py measures."""
    install_dir = _install_dir()
    entry = install_dir / "node_modules" / "@vercel" / "cosmosdb-server" / "lib" / "cli.js"
    cli = npm_install(PACKAGE, install_dir, entry)
    command = [node("the local Cosmos DB server"), str(cli), "--host", "127.0.0.1", "-p", "0", "--no-ssl"]
    if keep_alive:
        command = [command[0], "-e", _KEEP_ALIVE, str(cli.parent)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        ready = wait_for_line(process, _READY, "the local Cosmos DB server")
        yield CosmosServer(
            endpoint=f"http://{ready.group(1)}:{ready.group(2)}", key=EMULATOR_KEY, process=process
        )
    finally:
        stop(process)


@pytest.fixture(scope="session")
def cosmos_server() -> Iterator[CosmosServer]:
    with local_cosmos_server() as server:
        yield server


@pytest.fixture
def private_cosmos_server() -> Iterator[CosmosServer]:
    """A server of this test's own, for tests that pause it; never the session's shared one."""
    with local_cosmos_server() as server:
        yield server
