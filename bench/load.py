"""Load over streamable HTTP on loopback, measured as a team's clients would: the real
`mcp-memory serve --transport http` process, every user its own static bearer token and MCP session,
one call at a time each, for a bounded time.

The four rows of the throughput table in docs/benchmarks.md ("A team on one server"), for each user count (--users, default 1 8 32):
- writes: every user adds turns to their own thread flat out (turns/s, p50, p99, shed, lost: turns
  acknowledged but not in the store afterwards, counted in the SQLite file once the server stopped);
- searches: every user searches flat out over what was written (searches/s, p50, p99, shed: reads
  answered 503 with Retry-After by admission, mcp/middleware/admission.py);
- paced team: every user makes one call a second (a turn, then a search), starts spread over the
  first second (p50, p99);
- one user (once): sequential add_turn and search_memory over HTTP, and the same calls through the
  in-process MCP client on the same kind of store, for what the HTTP path adds.

    .venv/bin/python bench/load.py                                  # 1 8 32 users, 10 s a phase
    .venv/bin/python bench/load.py --users 32 --seconds 20 --corpus ../shared/data/locomo/locomo_dev.json
    .venv/bin/python bench/load.py --mixed --clients 8 --seconds 20 --embedder hash   # the older mix
    .venv/bin/python bench/load.py --processes 1 2 4 --users 32 --protocol 2026   # behind nginx: _scaleout.py

Flat-out phases run --warmup seconds (2) before they are counted: every user's first calls load their
indexes and threads, and 32 first calls land at once; the rows give the steady state that follows.
Each row also says how many of the machine's cores were at work: the server process's CPU seconds and
this process's (every user's client) over the row's wall time, read from /proc (Linux; blank elsewhere).

Texts and questions are LoCoMo's when --corpus names its file (read where it is, never copied), else the
synthetic corpus of bench/_corpus.py. Prints tables; nothing is asserted. The per-principal rate limit
is lifted (MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND): the figures measure the server, not the limiter.
`--mixed` runs the older mixed loop (add_turn, a search every third call, get_working_memory every
fifth), whose CI form is tests/integration/test_load.py (run_load() below).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _corpus import locomo, queries, turns  # noqa: E402

from tests.security.bearer import Credential, bearer_client, credential, tokens_env  # noqa: E402
from tests.services.server_process import NetworkServer, server_env  # noqa: E402

LOAD_ENV = {
    "MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "100000",
    "MCP_MEMORY_SECURITY__REQUEST_BURST": "100000",
}


@dataclass
class LoadReport:
    clients: int
    seconds: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    def summary(self) -> str:
        lines = [
            f"load: {self.clients} clients x {self.seconds:.1f} s over streamable HTTP (loopback), "
            f"{self.calls} calls, {self.calls / self.seconds:.1f} calls/s, errors={len(self.errors)}",
            f"{'tool':<20}{'calls':>7}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}",
        ]
        everything = [x for v in self.latencies.values() for x in v]
        for name, values in [*sorted(self.latencies.items()), ("all", everything)]:
            if values:
                p = _percentiles(values)
                lines.append(
                    f"{name:<20}{len(values):>7}{p[50]:>9.1f}{p[90]:>9.1f}{p[99]:>9.1f}{max(values):>9.1f}"
                )
        if self.errors:
            lines.append(f"first error: {self.errors[0]}")
        return "\n".join(lines)


def _percentiles(values: list[float]) -> dict[int, float]:
    if len(values) == 1:
        return {50: values[0], 90: values[0], 99: values[0]}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {50: cuts[49], 90: cuts[89], 99: cuts[98]}


ROUND = 5  # calls n = 1..5 of a client make every kind once (add_turn, search_memory, get_working_memory)


async def _client(server: NetworkServer, who: Credential, deadline: float, report: LoadReport) -> None:
    """Calls until the deadline, and at least one round of every kind however slow the machine is (a
    loaded machine may give a client fewer than five calls in the time: the mix is then still whole)."""
    async with bearer_client(server, who.token) as client:
        n = 0
        while time.monotonic() < deadline or n < ROUND:
            n += 1
            if n % ROUND == 0:
                name, arguments = "get_working_memory", {"thread_id": "load", "recent": 10}
            elif n % 3 == 0:
                name, arguments = "search_memory", {"query": f"rope length {n % 7}", "limit": 5}
            else:
                content = f"Turn {n} of {who.user_id}: the rope is {n % 7 * 10} metres, the guide says so."
                name, arguments = "add_turn", {"thread_id": "load", "role": "user", "content": content}
            started = time.perf_counter()
            try:
                result = await client.call_tool(name, arguments)
            except Exception as e:
                report.errors.append(f"{name}: {type(e).__name__}: {e}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                report.errors.append(f"{name}: {result.content[0].text[:300]}")  # type: ignore[union-attr]
            else:
                report.latencies[name].append(elapsed)


async def run_load(server: NetworkServer, principals: list[Credential], seconds: float) -> LoadReport:
    """Every principal runs one client until `seconds` have passed; returns what they saw."""
    report = LoadReport(clients=len(principals), seconds=seconds)
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for who in principals:
            group.start_soon(_client, server, who, deadline, report)
    report.seconds = time.monotonic() - started
    return report


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
        p = _percentiles(self.latencies) if self.latencies else {50: float("nan"), 99: float("nan")}
        lost = "" if self.lost is None else str(self.lost)
        cores = " | ".join("" if c is None else f"{c:.2f}" for c in (self.server_cores, self.client_cores))
        return (
            f"| {self.name} | {self.users} | {len(self.latencies)} | {self.per_second():.1f} | {p[50]:.1f} "
            f"| {p[99]:.1f} | {p[99] / p[50]:.1f}x | {self.shed} | {len(self.errors)} | {lost} | {cores} |"
        )


def process_cpu_seconds(pid: int) -> float | None:
    """A process's CPU seconds (user + system, every thread), from /proc; None where there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


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


async def _timed(client: Any, row: Row, tool: str, arguments: dict[str, Any]) -> bool:
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
                    ok = await _timed(client, into, "add_turn", self.turn(user, n))
                    self.acknowledged += ok  # after the await: `+= await` read the count before the call
                else:
                    await _timed(client, into, "search_memory", self.search(user, n))
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
                    ok = await _timed(client, row, "add_turn", self.turn(user, 10_000 + n))
                    self.acknowledged += ok
                else:
                    await _timed(client, row, "search_memory", self.search(user, n))
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
        await _timed(client, adding, "add_turn", arguments)
        await anyio.sleep(0.05)
        await _timed(
            client,
            searching,
            "search_memory",
            {"query": questions[(n * 17 + 5) % len(questions)], "limit": 10},
        )
        await anyio.sleep(0.05)
    adding.ended = searching.ended = time.perf_counter()
    return adding, searching


async def in_process(
    data: Path, env: dict[str, str], texts: list[str], questions: list[str], calls: int
) -> tuple[Row, Row]:
    """The one-user calls through the SDK's in-process client: the same server code, no HTTP."""
    from mcp import Client

    from mcp_memory.config import Settings
    from mcp_memory.mcp.server import build_server

    for name, value in env.items():
        os.environ[name] = value
    os.environ["MCP_MEMORY_DATA_DIR"] = str(data)
    async with Client(build_server(Settings())) as client:
        adding, searching = await one_user(client, texts, questions, calls)
    adding.name, searching.name = "in process: add_turn", "in process: search_memory"
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


async def team_rows(
    server: NetworkServer, principals: list[Credential], args: argparse.Namespace, tag: str
) -> tuple[list[Row], Team]:
    texts, questions = corpus(args.corpus)
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(bearer_client(server, who.token)) for who in principals]
        team = Team(clients, texts, questions, tag, server.pid)
        rows = [await team.flat_out("writes", args.seconds, args.warmup)]
        await anyio.sleep(args.settle)  # the writes' vectors, as a team's pause would let them finish
        rows.append(await team.flat_out("searches", args.seconds, args.warmup))
        rows.append(await team.paced(args.seconds))
        if len(principals) == 1:
            rows += await one_user(clients[0], texts, questions, args.calls)
    return rows, team


def server_overrides(args: argparse.Namespace) -> dict[str, str]:
    settings = dict(item.split("=", 1) for item in args.setting)
    return {
        **LOAD_ENV,
        "MCP_MEMORY_EMBEDDING__PROVIDER": args.embedder,
        "MCP_MEMORY_LOG_LEVEL": "WARNING",
        **settings,
    }


@contextmanager
def serving(principals: list[Credential], args: argparse.Namespace) -> Iterator[NetworkServer]:
    """The real server over streamable HTTP on a scratch data dir (removed after the block), these users'
    tokens configured."""
    with tempfile.TemporaryDirectory(prefix="mcp-memory-load-") as tmp:
        work = Path(tmp)
        env = server_env(work / "data", tokens_env(principals, **server_overrides(args)))
        server = NetworkServer("http", work, env)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def four_rows(args: argparse.Namespace) -> None:
    lines = []
    for users in args.users:
        principals = load_principals(users)
        tag = f"load{users}"
        with serving(principals, args) as server:
            rows, team = anyio.run(team_rows, server, principals, args, tag)
            server.stop()  # the file is counted once the server has let go of it
            stored = count_turns(server.workdir / "data", tag)
            writes = rows[0]
            writes.lost = max(0, team.acknowledged - stored)
        for row in rows:
            lines.append(row.line())
            print(lines[-1], file=sys.stderr)
            if row.errors:
                print(f"  first error: {row.errors[0]}", file=sys.stderr)
    if 1 in args.users:
        texts, questions = corpus(args.corpus)
        with tempfile.TemporaryDirectory(prefix="mcp-memory-load-") as tmp:
            solo = anyio.run(
                in_process, Path(tmp) / "data", server_overrides(args), texts, questions, args.calls
            )
        lines += [row.line() for row in solo]
    print(
        f"\nstreamable HTTP on loopback, every user its own token; embedded store (SQLite), embedder "
        f"{args.embedder}; {args.seconds:g} s a phase (flat out: after {args.warmup:g} s of warm-up); corpus: {'LoCoMo' if args.corpus else 'synthetic'}; "
        f"{''.join(f'{item}; ' for item in args.setting)}{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}\n"
    )
    print(ROW_HEADER)
    print("\n".join(lines))


def mixed(args: argparse.Namespace) -> None:
    principals = load_principals(args.clients)
    with serving(principals, args) as server:
        report = anyio.run(run_load, server, principals, args.seconds)
    print(
        f"{platform.processor() or platform.machine()}, {platform.python_version()}, embedder={args.embedder}"
    )
    print(report.summary())
    raise SystemExit(1 if report.errors else 0)


def main() -> None:
    from _scaleout import add_arguments as scale_arguments  # imports this module: not at the top
    from _scaleout import scale_out

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=10.0, help="each phase's length")
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="flat-out phases: seconds run first and not counted"
    )
    parser.add_argument("--calls", type=int, default=200, help="one user's calls of each tool")
    parser.add_argument("--settle", type=float, default=5.0, help="pause after the writes (seconds)")
    parser.add_argument("--corpus", help="LoCoMo's locomo_dev.json: real texts and questions")
    parser.add_argument("--embedder", choices=["hash", "local"], default="local")
    parser.add_argument(
        "--setting", action="append", default=[], metavar="NAME=VALUE", help="a server setting (repeatable)"
    )
    parser.add_argument("--mixed", action="store_true", help="the older mixed loop instead")
    parser.add_argument("--clients", type=int, default=32, help="--mixed: clients")
    scale_arguments(parser)
    args = parser.parse_args()
    if bad := [item for item in args.setting if not item.startswith("MCP_MEMORY_") or "=" not in item]:
        parser.error(f"--setting takes MCP_MEMORY_NAME=VALUE; got {', '.join(bad)}")
    if args.processes:
        scale_out(args)
    elif args.mixed:
        mixed(args)
    else:
        four_rows(args)


if __name__ == "__main__":
    main()
