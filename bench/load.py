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
synthetic corpus of bench/harness/data/corpus.py. Prints tables; nothing is asserted. The per-principal rate limit
is lifted (MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND): the figures measure the server, not the limiter.
`--mixed` runs the older mixed loop (add_turn, a search every third call, get_working_memory every
fifth), whose CI form is tests/integration/test_load.py (run_load() below).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._scaleout import add_arguments as scale_arguments
from bench._scaleout import scale_out
from bench._team import (
    LOAD_ENV,
    ROW_HEADER,
    Row,
    Team,
    corpus,
    count_turns,
    load_principals,
    one_user,
    server_overrides,
)
from bench.harness import cli
from bench.harness.server import http as serve_over_network
from bench.harness.timing import quantiles
from tests.security.bearer import Credential, bearer_client, tokens_env
from tests.services.server_process import NetworkServer, server_env

__all__ = ["LOAD_ENV", "load_principals", "run_load"]  # what tests/integration/test_load.py imports


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
                p = quantiles(values)
                lines.append(
                    f"{name:<20}{len(values):>7}{p[50]:>9.1f}{p[90]:>9.1f}{p[99]:>9.1f}{max(values):>9.1f}"
                )
        if self.errors:
            lines.append(f"first error: {self.errors[0]}")
        return "\n".join(lines)


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


@contextmanager
def serving(principals: list[Credential], args: argparse.Namespace) -> Iterator[NetworkServer]:
    """The real server over streamable HTTP on a scratch data dir (removed after the block), these users'
    tokens configured."""
    with tempfile.TemporaryDirectory(prefix="mcp-memory-load-") as tmp:
        work = Path(tmp)
        env = server_env(work / "data", tokens_env(principals, **server_overrides(args)))
        with serve_over_network(work, env) as server:
            yield server


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
    parser = cli.parser(__doc__)
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
