"""The HNSW graph alone (usearch, as search/ann.py builds it) on either bench/scale.py corpus: recall@10
against exact search after re-ranking its candidates by exact cosines, for each storage and candidates
weighed, without the store around it (one build per storage, then every expansion on that graph). Prints
rows of: corpus | memories | storage | expansion | recall@10 | worst query: recall, gap below the exact
10th | queries under 0.9 | p50 / p95 ms.

    .venv/bin/python bench/graph_sweep.py --corpus near-duplicates --locomo ../shared/data/locomo/locomo_dev.json \
        --beam ../shared/data/beam/100K --size 1000000 --storage i8 bf16 --expansion 1024 2048 4096 \
        --cache /tmp/mcp-memory-bench

"adaptive" rows search at the first expansion, then again at the last when the candidates' exact cosines
are tightly packed (at least 30 within 0.01 of the 10th): the near-duplicate case. One BLAS thread, one
query at a time; nothing is asserted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from bench.harness.data.near_duplicates import NearDuplicates
from bench.scale import Synthetic
from mcp_memory.search.ann import CONNECTIVITY, EXPANSION_ADD, _usearch_index

ASKED = 104  # what vector_index.py asks the graph for, for a pool of 10 with no filter
BLOCK = 65_536


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--corpus", choices=["synthetic", "near-duplicates"], default="synthetic")
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--beam")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--storage", nargs="+", default=["i8", "bf16"])
    parser.add_argument("--expansion", type=int, nargs="+", default=[1024, 2048, 4096])
    args = parser.parse_args()
    threadpool_limits(1)
    corpus = (
        NearDuplicates(args.locomo, args.beam, cache=args.cache)
        if args.corpus == "near-duplicates"
        else Synthetic(args.locomo)
    )
    rng = np.random.default_rng(4)  # as bench/scale.py draws the stored vectors
    vectors = np.concatenate(
        [corpus.draw(min(5000, args.size - s), rng)[0] for s in range(0, args.size, 5000)]
    )
    queries = corpus.query_vectors
    for storage in args.storage:
        graph = _usearch_index()(
            ndim=vectors.shape[1],
            metric="ip",
            dtype=storage,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        began = time.perf_counter()
        for start in range(0, args.size, BLOCK):
            keys = np.arange(start, min(args.size, start + BLOCK), dtype=np.uint64)
            graph.add(keys, vectors[start : start + BLOCK], threads=2)
        print(
            f"{args.corpus} {args.size:,} {storage}: built in {time.perf_counter() - began:.0f} s", flush=True
        )

        measure(graph, vectors, queries, args.expansion, f"| {args.corpus} | {args.size:,} | {storage}")


def measure(graph: Any, vectors: np.ndarray, queries: np.ndarray, expansions: list[int], label: str) -> None:
    """One table row per expansion (and the adaptive one): recall@10, worst query, p50 / p95 ms."""
    cosines = queries @ vectors.T
    exact = np.argpartition(-cosines, 10, axis=1)[:, :10]
    exact_10th = cosines[np.arange(len(queries))[:, None], exact].min(axis=1)
    del cosines

    def search(query: np.ndarray, expansion: int) -> np.ndarray:
        graph.expansion_search = expansion
        return np.asarray(graph.search(query, ASKED).keys, dtype=np.int64)

    def adaptive(query: np.ndarray) -> np.ndarray:
        keys = search(query, expansions[0])
        found = np.sort(vectors[keys] @ query)[::-1]
        if int((found > found[9] - 0.01).sum()) >= 30:
            return search(query, expansions[-1])
        return keys

    policies: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = [
        (str(e), lambda q, e=e: search(q, e)) for e in expansions
    ]
    policies.append((f"adaptive {expansions[0]} -> {expansions[-1]}", adaptive))
    for name, policy in policies:
        recall, gaps, times = [], [], []
        for i, query in enumerate(queries):
            began = time.perf_counter()
            keys = policy(query)
            top = keys[np.argsort(-(vectors[keys] @ query))[:10]]
            times.append(time.perf_counter() - began)
            recall.append(len(set(top.tolist()) & set(exact[i].tolist())) / 10)
            gaps.append(float(exact_10th[i] - np.sort(vectors[top] @ query)[0]))
        print(
            f"{label} | {name} | {np.mean(recall):.3f} | {min(recall):.1f}, {max(gaps):.3f} "
            f"| {sum(r < 0.9 for r in recall)} | {np.median(times) * 1000:.2f} / {np.quantile(times, 0.95) * 1000:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
