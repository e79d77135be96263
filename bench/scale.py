"""The embedded store at scale: vector, hybrid and text search, recall of the approximate vector index
against exact search, first search after opening, RSS and bytes on disk.

    .venv/bin/python bench/scale.py --locomo ../shared/data/locomo/locomo_dev.json --sizes 10000 100000
    .venv/bin/python bench/scale.py --locomo ... --sizes 100000 --ann-min-memories 0   # exact only
    .venv/bin/python bench/scale.py --corpus near-duplicates --locomo ../shared/data/locomo/locomo_dev.json \
        --beam ../shared/data/beam/100K --sizes 100000 --cache /tmp/mcp-memory-bench

The store is filled fast and documented as such: synthetic turns (LoCoMo turn texts, repeated, each with
its two previous texts as context, 100 to a thread) with precomputed vectors, written in batches through
the store's own write path (`SqliteLongTermStore.put`), not through add_turn and the embedder. The vectors
are clustered (2,000 centres of Zipf-like sizes plus noise, 384 dimensions, unit length), as in
../shared/research/vector-indexes.md: uniform random vectors have no near neighbours to find. Queries are
LoCoMo questions with vectors drawn the same way (not stored ones). `--corpus near-duplicates` fills it
instead with near-duplicates of real turns (bench/harness/data/near_duplicates.py: LoCoMo turns and BEAM messages
embedded with the local model, each memory its base vector moved by as much as real edits move it; the
calibration is printed), searched with held-out real questions embedded with the same model. Recall@10
compares the store's vector search with an exact search (numpy, float32) over the same vectors; the
worst query's gap is how far the cosine of the 10th memory returned is below the exact 10th's. add_turn is timed through the service
(`open_service` on the same file: working memory, the long-term write, the embedder's queue, graph links),
with the storage quota off (a million memories pass the default). One BLAS thread, as the server.
Numbers are wall-clock on this machine; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, table
from bench.harness.data.corpus import locomo
from bench.harness.data.near_duplicates import NearDuplicates
from bench.harness.timing import percentiles, rss_mb
from mcp_memory.config import LongTermSettings, SecuritySettings, Settings
from mcp_memory.llm.onnx_minilm import MODEL_NAME
from mcp_memory.models import EmbeddingSpec, Memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

DIMENSION = 384
CENTRES = 2000
SEARCHES = 200
USER = "bench"
# The local embedder's name: the store is one a server can open (add_turn is measured through one).
SPEC = EmbeddingSpec(model=MODEL_NAME, dimension=DIMENSION)
ADD_TURNS = 40


class Clusters:
    """Clustered unit vectors: Zipf-like cluster sizes, anisotropic noise (as the research measured)."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        centres = rng.standard_normal((CENTRES, DIMENSION)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        weights = 1.0 / np.arange(1, CENTRES + 1) ** 0.8
        self.weights = weights / weights.sum()
        self.scale = (0.6 + 0.8 * rng.random(DIMENSION)).astype(np.float32)

    def draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        picked = self.centres[rng.choice(CENTRES, size=count, p=self.weights)]
        noise = rng.standard_normal((count, DIMENSION)).astype(np.float32) * self.scale * 0.045
        vectors = picked + noise
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class Synthetic:
    """The synthetic corpus: LoCoMo texts in turn with clustered vectors, and LoCoMo questions."""

    def __init__(self, locomo_path: str) -> None:
        self.texts, questions = locomo(locomo_path)
        self.contents = self.texts
        self.questions = [questions[k * 7 % len(questions)] for k in range(SEARCHES)]
        self.clusters = Clusters(seed=3)
        self.query_vectors = self.clusters.draw(SEARCHES, np.random.default_rng(5))

    def draw(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, list[str] | None]:
        return self.clusters.draw(count, rng), None


def turns(
    texts: list[str], start: int, count: int, vectors: np.ndarray, contents: list[str] | None = None
) -> Iterator[Memory]:
    """Memories m{start}..: `contents` theirs, else the texts in turn."""
    began = datetime(2024, 1, 1, tzinfo=UTC)
    for offset in range(count):
        i = start + offset
        yield Memory(
            id=f"m{i}",
            user_id=USER,
            thread_id=f"t{i // 100}",
            role="user",
            type="turn",
            content=contents[offset] if contents is not None else texts[i % len(texts)],
            index_context=f"{texts[(i - 1) % len(texts)]} {texts[(i - 2) % len(texts)]}",
            embedding=vectors[offset].tolist(),
            created_at=began + timedelta(minutes=i),
            token_count=20,
        )


def disk_mb(path: Path) -> float:
    files = [path, *path.parent.glob(path.name + "-*"), *(path.parent / (path.name + "-index")).glob("*")]
    return sum(f.stat().st_size for f in files if f.is_file()) / 2**20


async def timed(store: SqliteLongTermStore, queries: list[SearchQuery], vectors: np.ndarray) -> list[float]:
    times = []
    for query, vector in zip(queries, vectors, strict=True):
        began = time.perf_counter()
        await store.search(USER, query, vector.tolist() if query.mode != "text" else None)
        times.append(time.perf_counter() - began)
    return times


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    corpus: Synthetic | NearDuplicates
    if args.corpus == "near-duplicates":
        if not args.beam:
            raise SystemExit("--corpus near-duplicates needs --beam (the BEAM 100K folder) beside --locomo")
        corpus = NearDuplicates(args.locomo, args.beam, cache=args.cache)
        print(json.dumps({"calibration": corpus.calibration.summary()}), file=sys.stderr, flush=True)
    else:
        corpus = Synthetic(args.locomo)
    texts, questions, query_vectors = corpus.contents, corpus.questions, corpus.query_vectors
    rng = np.random.default_rng(4)
    ann = {"ann_min_memories": args.ann_min_memories, "ann_expansion": args.ann_expansion}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-scale-", dir=args.scratch) as scratch:
        path = Path(scratch) / "memory.db"
        stored: list[np.ndarray] = []
        count = 0
        added = 0  # by add_turn
        async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, SPEC, **ann) as store:
            for size in args.sizes:
                began = time.perf_counter()
                while count < size:
                    batch = min(5000, size - count)
                    vectors, contents = corpus.draw(batch, rng)
                    stored.append(vectors)
                    await store.put(list(turns(texts, count, batch, vectors, contents)))
                    count += batch
                fill_s = time.perf_counter() - began
                began = time.perf_counter()
                probe = SearchQuery(text=questions[0], mode="hybrid")
                await store.search(
                    USER, probe, query_vectors[0].tolist()
                )  # builds or catches up: timed apart
                index_s = time.perf_counter() - began
                await store.indexes.snapshot(USER)
                await store.indexes.saved()
                by_mode: dict[str, dict[str, float]] = {}
                for mode in ("vector", "hybrid", "text"):
                    queries = [SearchQuery(text=questions[k], mode=mode, limit=10) for k in range(SEARCHES)]
                    by_mode[mode] = percentiles(await timed(store, queries, query_vectors))
                matrix = np.concatenate(stored)
                recall, gaps = [], []
                for k in range(SEARCHES):
                    query = SearchQuery(text=questions[0], mode="vector", limit=10)
                    found = [h.memory.id for h in await store.search(USER, query, query_vectors[k].tolist())]
                    cosines = matrix @ query_vectors[k]
                    exact = np.argpartition(-cosines, 10)[:10]
                    recall.append(len(set(found) & {f"m{i}" for i in exact}) / 10)
                    # How far the 10th returned is below the exact 10th (the bench's ids are m{row}; the
                    # add_turn memories of an earlier size, not in the matrix, are never near).
                    positions = [int(i[1:]) for i in found if i[1:].isdigit()]
                    returned = sorted(cosines[positions].tolist() + [-1.0] * 10, reverse=True)[9]
                    gaps.append(float(cosines[exact].min()) - returned)
                async with store.indexes.current(USER) as index:
                    approximate = index.vectors.approximate
                extra, extra_contents = corpus.draw(2 * CATCH_UPS, rng)
                writes, after_foreign = await writes_and_catch_up(
                    path, store, texts, extra, count, ann, extra_contents
                )
                stored.append(extra)  # ids and matrix rows stay in step for the next size's recall
                count += 2 * CATCH_UPS
                row = {
                    "corpus": args.corpus,
                    "memories": count + added,
                    "approximate": approximate,
                    "fill_s": round(fill_s, 1),
                    "index_s": round(index_s, 1),
                    "search_ms": by_mode,
                    # One memory through the store's write path (put), as add_turn's long-term write.
                    "put_one": percentiles(writes),
                    # A hybrid search right after another connection (another process) wrote a memory.
                    "hybrid_after_foreign_write": percentiles(after_foreign),
                    "vector_recall_at_10": round(float(np.mean(recall)), 3),
                    "worst_query_recall_at_10": round(float(np.min(recall)), 1),
                    # The exact 10th's cosine less the returned 10th's: worst query, and the mean.
                    "worst_query_gap": round(max(gaps), 3),
                    "mean_gap": round(float(np.mean(gaps)), 4),
                    "rss_mb": round(rss_mb()),
                    "disk_mb": round(disk_mb(path)),
                    "first_search": first_search_elsewhere(path, questions[1], query_vectors[1], ann),
                    "add_turn": await add_turns(path, texts, size),
                }
                added += ADD_TURNS  # memories of the store not in `stored`: not m{i}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


CATCH_UPS = 30


async def writes_and_catch_up(
    path: Path,
    store: SqliteLongTermStore,
    texts: list[str],
    vectors: np.ndarray,
    count: int,
    ann: dict[str, int],
    contents: list[str] | None = None,
) -> tuple[list[float], list[float]]:
    """Timings of single puts by this store, and of this store's hybrid search right after a put by
    another connection on the file (it catches up on that write first). Adds 2 * CATCH_UPS memories."""
    writes = []
    for i in range(CATCH_UPS):
        [memory] = turns(texts, count + i, 1, vectors[i : i + 1], contents and contents[i : i + 1])
        began = time.perf_counter()
        await store.put([memory])
        writes.append(time.perf_counter() - began)
    searches = []
    query = SearchQuery(text=texts[3], mode="hybrid")
    vector = vectors[0].tolist()
    await store.search(USER, query, vector)  # caught up with its own writes first
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, SPEC, **ann) as other:
        for i in range(CATCH_UPS):
            j = CATCH_UPS + i
            await other.put(
                list(turns(texts, count + j, 1, vectors[j : j + 1], contents and contents[j : j + 1]))
            )
            began = time.perf_counter()
            await store.search(USER, query, vector)
            searches.append(time.perf_counter() - began)
    return writes, searches


async def add_turns(path: Path, texts: list[str], size: int) -> dict[str, float]:
    """add_turn through the service (working memory, the long-term write, the embedder's queue, graph
    links) on this file: ADD_TURNS calls into a new thread of the filled user, the first 10 not timed
    (the embedder's first run). Their real vectors join the store, far from the synthetic clusters."""
    settings = Settings(
        user_id=USER,
        data_dir=path.parent,
        sqlite_file=path.name,
        long_term=LongTermSettings(warm_on_start=False),  # the index is not what add_turn waits for
        security=SecuritySettings(max_stored_bytes=None),  # a million memories pass the default quota
    )
    times = []
    async with open_service(settings) as service:
        for i in range(ADD_TURNS):
            began = time.perf_counter()
            await service.add_turn(USER, f"add-turn-{size}", "user", texts[i], None, None)
            times.append(time.perf_counter() - began)
        if service.vectors is not None:
            await service.vectors.settled(USER)
    return percentiles(times[10:])


def first_search_elsewhere(
    path: Path, question: str, vector: np.ndarray, ann: dict[str, int]
) -> dict[str, float]:
    """A new process opening the same file: seconds to its first hybrid search answer, and its RSS after."""
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--first-search",
            str(path),
            question,
            json.dumps(vector.tolist()),
            json.dumps(ann),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    if child.returncode != 0:
        raise RuntimeError(f"the first-search process failed:\n{child.stderr}")
    return dict(json.loads(child.stdout.strip().splitlines()[-1]))


async def first_search(path: Path, question: str, vector: list[float], ann: dict[str, int]) -> None:
    """The child: open, search once (timed), then 100 more searches: a serving process's RSS."""
    began = time.perf_counter()
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, SPEC, **ann) as store:
        await store.search(USER, SearchQuery(text=question, mode="hybrid"), vector)
        seconds = time.perf_counter() - began
        first_rss = rss_mb()
        rng = np.random.default_rng(6)
        for _ in range(100):
            other = rng.standard_normal(DIMENSION).astype(np.float32)
            query = SearchQuery(text=question, mode="hybrid")
            await store.search(USER, query, (other / np.linalg.norm(other)).tolist())
        report = {
            "seconds": round(seconds, 3),
            "rss_mb_after_first": round(first_rss),
            "rss_mb_serving": round(rss_mb()),
            # Of it: the process's own memory, and file pages it mapped and touched (snapshot arrays),
            # which the kernel can drop and read again.
            "rss_anon_mb": round(status_mb("RssAnon")),
            "rss_file_mb": round(status_mb("RssFile")),
            "loads": store.indexes.stats.loads,
            "builds": store.indexes.stats.builds,
        }
        print(json.dumps(report))


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "| memories | vector index | vector p50 / p95 ms | hybrid p50 / p95 ms | text p50 / p95 ms | recall@10 "
        "| worst query: recall, gap "
        "| after a foreign write p50 ms | put p50 ms | add_turn p50 ms | first search s | serving RSS MB | disk MB "
        "| fill s | index s |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        m = r["search_ms"]
        cells = " | ".join(
            f"{m[k]['p50_ms']:.1f} / {m[k]['p95_ms']:.1f}" for k in ("vector", "hybrid", "text")
        )
        kind = "approximate" if r["approximate"] else "exact"
        print(
            f"| {r['memories']:,} | {kind} | {cells} | {r['vector_recall_at_10']:.3f} "
            f"| {r['worst_query_recall_at_10']:.1f}, {r['worst_query_gap']:.3f} "
            f"| {r['hybrid_after_foreign_write']['p50_ms']:.1f} | {r['put_one']['p50_ms']:.1f} "
            f"| {r['add_turn']['p50_ms']:.1f} | {r['first_search']['seconds']:.2f} "
            f"| {r['first_search']['rss_mb_serving']:,} | {r['disk_mb']:,} | {r['fill_s']} | {r['index_s']} |"
        )


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("--locomo", help="path to locomo_dev.json (its turn texts and questions)")
    parser.add_argument("--corpus", choices=["synthetic", "near-duplicates"], default="synthetic")
    parser.add_argument("--beam", help="near-duplicates: the BEAM 100K folder (its messages and questions)")
    parser.add_argument(
        "--cache", type=Path, help="near-duplicates: a folder for the embeddings (not the repo)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument(
        "--ann-min-memories",
        dest="ann_min_memories",
        type=int,
        default=LongTermSettings.model_fields["ann_min_memories"].default,
    )
    parser.add_argument(
        "--ann-expansion",
        dest="ann_expansion",
        type=int,
        default=LongTermSettings.model_fields["ann_expansion"].default,
    )
    parser.add_argument("--scratch", default=None, help="where the temporary data dir goes")
    parser.add_argument("--first-search", nargs=4, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    threadpool_limits(1)
    if args.first_search:
        path, question, vector, ann = args.first_search
        asyncio.run(first_search(Path(path), question, json.loads(vector), json.loads(ann)))
        return
    rows = asyncio.run(run(args))
    print_table(rows)
    table.save(args.json, rows)


if __name__ == "__main__":
    main()
