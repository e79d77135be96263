"""A team of users calling one server, measured row by row: the writes, searches and paced rows of
bench/load.py ("A team on one server" in docs/benchmarks.md), also run by bench/_scaleout.py
(load.py --processes) and bench/cosmos_scale.py. A Row is one phase's latencies, shed calls, errors and
cores at work; a Team is every user's connected client and the calls they make."""

from __future__ import annotations

import argparse
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.harness.data.corpus import locomo, queries, turns
from bench.harness.timing import own_cpu_seconds, process_cpu_seconds, quantiles
from tests.security.bearer import Credential, credential

LOAD_ENV = {
    "MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "100000",
    "MCP_MEMORY_SECURITY__REQUEST_BURST": "100000",
}


def load_principals(count: int) -> list[Credential]:
    return [credential(f"load{i:02d}") for i in range(count)]


@dataclass
class Row:
    """One phase: every call's latency (ms), the reads shed with 503, and any other failure."""

    name: str
    users: int
    latencies: list[float] = field(default_factory=list)
    shed: int = 0
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    lost: int | None = None
    server_cores: float | None = None
    client_cores: float | None = None

    def per_second(self) -> float:
        span = self.ended - self.started
        return len(self.latencies) / span if span > 0 else 0.0

    def line(self) -> str:
        p = quantiles(self.latencies) if self.latencies else {50: float("nan"), 99: float("nan")}
        lost = "" if self.lost is None else str(self.lost)
        cores = " | ".join("" if c is None else f"{c:.2f}" for c in (self.server_cores, self.client_cores))
        return (
            f"| {self.name} | {self.users} | {len(self.latencies)} | {self.per_second():.1f} | {p[50]:.1f} "
            f"| {p[99]:.1f} | {p[99] / p[50]:.1f}x | {self.shed} | {len(self.errors)} | {lost} | {cores} |"
        )


@asynccontextmanager
async def cores_at_work(row: Row, server_pid: int | Sequence[int] | None) -> AsyncIterator[None]:
    """Record in `row` the cores the server and the clients kept busy while the block ran."""
    began, server_began, own_began = time.perf_counter(), _cpu(server_pid), own_cpu_seconds()
    yield
    wall = time.perf_counter() - began
    server_ended = _cpu(server_pid)
    if server_began is not None and server_ended is not None:
        row.server_cores = (server_ended - server_began) / wall
    row.client_cores = (own_cpu_seconds() - own_began) / wall


def _cpu(pid: int | Sequence[int] | None) -> float | None:
    """One process's CPU seconds, or the sum of several's (the processes of bench/_scaleout.py)."""
    if pid is None or isinstance(pid, int):
        return None if pid is None else process_cpu_seconds(pid)
    return sum(process_cpu_seconds(one) or 0.0 for one in pid)


ROW_HEADER = (
    "| row | users | calls | calls/s | p50 ms | p99 ms | p99/p50 | shed (503) | errors | lost "
    "| server cores | client cores |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


async def timed(client: Any, row: Row, tool: str, arguments: dict[str, Any]) -> bool:
    """Call and record; True when the call succeeded."""
    began = time.perf_counter()
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as e:  # benchmark boundary: every failure is counted, the run goes on
        if "capacity" in str(e) or "503" in str(e):
            row.shed += 1
        else:
            row.errors.append(f"{tool}: {type(e).__name__}: {e}")
        return False
    if result.is_error:
        text = result.content[0].text if result.content else "error"
        if "capacity" in text:
            row.shed += 1
        else:
            row.errors.append(f"{tool}: {text[:300]}")
        return False
    row.latencies.append((time.perf_counter() - began) * 1000)
    return True


class Team:
    """Every user's connected client, and what each has written (for counting what was lost)."""

    def __init__(
        self,
        clients: list[Any],
        texts: list[str],
        questions: list[str],
        tag: str,
        server_pid: int | Sequence[int] | None,
    ) -> None:
        self.clients = clients
        self.server_pid = server_pid
        self.texts = texts
        self.questions = questions
        self.tag = tag
        self.acknowledged = 0

    def turn(self, user: int, n: int) -> dict[str, Any]:
        text = self.texts[(user * 7919 + n) % len(self.texts)]
        return {
            "thread_id": f"{self.tag}-{user}",
            "role": "user" if n % 2 == 0 else "assistant",
            "content": text,
        }

    def search(self, user: int, n: int) -> dict[str, Any]:
        return {"query": self.questions[(user * 104729 + n) % len(self.questions)], "limit": 10}

    async def flat_out(self, name: str, seconds: float, warmup: float) -> Row:
        """Every user calls flat out for `warmup` + `seconds`; the row counts the calls begun after the
        warm-up (every user's first calls load what later ones reuse: a steady state is measured)."""
        row, warming = Row(name, len(self.clients)), Row(name, len(self.clients))
        row.started = time.perf_counter() + warmup
        deadline = row.started + seconds

        async def one(user: int, client: Any) -> None:
            n = 0
            while (now := time.perf_counter()) < deadline:
                into = row if now >= row.started else warming
                if name == "writes":
                    ok = await timed(client, into, "add_turn", self.turn(user, n))
                    self.acknowledged += ok  # after the await: `+= await` read the count before the call
                else:
                    await timed(client, into, "search_memory", self.search(user, n))
                n += 1

        async def measured() -> None:
            await anyio.sleep(max(0.0, row.started - time.perf_counter()))
            async with cores_at_work(row, self.server_pid):
                await anyio.sleep(max(0.0, deadline - time.perf_counter()))

        async with anyio.create_task_group() as group:
            group.start_soon(measured)
            for user, client in enumerate(self.clients):
                group.start_soon(one, user, client)
        row.ended = time.perf_counter()
        row.shed += warming.shed
        row.errors += warming.errors
        return row

    async def paced(self, seconds: float) -> Row:
        """One call a second each, a turn then a search, users' first calls spread over the first second."""
        row = Row("paced team", len(self.clients))
        row.started = time.perf_counter()
        users = len(self.clients)

        async def one(user: int, client: Any) -> None:
            n = 0
            while True:
                at = row.started + user / users + n
                if at >= row.started + seconds:
                    return
                await anyio.sleep(max(0.0, at - time.perf_counter()))
                if n % 2 == 0:
                    ok = await timed(client, row, "add_turn", self.turn(user, 10_000 + n))
                    self.acknowledged += ok
                else:
                    await timed(client, row, "search_memory", self.search(user, n))
                n += 1

        async with cores_at_work(row, self.server_pid), anyio.create_task_group() as group:
            for user, client in enumerate(self.clients):
                group.start_soon(one, user, client)
        row.ended = row.started + seconds
        return row


async def one_user(client: Any, texts: list[str], questions: list[str], calls: int) -> tuple[Row, Row]:
    """Sequential add_turn then search_memory, a short pause between (as a person's agent calls)."""
    adding, searching = Row("one user: add_turn", 1), Row("one user: search_memory", 1)
    for n in range(10):  # warm up: the first calls load what later ones reuse
        await client.call_tool("add_turn", {"thread_id": "solo", "role": "user", "content": texts[n]})
        await client.call_tool("search_memory", {"query": questions[n], "limit": 10})
    adding.started = searching.started = time.perf_counter()
    for n in range(calls):
        arguments = {"thread_id": "solo", "role": "user", "content": texts[(n * 31 + 17) % len(texts)]}
        await timed(client, adding, "add_turn", arguments)
        await anyio.sleep(0.05)
        await timed(
            client,
            searching,
            "search_memory",
            {"query": questions[(n * 17 + 5) % len(questions)], "limit": 10},
        )
        await anyio.sleep(0.05)
    adding.ended = searching.ended = time.perf_counter()
    return adding, searching


def count_turns(data: Path, tag: str) -> int:
    """Turns of this run's threads in the stopped server's SQLite file."""
    with sqlite3.connect(data / "memory.db") as db:
        (count,) = db.execute(
            "SELECT COUNT(*) FROM memories WHERE type = 'turn' AND thread_id LIKE ?", (f"{tag}-%",)
        ).fetchone()
    return int(count)


def corpus(path: str | None) -> tuple[list[str], list[str]]:
    if path:
        texts, questions = locomo(path)
        return texts, questions
    return turns(5000), queries(500)


def server_overrides(args: argparse.Namespace) -> dict[str, str]:
    settings = dict(item.split("=", 1) for item in args.setting)
    return {
        **LOAD_ENV,
        "MCP_MEMORY_EMBEDDING__PROVIDER": args.embedder,
        "MCP_MEMORY_LOG_LEVEL": "WARNING",
        **settings,
    }
