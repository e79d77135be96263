"""bench/load.py --processes: the writes and searches rows of "A team on one server" again, with the
server scaled out to N processes behind nginx round-robin (bench/harness/fleet.py), for each N and user count.

Every user has their own token and one MCP SDK client through nginx, speaking --protocol 2026 (the
SDK's default: stateless requests, any process answers any call) or 2025 (mode legacy: an initialize
handshake, then a session that lives in the process that answered it). A call that fails (such as a
2025 session that another process does not know: 404) is counted in `errors`, and the run goes on.
On a 404 the SDK's Client keeps its session, and so do these clients (about half of a 2025 client's
calls then fail with 2 processes); with --new-session-on-404 a client starts a new session before its
next call, as the specification asks of a client (counted as sessions started again). A client whose
connection closed always connects again.

--store cosmos runs on the local Cosmos-protocol server, which has no vector or full-text search
functions (tests/services/cosmos_server.py): its searches fail, counted as errors; its writes row holds.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from bench._team import Row, Team, corpus, count_turns, load_principals, server_overrides
from bench.harness.fleet import Fleet, cpu_seconds, fleet, fleet_client, shared_redis
from bench.harness.timing import quantiles
from tests.security.bearer import Credential, tokens_env
from tests.services.latency_proxy import ProxyProcess, latency_proxy_process

CONNECT_ATTEMPTS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--new-session-on-404",
        action="store_true",
        help="--protocol 2025: a client starts a new session on a 404",
    )
    parser.add_argument(
        "--processes", type=int, nargs="+", help="scale out: N server processes behind nginx, for each N"
    )
    parser.add_argument(
        "--store", choices=["sqlite", "cosmos"], default="sqlite", help="--processes: long term"
    )
    parser.add_argument(
        "--protocol", choices=["2025", "2026"], default="2026", help="--processes: MCP version"
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=4.0,
        help="--store cosmos: added each way between server and Cosmos",
    )


class UserClient:
    """A user's client, held open by a task of its own (`hold`), connected again when its connection
    closed and, with `new_session_on_404`, when the process that answered did not know its session
    (2025 behind round-robin); the failed call is counted as an error either way."""

    def __init__(self, url: str, who: Credential, protocol: Any, *, new_session_on_404: bool = False) -> None:
        self.url, self.who, self.protocol = url, who, protocol
        self.new_session_on_404 = new_session_on_404
        self.client: Any = None
        self.reconnects = 0
        self.connect_errors: list[str] = []
        self._ready = anyio.Event()
        self._lost = anyio.Event()
        self._closing = False
        self._gave_up = False

    async def hold(self) -> None:
        """Keep a session open until close(); a new one whenever a call found it lost; give up after
        CONNECT_ATTEMPTS failed connections in a row."""
        failures = 0
        while not self._closing and failures < CONNECT_ATTEMPTS:
            try:
                async with fleet_client(self.url, self.who.token, self.protocol) as client:
                    failures = 0
                    self.client = client
                    self._ready.set()
                    await self._lost.wait()
            except Exception as e:  # benchmark boundary: a failed handshake is counted and tried again
                failures += 1
                self.connect_errors.append(f"connect: {type(e).__name__}: {e}")
            finally:
                self.client, self._lost = None, anyio.Event()
                if not self._ready.is_set():
                    self._ready.set()  # wake callers, who see no client and wait for the next one
                self._ready = anyio.Event()
        self._gave_up = True
        self._ready.set()

    def close(self) -> None:
        self._closing = True
        self._lost.set()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        while (client := self.client) is None:
            if self._closing or self._gave_up:
                raise ConnectionError(self.connect_errors[-1] if self.connect_errors else "closed")
            await self._ready.wait()
        try:
            return await client.call_tool(name, arguments)
        except Exception as e:
            lost = "Connection closed" in str(e) or (
                self.new_session_on_404 and "Session not found" in str(e)
            )
            if lost and self.client is client:
                self.reconnects += 1
                self.client, self._ready = None, anyio.Event()  # the next call waits for the new session
                self._lost.set()
            raise


@dataclass
class Phase:
    """A row of load.py and what scaling out adds to it."""

    row: Row
    nginx_cores: float
    reconnects: int
    connect_errors: int
    acknowledged: int


async def _rows(
    fleet_: Fleet, principals: list[Credential], args: argparse.Namespace, tag: str
) -> list[Phase]:
    texts, questions = corpus(args.corpus)
    clients = [
        UserClient(fleet_.url, who, args.protocol, new_session_on_404=args.new_session_on_404)
        for who in principals
    ]
    rows = []
    async with anyio.create_task_group() as holders:
        for client in clients:
            holders.start_soon(client.hold)
        team = Team(list(clients), texts, questions, tag, fleet_.server_pids)
        for phase in ("writes", "searches"):
            nginx_began, began = cpu_seconds(fleet_.nginx_pids), time.perf_counter()
            reconnects_before = sum(c.reconnects for c in clients)
            failed_before = sum(len(c.connect_errors) for c in clients)
            row = await team.flat_out(phase, args.seconds, args.warmup)
            nginx = (cpu_seconds(fleet_.nginx_pids) - nginx_began) / (time.perf_counter() - began)
            reconnects = sum(c.reconnects for c in clients) - reconnects_before
            failed = sum(len(c.connect_errors) for c in clients) - failed_before
            rows.append(Phase(row, nginx, reconnects, failed, team.acknowledged))
            if phase == "writes":
                await anyio.sleep(args.settle)
        for client in clients:
            client.close()
    return rows


HEADER = (
    "| processes | row | users | calls | calls/s | p50 ms | p99 ms | errors | shed (503) | lost "
    "| server cores | nginx cores | client cores |\n"
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def _line(processes: int, phase: Phase) -> str:
    row = phase.row
    p = quantiles(row.latencies) if row.latencies else {50: float("nan"), 99: float("nan")}
    p50, p99 = f"{p[50]:.1f}", f"{p[99]:.1f}"
    lost = "" if row.lost is None else str(row.lost)
    cores = [
        f"{c:.2f}" if c is not None else "" for c in (row.server_cores, phase.nginx_cores, row.client_cores)
    ]
    return (
        f"| {processes} | {row.name} | {row.users} | {len(row.latencies)} | {row.per_second():.1f} | {p50} | {p99} "
        f"| {len(row.errors)} | {row.shed} | {lost} | {' | '.join(cores)} |"
    )


def scale_out(args: argparse.Namespace) -> None:
    """The table: for each process count and user count, writes then searches, flat out."""
    lines, errors = [], []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-scale-") as tmp, ExitStack() as services:
        work = Path(tmp)
        redis_url = services.enter_context(shared_redis(work))
        proxy: ProxyProcess | None = None
        if args.store == "cosmos":
            from tests.services.cosmos_server import local_cosmos_server

            cosmos = services.enter_context(local_cosmos_server())
            host, port = cosmos.endpoint.removeprefix("http://").split(":")
            proxy = services.enter_context(latency_proxy_process(host, int(port), args.latency_ms))
        for processes in args.processes:
            for users in args.users:
                principals = load_principals(users)
                tag = f"scale{processes}x{users}"
                env = tokens_env(principals, **server_overrides(args))
                where = work / tag
                with fleet(processes, where, env, redis_url, args.store, proxy) as running:
                    rows = anyio.run(_rows, running, principals, args, tag)
                    data_dir = running.data_dir
                if args.store == "sqlite":  # the file is counted once every process has let go of it
                    rows[0].row.lost = max(0, rows[0].acknowledged - count_turns(data_dir, tag))
                for phase in rows:
                    lines.append(_line(processes, phase))
                    print(lines[-1], file=sys.stderr)
                    where_ = f"{processes} processes, {users} users, {phase.row.name}"
                    if phase.row.errors:
                        errors.append(f"{where_}: first error: {phase.row.errors[0]}")
                    if phase.reconnects or phase.connect_errors:
                        errors.append(
                            f"{where_}: sessions started again {phase.reconnects}, "
                            f"failed connects {phase.connect_errors}"
                        )
    store = (
        "SQLite (one file)"
        if args.store == "sqlite"
        else f"local Cosmos-protocol server, +{args.latency_ms:g} ms each way"
    )
    print(
        f"\nscale-out: N `mcp-memory serve --transport http` processes behind nginx round-robin, Redis working "
        f"memory, long term {store}; MCP {args.protocol}; embedder {args.embedder}; {args.seconds:g} s a "
        f"phase after {args.warmup:g} s of warm-up;{' a new session on a 404;' if args.new_session_on_404 else ''} corpus: {'LoCoMo' if args.corpus else 'synthetic'}; "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n"
    )
    print(HEADER)
    print("\n".join(lines))
    for error in errors:
        print(f"- {error}")
