"""N real `mcp-memory serve --transport http` processes behind a real nginx doing plain round-robin,
sharing working memory (Redis) and the long-term store, for bench/load.py --processes and
bench/cosmos_scale.py.

- Redis: the one answering on 127.0.0.1:6379 when there is one, else a private server started as the
  tests start theirs (tests/services/redis_server.py); every fleet uses a key prefix of its own and
  deletes its keys afterwards.
- Long-term store: `sqlite` is one SQLite file, the shared data dir's; `cosmos` is the local
  Cosmos-protocol server (@vercel/cosmosdb-server, tests/services/cosmos_server.py) reached through the
  loopback latency proxy (tests/services/latency_proxy.py), a database of its own per fleet.
- Every process has the same data dir (its secrets and keys), settings and tokens; each its own
  working directory and stderr file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.services.cosmos_server import EMULATOR_KEY
from tests.services.latency_proxy import ProxyProcess
from tests.services.node_service import stop
from tests.services.redis_server import answers_ping
from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer, free_port, server_env

NGINX_MISSING = (
    "these benches put the processes behind nginx, which is not installed: "
    "`apt-get install -y nginx-light` (Debian/Ubuntu), or put nginx on PATH"
)
Protocol = Literal["2025", "2026"]


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")  # often not on PATH
    if found is None:
        raise SystemExit(NGINX_MISSING)
    return found


NGINX_CONF = """\
{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    upstream mcp_memory {{
{servers}
        keepalive 128;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://mcp_memory;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;  # with its port: the server checks it (DNS rebinding)
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


@contextmanager
def round_robin(ports: Sequence[int], workdir: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """nginx on a free loopback port, passing requests to `ports` in turn (its default: round-robin)."""
    binary = nginx_binary()
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = workdir / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user="user root;\n" if os.geteuid() == 0 else "",  # workers write under this (private) dir
            prefix=workdir,
            port=port,
            servers="\n".join(f"        server 127.0.0.1:{p};" for p in ports),
        )
    )
    process = subprocess.Popen(
        [binary, "-p", str(workdir), "-c", str(conf), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "nginx.stderr").open("wb"),
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/health", process, workdir / "error.log")
        yield port, process
    finally:
        stop(process)


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)  # polling a starting process
    text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise SystemExit(f"nginx did not answer {url} (exit code {process.poll()}); its error log ends:\n{text}")


def children(pid: int) -> list[int]:
    """The process ids whose parent is `pid` (nginx's workers), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


@contextmanager
def shared_redis(workdir: Path) -> Iterator[str]:
    """The URL of a Redis: 127.0.0.1:6379 if it answers, else a private server for this run."""
    if answers_ping(6379):
        yield "redis://127.0.0.1:6379/0"
        return
    from tests.services.redis_server import RedisServer, find_redis_binary

    binary = find_redis_binary()
    if binary is None:
        raise SystemExit("no Redis: start redis-server on 127.0.0.1:6379 or `apt-get install redis-server`")
    server = RedisServer(binary, workdir / "redis")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _drop_keys(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            client.delete(key)
    finally:
        client.close()


@dataclass
class Fleet:
    """The running processes and their front door."""

    servers: list[NetworkServer]
    nginx: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    proxy: ProxyProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def server_pids(self) -> list[int]:
        return [pid for server in self.servers if (pid := server.pid) is not None]

    @property
    def nginx_pids(self) -> list[int]:
        return [self.nginx.pid, *children(self.nginx.pid)]


@contextmanager
def fleet(
    processes: int,
    workdir: Path,
    env: dict[str, str],
    redis_url: str,
    store: Literal["sqlite", "cosmos"],
    proxy: ProxyProcess | None = None,
) -> Iterator[Fleet]:
    """`processes` servers on one data dir, Redis and (cosmos) a fresh database behind `proxy`."""
    nginx_binary()  # before anything starts: without nginx there is no fleet
    run = uuid.uuid4().hex[:8]
    shared = {
        **env,
        "MCP_MEMORY_WORKING__REDIS_URL": redis_url,
        "MCP_MEMORY_WORKING__KEY_PREFIX": f"bench{run}",
    }
    if store == "cosmos":
        assert proxy is not None, "the cosmos store is reached through the latency proxy"
        shared |= {
            "MCP_MEMORY_LONG_TERM__BACKEND": "cosmos",
            "MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT": proxy.url,
            "MCP_MEMORY_LONG_TERM__COSMOS__KEY": EMULATOR_KEY,
            "MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT_DISCOVERY": "false",
            "MCP_MEMORY_LONG_TERM__COSMOS__DATABASE": f"bench_{run}",
        }
    data_dir = workdir / "data"
    servers = [
        NetworkServer("http", workdir / f"process-{i}", server_env(data_dir, shared))
        for i in range(processes)
    ]
    with ExitStack() as stack:
        for server in servers:
            stack.callback(server.stop)
            server.start()  # one after the other: the first creates the database, the others find it
        port, nginx = stack.enter_context(round_robin([s.port for s in servers], workdir / "nginx"))
        stack.callback(_drop_keys, redis_url, f"bench{run}")
        yield Fleet(servers, nginx, port, data_dir, proxy)


@asynccontextmanager
async def fleet_client(url: str, token: str, protocol: Protocol) -> AsyncIterator[Client]:
    """An MCP SDK client with a bearer token: `2025` = mode legacy (initialize, a session), `2026` the
    default (stateless requests)."""
    options: dict[str, Any] = {"mode": "legacy"} if protocol == "2025" else {}
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS, **options) as client:
            yield client


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds of these processes, from /proc (0 for one that is gone)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def scrape(server: NetworkServer, token: str, prefix: str) -> dict[str, float] | None:
    """The samples of /metrics whose names start with `prefix` (name with labels -> value); None when
    /metrics cannot be read."""
    request = urllib.request.Request(
        f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    samples = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples
