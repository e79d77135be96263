"""Writers flat out through the real server on the local Cosmos-protocol server, 1 and 2 replicas, with
the audit trail on and off: what the audit chain (one chain for every replica, storage/cosmos/audit.py)
costs a team's turns, and whether a second replica adds throughput.

    .venv/bin/python bench/cosmos_scale.py                                  # 16 users, 15 s a phase
    .venv/bin/python bench/cosmos_scale.py --replicas 1 2 --users 16 --seconds 15 --latency-ms 4
    .venv/bin/python bench/cosmos_scale.py --keep-alive      # connections kept open, as on Azure

For each replica count and audit setting: fresh processes (`mcp-memory serve --transport http`, behind
nginx round-robin, Redis working memory: bench/harness/fleet.py) on a fresh database of one local
@vercel/cosmosdb-server, reached through a loopback proxy that delays every chunk --latency-ms each
way (tests/services/latency_proxy.py; a server and its database in one region are a few ms apart).
Every user has their own token and calls add_turn one at a time, flat out; even-numbered users write
to their personal memory, odd-numbered ones to one of two shared spaces they are writers of, so the
writes go to personal ledgers and to spaces alike. --warmup seconds (3) are run first and not counted.

Each row: turns/s (turns acknowledged within the counted window, per second), p50 and p99 (of the
turns begun in it), errors; the server processes' CPU ms per add_turn (user + system, from
/proc, over the counted window); HTTP requests the proxy forwarded to Cosmos per add_turn; the local
Cosmos server's and the proxy's cores (on 2 cores they compete with ours); the audit chain's retries
when the server exports a counter of them (`mcp_memory_audit_*retr*_total` or `*conflict*_total`
on /metrics of each process, summed, over the counted window), else n/a. Then the ratio audit on / off per replica count. Nothing is asserted.

The local server is not Azure: its time per request is its own (one Node process, on the same cores),
it charges no RUs and has no transactional batch; the proxy's delay stands in for the network, not
for the service's own time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._scaleout import UserClient
from bench._team import LOAD_ENV, Row, timed
from bench.harness import cli
from bench.harness.data.corpus import turns
from bench.harness.fleet import Fleet, cpu_seconds, fleet, scrape, shared_redis
from bench.harness.timing import quantiles
from tests.security.bearer import Credential, credential, tokens_env
from tests.services.cosmos_server import local_cosmos_server
from tests.services.latency_proxy import ProxyProcess, latency_proxy_process

SPACES = ("team-a", "team-b")
AUDIT_METRICS = "mcp_memory_audit_"


def where_to_write(user: int) -> str | None:
    """Even users: their own memory; odd users: one of the two spaces, alternately."""
    return None if user % 2 == 0 else SPACES[(user // 2) % 2]


def spaces_setting(principals: list[Credential]) -> str:
    spaces = [
        {
            "name": name,
            "members": {p.user_id: "writer" for i, p in enumerate(principals) if where_to_write(i) == name},
        }
        for name in SPACES
    ]
    return json.dumps([space for space in spaces if space["members"]])


@dataclass
class Result:
    replicas: int
    audit: bool
    row: Row
    cpu_ms_per_turn: float = float("nan")
    requests_per_turn: float = float("nan")
    chain_retries: float | str = "n/a"
    turns_per_second: float = 0.0  # turns completed in the counted window / its length
    backend_cores: float = float("nan")  # the local Cosmos server and the proxy, CPU s per s

    def line(self) -> str:
        p = quantiles(self.row.latencies) if self.row.latencies else {50: float("nan"), 99: float("nan")}
        retries = self.chain_retries if isinstance(self.chain_retries, str) else f"{self.chain_retries:g}"
        return (
            f"| {self.replicas} | {'on' if self.audit else 'off'} | {self.row.users} | {len(self.row.latencies)} "
            f"| {self.turns_per_second:.1f} | {p[50]:.1f} | {p[99]:.1f} | {len(self.row.errors)} "
            f"| {self.cpu_ms_per_turn:.1f} | {self.requests_per_turn:.1f} | {retries} | {self.backend_cores:.2f} |"
        )


def _chain_retries(running: Fleet, metrics_token: str) -> float | str:
    """The audit chain's retries (or conflicts) counted by every process, or why there is no figure."""
    scraped = [scrape(server, metrics_token, AUDIT_METRICS) for server in running.servers]
    if any(samples is None for samples in scraped):
        return "n/a (/metrics unreadable)"
    counted = [
        value
        for samples in scraped
        for name, value in (samples or {}).items()
        if "_total" in name and ("retr" in name or "conflict" in name)
    ]
    return sum(counted) if counted else "n/a"


async def writers(
    running: Fleet,
    principals: list[Credential],
    metrics_token: str,
    args: argparse.Namespace,
    result: Result,
    backend_pids: list[int],
) -> None:
    """Every user adds turns flat out; the window after the warm-up is counted."""
    texts = turns(2000)
    row, warming = result.row, Row("warm-up", len(principals))
    clients = [UserClient(running.url, who, "2026") for who in principals]
    row.started = time.perf_counter() + args.warmup
    deadline = row.started + args.seconds
    completed = 0  # turns acknowledged so far, whenever they began: the window counts what it finished

    async def one(user: int, client: UserClient) -> None:
        nonlocal completed
        n, space = 0, where_to_write(user)
        while (now := time.perf_counter()) < deadline:
            arguments = {
                "thread_id": f"scale-{user}-{n // 50}",
                "role": "user" if n % 2 == 0 else "assistant",
                "content": texts[(user * 7919 + n) % len(texts)],
                **({"space": space} if space else {}),
            }
            ok = await timed(client, row if now >= row.started else warming, "add_turn", arguments)
            completed += (
                ok  # not `+= await`: that reads the count before the call and loses the others' updates
            )
            n += 1

    async def measured() -> None:
        assert running.proxy is not None
        await anyio.sleep(max(0.0, row.started - time.perf_counter()))
        cpu, requests = cpu_seconds(running.server_pids), running.proxy.counts().requests
        backend = cpu_seconds(backend_pids)
        retries = await anyio.to_thread.run_sync(_chain_retries, running, metrics_token)
        count, began = completed, time.perf_counter()
        await anyio.sleep(max(0.0, deadline - time.perf_counter()))
        cpu, requests = cpu_seconds(running.server_pids) - cpu, running.proxy.counts().requests - requests
        done = max(1, completed - count)
        wall = time.perf_counter() - began
        result.turns_per_second = (completed - count) / wall
        result.backend_cores = (cpu_seconds(backend_pids) - backend) / wall
        result.cpu_ms_per_turn = cpu * 1000 / done
        result.requests_per_turn = requests / done
        after = await anyio.to_thread.run_sync(_chain_retries, running, metrics_token)
        if isinstance(after, str) or isinstance(retries, str):
            result.chain_retries = after if isinstance(after, str) else str(retries)
        else:
            result.chain_retries = after - retries

    async with anyio.create_task_group() as holders:
        for client in clients:
            holders.start_soon(client.hold)
        async with anyio.create_task_group() as group:
            group.start_soon(measured)
            for user, client in enumerate(clients):
                group.start_soon(one, user, client)
        for client in clients:
            client.close()
    row.ended = time.perf_counter()
    row.errors += warming.errors


def run(args: argparse.Namespace) -> list[Result]:
    principals = [credential(f"writer{i:02d}") for i in range(args.users)]
    watcher = credential("metrics-reader", "metrics")
    results = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-cosmos-scale-") as tmp, ExitStack() as services:
        work = Path(tmp)
        redis_url = services.enter_context(shared_redis(work))
        cosmos = services.enter_context(local_cosmos_server(keep_alive=args.keep_alive))
        host, port = cosmos.endpoint.removeprefix("http://").split(":")
        proxy: ProxyProcess = services.enter_context(latency_proxy_process(host, int(port), args.latency_ms))
        backend_pids = [proxy.process.pid, *([cosmos.process.pid] if cosmos.process else [])]
        for replicas in args.replicas:
            for audit in (False, True):
                env = tokens_env(
                    [*principals, watcher],
                    **LOAD_ENV,
                    MCP_MEMORY_EMBEDDING__PROVIDER=args.embedder,
                    MCP_MEMORY_LOG_LEVEL="WARNING",
                    MCP_MEMORY_AUDIT__ENABLED=str(audit).lower(),
                    MCP_MEMORY_SECURITY__SPACES=spaces_setting(principals),
                    **cli.settings(args.setting),
                )
                result = Result(replicas, audit, Row("writes", args.users))
                where = work / f"r{replicas}-audit-{audit}"
                with fleet(replicas, where, env, redis_url, "cosmos", proxy) as running:
                    anyio.run(writers, running, principals, watcher.token, args, result, backend_pids)
                print(result.line(), file=sys.stderr)
                if result.row.errors:
                    print(f"  first error: {result.row.errors[0]}", file=sys.stderr)
                results.append(result)
    return results


def report(results: list[Result], args: argparse.Namespace) -> None:
    print(
        f"\nwriters flat out: {args.users} users (half personal, half in {len(SPACES)} spaces), add_turn "
        f"over streamable HTTP (MCP 2026) through nginx round-robin; Redis working memory; long term the "
        f"local Cosmos-protocol server (@vercel/cosmosdb-server, connections {'kept open' if args.keep_alive else 'closed after each request'}) +{args.latency_ms:g} ms each way; embedder "
        f"{args.embedder}; {args.seconds:g} s counted after {args.warmup:g} s; "
        f"{''.join(f'{item}; ' for item in args.setting)}{platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}\n"
    )
    print(
        "| replicas | audit | users | turns | turns/s | p50 ms | p99 ms | errors | server CPU ms / add_turn "
        "| Cosmos requests / add_turn | audit chain retries | local Cosmos + proxy cores |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for result in results:
        print(result.line())
    print()
    for replicas in args.replicas:
        by_audit = {r.audit: r.turns_per_second for r in results if r.replicas == replicas}
        if by_audit.get(False):
            print(f"- {replicas} replica(s): audit on / off = {by_audit[True] / by_audit[False]:.2f}")
    for result in results:
        if result.row.errors:
            print(
                f"- {result.replicas} replica(s), audit {result.audit}: first error: {result.row.errors[0]}"
            )


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=15.0, help="each phase's counted length")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds run first and not counted")
    parser.add_argument(
        "--latency-ms", type=float, default=4.0, help="added each way between server and Cosmos"
    )
    parser.add_argument("--embedder", choices=["hash", "local"], default="hash")
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="the local server keeps connections open, as Azure does (by default it closes each one)",
    )
    parser.add_argument(
        "--setting", action="append", default=[], metavar="NAME=VALUE", help="a server setting (repeatable)"
    )
    args = parser.parse_args()
    if bad := [item for item in args.setting if not item.startswith("MCP_MEMORY_") or "=" not in item]:
        parser.error(f"--setting takes MCP_MEMORY_NAME=VALUE; got {', '.join(bad)}")
    report(run(args), args)


if __name__ == "__main__":
    main()
