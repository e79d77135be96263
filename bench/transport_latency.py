"""One cheap tool call, one client, over stdio, SSE and streamable HTTP: what each transport adds.

Starts the real `mcp-memory` command for each transport (temporary data dir, the hashing embedder so
the call itself costs little), connects the MCP SDK's own `Client`, warms up, then times --calls
sequential calls of a text-mode `search_memory` with limit 1 and prints p50/p95/p99 per transport.

    .venv/bin/python bench/transport_latency.py --calls 300

Prints a table; nothing is asserted.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.harness import cli  # noqa: E402
from bench.harness.server import http as serve_over_network  # noqa: E402
from bench.harness.timing import percentile  # noqa: E402
from tests.services.server_process import StdioServer, server_env  # noqa: E402

WARMUP = 20
CALL = ("search_memory", {"query": "budget for the trip", "limit": 1, "mode": "text"})


async def timed_calls(client: Client, calls: int) -> list[float]:
    await client.call_tool(
        "add_turn", {"thread_id": "bench", "role": "user", "content": "Our budget is 10000."}
    )
    for _ in range(WARMUP):
        await client.call_tool(*CALL)
    latencies = []
    for _ in range(calls):
        began = time.perf_counter()
        result = await client.call_tool(*CALL)
        latencies.append((time.perf_counter() - began) * 1000)
        if result.is_error:
            raise SystemExit(f"the call failed: {result.content}")
    return sorted(latencies)


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    overrides = {"MCP_MEMORY_EMBEDDING__PROVIDER": "hash", "MCP_MEMORY_LOG_LEVEL": "WARNING"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-transport-bench-") as scratch:
        workdir = Path(scratch)
        for transport in ("stdio", "sse", "http"):
            env = server_env(workdir / transport / "data", overrides)
            if transport == "stdio":
                stdio = StdioServer(workdir / transport, env, in_process=True)  # relayed: bench/relay.py
                try:
                    latencies = anyio.run(_over, stdio.connect(), args.calls)
                finally:
                    stdio.close()
            else:
                with serve_over_network(workdir / transport, env, transport) as server:
                    latencies = anyio.run(_over, server.connect(), args.calls)
            rows.append((transport, latencies))
            print(f"{transport}: p50 {percentile(latencies, 0.5):.2f} ms", file=sys.stderr)
    stdio_p50 = percentile(rows[0][1], 0.5)
    print(
        f"\n{args.calls} sequential calls of search_memory (text mode, limit 1) per transport, the MCP SDK's "
        f"Client; {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n"
    )
    print("| transport | p50 ms | p95 ms | p99 ms | p50 minus stdio's |\n|---|---:|---:|---:|---:|")
    for transport, latencies in rows:
        p50 = percentile(latencies, 0.5)
        print(
            f"| {transport} | {p50:.2f} | {percentile(latencies, 0.95):.2f} | {percentile(latencies, 0.99):.2f} "
            f"| {p50 - stdio_p50:+.2f} |"
        )


async def _over(client: Client, calls: int) -> list[float]:
    async with client:
        return await timed_calls(client, calls)


if __name__ == "__main__":
    main()
