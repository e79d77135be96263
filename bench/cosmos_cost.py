"""What a call costs us on Cosmos DB: HTTP requests and our own CPU per add_turn, search_memory and
remember, through the service, on the local Cosmos-protocol server (issue 49).

    .venv/bin/python bench/cosmos_cost.py                          # this tree
    .venv/bin/python bench/cosmos_cost.py --against /tmp/base-cost  # and another tree, same sitting

One server (@vercel/cosmosdb-server, as the tests start it, answering with keep-alive as Azure does;
--close for its default of one connection per request) serves every run. Each run is a child process
that imports mcp_memory from its tree (this one, or --against's), opens a service with long-term memory
on the server and working memory in a temporary SQLite file, writes a first turn for each of --users
users (their usage item, thread entry and counters exist from then on), then times --turns add_turn
calls round the users, half as many searches and half as many remembers, with the audit trail off and
on. The runs alternate trees and audit settings (--rounds of them), and each figure is the median of its
rounds, so both trees see the same machine.

Per call: Cosmos HTTP requests (counted at the SDK's transport, by kind) and CPU ms of the process
(time.process_time, every thread: background work a call starts, such as its learning counter, counts;
so does the rewriting of search SQL below, a JSON parse of each search query, the same for both trees).
The server has no FullTextScore or VectorDistance: a search's SQL is rewritten at the transport (those
orderings by created_at, the vector's score a constant), so its requests are what Azure gets and its
answers are not ranked. Nothing is asserted; figures depend on the machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# Appended, not first: a run on another tree (PYTHONPATH, --against) imports that tree's mcp_memory.
sys.path.append(str(Path(__file__).resolve().parents[1]))
from bench.harness import cli

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OPERATIONS = ("add_turn", "search_memory", "remember")
_UNSUPPORTED = (  # the local server's stand-ins for the search functions it lacks
    (re.compile(r"VectorDistance\(c\.embedding, @vector\) AS score"), "0.5 AS score"),
    (re.compile(r"ORDER BY VectorDistance\(c\.embedding, @vector\)"), "ORDER BY c.created_at DESC"),
    (re.compile(r"FullTextContainsAny\(c\.index_text[^)]*\)"), "IS_DEFINED(c.index_text)"),
    (re.compile(r"ORDER BY RANK FullTextScore\(c\.index_text[^)]*\)"), "ORDER BY c.created_at DESC"),
)


# -- the child: one tree, one audit setting --------------------------------------------------------------


def _count_requests(counts: collections.Counter[str]) -> None:
    """Count every request the Cosmos SDK sends, by kind, and rewrite search SQL the server lacks."""
    from azure.core.pipeline.transport import AioHttpTransport

    send = AioHttpTransport.send

    async def counted(self: Any, request: Any, **kwargs: Any) -> Any:
        headers = {k.lower(): v for k, v in request.headers.items()}
        if headers.get("x-ms-documentdb-isquery", "").lower() == "true":
            counts["query"] += 1
            raw = request.body if isinstance(request.body, str) else bytes(request.body).decode()
            if "VectorDistance" in raw or "FullText" in raw:  # parsed only then: the bench's own CPU
                body = json.loads(raw)
                sql = body["query"]
                for pattern, stand_in in _UNSUPPORTED:
                    sql = pattern.sub(stand_in, sql)
                request.set_json_body({**body, "query": sql})
        elif headers.get("x-ms-documentdb-is-upsert", "").lower() == "true":
            counts["upsert"] += 1
        else:
            counts[{"POST": "create", "PUT": "replace"}.get(request.method, request.method.lower())] += 1
        return await send(self, request, **kwargs)

    AioHttpTransport.send = counted  # type: ignore[method-assign]


async def _child(endpoint: str, key: str, audited: bool, users: int, turns: int) -> dict[str, Any]:
    from pydantic import SecretStr

    from bench.harness.data.corpus import queries
    from bench.harness.data.corpus import turns as corpus_turns
    from mcp_memory.config import AuditSettings, CosmosSettings, LongTermSettings, Settings
    from mcp_memory.search.query import SearchQuery
    from mcp_memory.service.assembly import open_service

    counts: collections.Counter[str] = collections.Counter()
    _count_requests(counts)
    texts, asked = corpus_turns(max(turns, 1)), queries(max(turns, 1))
    cosmos = CosmosSettings(
        endpoint=endpoint,
        key=SecretStr(key),
        database=f"cost_{uuid.uuid4().hex[:10]}",
        endpoint_discovery=False,
    )
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            user_id="bench",
            data_dir=Path(tmp),
            long_term=LongTermSettings(backend="cosmos", cosmos=cosmos),
            audit=AuditSettings(enabled=audited),
        )
        settings = settings.model_copy(
            update={"embedding": settings.embedding.model_copy(update={"provider": "hash"})}
        )
        async with open_service(settings) as service:
            learning: Any = service.learning

            async def timed(calls: int, call: Callable[[int], Awaitable[object]]) -> dict[str, Any]:
                counts.clear()
                cpu, wall = time.process_time(), time.perf_counter()
                for i in range(calls):
                    await call(i)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                return {
                    "requests": sum(counts.values()) / calls,
                    "kinds": {k: v / calls for k, v in counts.most_common()},
                    "cpu_ms": 1000 * cpu / calls,
                    "wall_ms": 1000 * wall / calls,
                }

            def user(i: int) -> str:
                return f"user-{i % users}"

            async def add_turn(i: int) -> None:
                await service.add_turn(user(i), "chat", "user", texts[i % len(texts)])

            async def search(i: int) -> None:
                query = SearchQuery.of(user(i), asked[i % len(asked)], settings=service.settings)
                await service.search(query)

            async def remember(i: int) -> None:
                await learning.editor.remember(user(i), f"The user's preference number {i} is tea.")

            await timed(users, add_turn)  # each user's first turn: items that exist from then on
            return {
                "add_turn": await timed(turns, add_turn),
                "search_memory": await timed(max(turns // 2, 1), search),
                "remember": await timed(max(turns // 2, 1), remember),
            }


# -- the parent: the server, the runs, the table ---------------------------------------------------------


def _run(tree: Path, endpoint: str, key: str, audited: bool, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        endpoint,
        key,
        "on" if audited else "off",
        "--users",
        str(args.users),
        "--turns",
        str(args.turns),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the run on {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _median(runs: list[dict[str, Any]], operation: str, figure: str) -> float:
    return statistics.median(r[operation][figure] for r in runs)


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--against", type=Path, help="another tree (e.g. a worktree of main) to run beside")
    parser.add_argument("--turns", type=int, default=200, help="add_turn calls per run (half as many others)")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--close", action="store_true", help="the server closes every connection")
    parser.add_argument("--child", nargs=3, metavar=("ENDPOINT", "KEY", "AUDIT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import anyio

        endpoint, key, audit = args.child
        result = anyio.run(_child, endpoint, key, audit == "on", args.users, args.turns)
        print(json.dumps(result))
        return

    sys.path.insert(0, str(REPO))
    from tests.services.cosmos_server import local_cosmos_server

    trees = {"this": REPO, **({"against": args.against.resolve()} if args.against else {})}
    runs: dict[tuple[str, bool], list[dict[str, Any]]] = collections.defaultdict(list)
    with local_cosmos_server(keep_alive=not args.close) as server:
        for r in range(args.rounds):
            order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
            for name, tree in order:
                for audited in (False, True):
                    runs[(name, audited)].append(_run(tree, server.endpoint, server.key, audited, args))
    connection = "a new connection per request" if args.close else "keep-alive"
    print(f"Cosmos cost per call: local server ({connection}), {args.users} users, {args.turns} turns a run,")
    print(f"median of {args.rounds} rounds; requests = Cosmos HTTP requests, cpu = our process's CPU ms")
    for audited in (False, True):
        print(f"\naudit trail {'on' if audited else 'off'}")
        header = f"{'operation':<15}" + "".join(f"{name + ' req':>13}{name + ' cpu':>13}" for name in trees)
        print(header + ("  cpu against/this  req against/this" if len(trees) == 2 else ""))
        for operation in OPERATIONS:
            line = f"{operation:<15}"
            for name in trees:
                found = runs[(name, audited)]
                line += f"{_median(found, operation, 'requests'):>13.2f}{_median(found, operation, 'cpu_ms'):>13.1f}"
            if len(trees) == 2:
                this, other = runs[("this", audited)], runs[("against", audited)]
                cpu = _median(other, operation, "cpu_ms") / _median(this, operation, "cpu_ms")
                req = _median(other, operation, "requests") / _median(this, operation, "requests")
                line += f"{cpu:>17.2f}x{req:>17.2f}x"
            print(line)
        for name in trees:
            kinds = runs[(name, audited)][-1]["add_turn"]["kinds"]
            print(f"  add_turn's requests, {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in kinds.items()))


if __name__ == "__main__":
    main()
