"""Per-operation latency of CosmosLongTermStore on the local Cosmos-protocol server (p50 / p95, ms).

    python bench/cosmos_local_latency.py [--n 200]

Starts @vercel/cosmosdb-server like the test suite does (installing it into .cache/ once). Figures are
for this protocol + SDK path on loopback HTTP, not Azure: they show the store's own overhead and round
trips per operation, not service latency or RU cost.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from mcp_memory.config import CosmosSettings
from mcp_memory.llm.hash_embedder import HashingEmbedder
from mcp_memory.models import Memory, Scope
from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
from tests.services.cosmos_server import CosmosServer, local_cosmos_server

EMBEDDER = HashingEmbedder(384)


async def timed(n: int, operation: Callable[[int], Awaitable[object]]) -> list[float]:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await operation(i)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def run(server: CosmosServer, n: int) -> None:
    settings = CosmosSettings(
        endpoint=server.endpoint,
        key=SecretStr(server.key),
        database=f"bench_{uuid.uuid4().hex[:8]}",
        endpoint_discovery=False,
    )
    user = "bench-user"
    vectors = EMBEDDER.embed_now([f"turn {i} about bicycles and tea" for i in range(n)])
    turns = [
        Memory(
            id=f"turn-{i}",
            user_id=user,
            thread_id=f"t{i % 10}",
            role="user",
            content=f"turn {i} about bicycles and tea",
            embedding=[float(x) for x in vectors[i]],
        )
        for i in range(n)
    ]
    async with CosmosLongTermStore.open(settings, EMBEDDER.spec) as store:
        results = {
            "put (1 turn)": await timed(n, lambda i: store.put([turns[i]])),
            "get": await timed(n, lambda i: store.get(user, f"turn-{i}")),
            "recent (10)": await timed(n, lambda i: store.recent(user, f"t{i % 10}", limit=10)),
            "list_threads (10)": await timed(max(n // 10, 1), lambda i: store.list_threads(user)),
            "forget (1 memory)": await timed(
                n, lambda i: store.forget(Scope(user_id=user, memory_id=f"turn-{i}"))
            ),
        }
    print(f"CosmosLongTermStore on {server.endpoint} (local @vercel/cosmosdb-server, HTTP), n={n}")
    print(f"{'operation':<20}{'p50 ms':>10}{'p95 ms':>10}")
    for name, samples in results.items():
        p95 = statistics.quantiles(samples, n=20)[18] if len(samples) >= 2 else samples[0]
        print(f"{name:<20}{statistics.median(samples):>10.2f}{p95:>10.2f}")


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--n", type=int, default=200, help="operations per kind")
    args = parser.parse_args()
    with local_cosmos_server() as server:
        anyio.run(run, server, args.n)


if __name__ == "__main__":
    main()
