"""A loopback TCP proxy that adds network latency: every chunk waits `latency_ms` before it is passed on,
each way, so a request and its answer take one round trip of 2 x latency_ms more (a client and a
database in one cloud region are a few ms apart; loopback is 0). Chunks keep their order and do not
wait for each other: the delay is latency, not a bandwidth limit.

It also counts what it forwarded: connections, bytes each way, and HTTP/1.x requests (request heads
seen going upstream), so a bench can say how many requests one operation cost.

In process (tests):   async with LatencyProxy(upstream_host, upstream_port, 4.0) as proxy: ... proxy.port
As a process (benches, so the proxy's event loop shares no interpreter lock with the clients):

    with latency_proxy_process("127.0.0.1", 8081, 4.0) as proxy:
        proxy.url, proxy.counts()

    python -m tests.services.latency_proxy --upstream 127.0.0.1:8081 --latency-ms 4
    (prints `listening on 127.0.0.1:<port>`; each line `counts` on stdin is answered with a JSON line)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

_READY = re.compile(r"listening on ([\d.]+):(\d+)")


@dataclass
class ProxyCounts:
    connections: int = 0
    requests: int = 0
    bytes_up: int = 0
    bytes_down: int = 0


class RequestCounter:
    """Counts HTTP/1.x requests in a client's byte stream: each head (up to a blank line), then a body
    of its Content-Length, or chunked up to its last chunk."""

    def __init__(self) -> None:
        self.requests = 0
        self._buffer = b""
        self._body_left = 0
        self._chunked = False

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while self._buffer:
            if self._body_left:
                taken = min(self._body_left, len(self._buffer))
                self._buffer, self._body_left = self._buffer[taken:], self._body_left - taken
            elif self._chunked:
                end = self._buffer.find(b"\r\n0\r\n\r\n")
                if end < 0:
                    self._buffer = self._buffer[-8:]
                    return
                self._buffer, self._chunked = self._buffer[end + 7 :], False
            else:
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head, self._buffer = self._buffer[:end].lower(), self._buffer[end + 4 :]
                self.requests += 1
                length = re.search(rb"\r\ncontent-length:\s*(\d+)", head)
                self._body_left = int(length.group(1)) if length else 0
                self._chunked = b"\r\ntransfer-encoding: chunked" in head


class LatencyProxy:
    """Listens on 127.0.0.1 (a free port unless given) and forwards every connection to the upstream."""

    def __init__(self, upstream_host: str, upstream_port: int, latency_ms: float, port: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.delay = latency_ms / 1000
        self.port = port
        self.counts = ProxyCounts()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> LatencyProxy:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for connection in self._connections:
            connection.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        with suppress(TimeoutError):
            await asyncio.wait_for(self._server.wait_closed(), 1.0)

    async def _connection(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        self.counts.connections += 1
        if (this := asyncio.current_task()) is not None:
            self._connections.add(this)
            this.add_done_callback(self._connections.discard)
        try:
            upstream_in, upstream_out = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_out.close()
            return
        async with asyncio.TaskGroup() as both_ways:
            both_ways.create_task(self._pipe(client_in, upstream_out, upstream=True))
            both_ways.create_task(self._pipe(upstream_in, client_out, upstream=False))

    async def _pipe(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        """Read chunks as they come; a writer task passes each on once it has waited its delay."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        writer = asyncio.create_task(self._deliver(queue, sink))
        requests = RequestCounter()
        try:
            while chunk := await source.read(65536):
                queue.put_nowait((time.monotonic() + self.delay, chunk))
                if upstream:
                    self.counts.bytes_up += len(chunk)
                    before = requests.requests
                    requests.feed(chunk)
                    self.counts.requests += requests.requests - before
                else:
                    self.counts.bytes_down += len(chunk)
        except (ConnectionError, OSError):
            pass
        finally:
            queue.put_nowait((time.monotonic() + self.delay, b""))  # end of stream, after the last chunk
            await writer

    @staticmethod
    async def _deliver(queue: asyncio.Queue[tuple[float, bytes]], sink: asyncio.StreamWriter) -> None:
        try:
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not chunk:
                    break
                sink.write(chunk)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            sink.close()


@dataclass
class ProxyProcess:
    """A proxy running as a process of its own (see latency_proxy_process)."""

    port: int
    process: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def counts(self) -> ProxyCounts:
        """What it has forwarded so far."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write("counts\n")
        stdin.flush()
        return ProxyCounts(**json.loads(stdout.readline()))


@contextmanager
def latency_proxy_process(host: str, port: int, latency_ms: float) -> Iterator[ProxyProcess]:
    """Run the proxy (this module) as a child process until the block ends."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.services.latency_proxy"),
            *("--upstream", f"{host}:{port}", "--latency-ms", str(latency_ms)),
        ],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = _READY.search(process.stdout.readline())
        if ready is None:
            raise RuntimeError(f"the latency proxy did not start (exit code {process.poll()})")
        yield ProxyProcess(int(ready.group(2)), process)
    finally:
        from tests.services.node_service import stop  # here: the proxy's own process never needs it

        stop(process)


async def _serve(upstream: str, latency_ms: float, port: int) -> None:
    host, _, upstream_port = upstream.rpartition(":")
    async with LatencyProxy(host, int(upstream_port), latency_ms, port) as proxy:
        print(f"listening on 127.0.0.1:{proxy.port}", flush=True)
        loop = asyncio.get_running_loop()
        commands = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
        while line := await commands.readline():
            if line.strip() == b"counts":
                _answer(sys.stdout, proxy.counts)


def _answer(out: IO[str], counts: ProxyCounts) -> None:
    out.write(json.dumps(asdict(counts)) + "\n")
    out.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="host:port to forward to")
    parser.add_argument("--latency-ms", type=float, default=4.0, help="delay of each chunk, each way")
    parser.add_argument("--port", type=int, default=0, help="where to listen (default: a free port)")
    args = parser.parse_args()
    asyncio.run(_serve(args.upstream, args.latency_ms, args.port))


if __name__ == "__main__":
    main()
