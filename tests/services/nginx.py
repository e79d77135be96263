"""A real nginx in front of several `mcp-memory serve` processes, balancing plain round-robin: no sticky
sessions, as a load balancer that knows nothing of MCP would. Debian's `nginx-light` is enough
(scripts/test installs it); without nginx the fixture fails naming the package."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.helpers import HANG_SECONDS
from tests.services.server_process import NetworkServer, free_port, tail

START_SECONDS = HANG_SECONDS  # a bound against a hang, not a speed test

CONFIG = """\
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format upstreams '$request_method $status $upstream_addr';
    access_log {prefix}/access.log upstreams;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    upstream replicas {{
{servers}
    }}
{routes}    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://{pool};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;          # event streams go through as they are written
            proxy_read_timeout 1h;
        }}
    }}
}}
"""


# Routes by request instead of balancing everything: a session's stream (GET) to one replica, a request
# opening a session (it has no Mcp-Session-Id yet) to one replica, everything else balanced.
ROUTES = """\
{upstreams}    map $http_mcp_session_id $calls {{
        "" {opens};
        default replicas;
    }}
    map $request_method $pool {{
        GET {streams};
        default $calls;
    }}
"""
UPSTREAM = "    upstream {name} {{\n        server 127.0.0.1:{port};\n    }}\n"


def nginx_binary() -> str:
    binary = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(path).is_file()), None
    )
    if binary is None:
        pytest.fail(
            "nginx is needed to balance requests between server replicas; install the Debian package "
            "nginx-light (`apt-get install -y nginx-light`; scripts/test does it when run as root)"
        )
    return binary


class Nginx:
    """nginx balancing round-robin over `replicas`, on a free loopback port, until stopped."""

    def __init__(
        self,
        replicas: Sequence[NetworkServer],
        workdir: Path,
        weights: Sequence[int] | None = None,
        streams: NetworkServer | None = None,
        opens: NetworkServer | None = None,
        port: int | None = None,
    ) -> None:
        self.replicas = replicas
        self.fixed_port = port  # a URL registered elsewhere first (an OAuth resource); default: a free port
        self.weights = list(weights or [1] * len(replicas))
        self.streams = streams  # when set, every GET (a session's stream) goes to this replica
        self.opens = opens  # when set, every request without a session id (initialize) goes to this one
        self.prefix = workdir / "nginx"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        binary = nginx_binary()
        self.prefix.mkdir(parents=True, exist_ok=True)
        self.port = self.fixed_port or free_port()
        servers = "\n".join(
            f"        server 127.0.0.1:{replica.port} weight={weight};"
            for replica, weight in zip(self.replicas, self.weights, strict=True)
        )
        config = self.prefix / "nginx.conf"
        routes, pool = "", "replicas"
        if self.streams is not None or self.opens is not None:
            upstreams = "".join(
                UPSTREAM.format(name=name, port=replica.port)
                for name, replica in (("streams", self.streams), ("opens", self.opens))
                if replica is not None
            )
            routes = ROUTES.format(
                upstreams=upstreams,
                streams="streams" if self.streams is not None else "$calls",
                opens="opens" if self.opens is not None else "replicas",
            )
            pool = "$pool"
        config.write_text(
            CONFIG.format(prefix=self.prefix, port=self.port, servers=servers, routes=routes, pool=pool)
        )
        self._process = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.prefix / "stderr.log").open("ab"),
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and self._process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                    return
            except OSError:
                time.sleep(0.05)  # polling a starting process, not a test waiting on behaviour
        pytest.fail(f"nginx did not start; it said:\n{tail(self.log('stderr.log') + self.log('error.log'))}")

    def upstreams(self) -> list[str]:
        """The replica (host:port) each request went to, in order (the access log)."""
        return [line.split()[-1] for line in self.log("access.log").splitlines() if line.strip()]

    def log(self, name: str) -> str:
        path = self.prefix / name
        return path.read_text(errors="replace") if path.is_file() else ""

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            process.wait(timeout=10)


def balanced(
    replicas: Sequence[NetworkServer],
    workdir: Path,
    weights: Sequence[int] | None = None,
    streams: NetworkServer | None = None,
    opens: NetworkServer | None = None,
    port: int | None = None,
) -> Iterator[Nginx]:
    """nginx over `replicas`; with `weights`, weighted round-robin (nginx spreads each replica's turns);
    with `streams`, every GET goes to that replica instead; with `opens`, every request that opens a
    session (no Mcp-Session-Id) goes to that one."""
    nginx = Nginx(replicas, workdir, weights, streams, opens, port)
    nginx.start()
    try:
        yield nginx
    finally:
        nginx.stop()
