"""The embedded store's own search time, without the query embedding: an A/B harness for two checkouts.

Seeds a fresh data file through `SqliteLongTermStore.put` (LoCoMo turn texts, each with its two previous
turns as context, random unit vectors: the store's work does not depend on what the vectors mean), then
times 200 searches with LoCoMo questions and precomputed query vectors, one BLAS thread (as the server):

    .venv/bin/python bench/store_search.py --locomo ../shared/data/locomo/locomo_dev.json --size 100000
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/store_search.py ...   # the other side

Prints which mcp_memory ran, then p50 / p95. Numbers are wall-clock on this machine; nothing is asserted.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

# Appended, not first: with PYTHONPATH naming another checkout, its mcp_memory is the one measured.
sys.path.append(str(Path(__file__).resolve().parents[1]))
import mcp_memory
from bench.harness import cli
from bench.harness.data.corpus import locomo, stored_turns
from bench.harness.timing import percentiles
from mcp_memory.models import EmbeddingSpec
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

DIMENSION = 384
SEARCHES = 200


async def run(size: int, mode: str, texts: list[str], questions: list[str]) -> dict[str, float]:
    rng = np.random.default_rng(1)

    def vector() -> list[float]:
        v = rng.standard_normal(DIMENSION).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]

    spec = EmbeddingSpec(model="bench", dimension=DIMENSION)
    with tempfile.TemporaryDirectory(prefix="mcp-memory-store-search-") as scratch:
        path = Path(scratch) / "memory.db"
        async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, spec) as store:
            turns = stored_turns(texts, size, dimension=DIMENSION, seed=2)
            while batch := list(islice(turns, 1000)):
                await store.put(batch)
            vectors = [vector() for _ in range(SEARCHES)]
            first_query = SearchQuery(text=questions[0], mode=mode)  # type: ignore[arg-type]
            await store.search("bench", first_query, vectors[0])  # builds the indexes: not timed
            saved = getattr(getattr(store, "indexes", None), "saved", None)
            if saved is not None:  # let a background snapshot write finish first
                await saved()
            times = []
            for k in range(SEARCHES):
                query = SearchQuery(text=questions[k * 7 % len(questions)], mode=mode)  # type: ignore[arg-type]
                began = time.perf_counter()
                await store.search("bench", query, vectors[k] if mode != "text" else None)
                times.append(time.perf_counter() - began)
    return percentiles(times)


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--locomo", required=True, help="path to locomo_dev.json")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--mode", choices=["hybrid", "text", "vector"], default="hybrid")
    args = parser.parse_args()
    texts, questions = locomo(args.locomo)
    threadpool_limits(1)
    result = asyncio.run(run(args.size, args.mode, texts, questions))
    print(
        f"{mcp_memory.__file__}: {args.size:,} memories, {args.mode}: "
        f"p50 {result['p50_ms']:.2f} / p95 {result['p95_ms']:.2f} ms"
    )


if __name__ == "__main__":
    main()
