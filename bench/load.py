"""Bounded load over streamable HTTP on loopback: N clients, each its own principal with its own bearer
token, for a fixed time against the real `mcp-memory serve --transport http` process. Each client loops
add_turn on its own thread, with a search_memory every third call and a get_working_memory every fifth.

    .venv/bin/python bench/load.py                      # the full form: 32 clients for 60 s
    .venv/bin/python bench/load.py --clients 8 --seconds 20 --embedder local

Prints errors (must be 0: the exit code is 1 otherwise) and latency percentiles per tool. The CI form
(32 clients, ~10 s) is tests/integration/test_load.py, which calls run_load() below. The per-principal
rate limit is raised for the run (MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND): the figures measure the
server, not the limiter (tests/security/test_limits.py covers that).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
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


async def _client(server: NetworkServer, who: Credential, deadline: float, report: LoadReport) -> None:
    async with bearer_client(server, who.token) as client:
        n = 0
        while time.monotonic() < deadline:
            n += 1
            if n % 5 == 0:
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--embedder", choices=["hash", "local"], default="hash")
    args = parser.parse_args()
    principals = load_principals(args.clients)
    with tempfile.TemporaryDirectory(prefix="mcp-memory-load-") as tmp:
        work = Path(tmp)
        env = server_env(work / "data", tokens_env(principals, **LOAD_ENV))
        env["MCP_MEMORY_EMBEDDING__PROVIDER"] = args.embedder
        env["MCP_MEMORY_LOG_LEVEL"] = "WARNING"
        server = NetworkServer("http", work, env)
        server.start()
        try:
            report = anyio.run(run_load, server, principals, args.seconds)
        finally:
            server.stop()
    print(
        f"{platform.processor() or platform.machine()}, {platform.python_version()}, embedder={args.embedder}"
    )
    print(report.summary())
    raise SystemExit(1 if report.errors else 0)


if __name__ == "__main__":
    main()
