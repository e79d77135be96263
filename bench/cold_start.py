"""A cold start: a store served from its data file alone (the index folder gone: a backup restored on a
new machine, a lost cache, a snapshot format that changed), against the same store started warm.

    .venv/bin/python bench/cold_start.py --locomo ../shared/data/locomo/locomo_dev.json --sizes 100000
    .venv/bin/python bench/cold_start.py --locomo ... --sizes 100000 --before /work/main   # main's code too
    .venv/bin/python bench/cold_start.py --locomo ... --sizes 1000000 --cache /tmp/cold-start-stores

The store is filled as bench/scale.py fills it (synthetic turns: LoCoMo texts with clustered precomputed
vectors, through the store's own write path; `--cache` keeps it for the next run). Then its index folder
is removed and a new process opens the file and searches (hybrid, as a server's first search): seconds to
the first answer and whether its index was whole then, seconds until the words side is whole and until the
index is complete, peak RSS (VmHWM) and RSS after the build, vector recall@10 against exact search and
hybrid p50 once complete. Then a warm process on the same file (the snapshot the cold one wrote): its
first answer, RSS and recall. `--before DIR`: the cold process runs the code of that checkout first
(PYTHONPATH), e.g. main's, whose first search builds everything before it answers. One BLAS thread, as
the server; the approximate index from 50,000 memories and 2,048 candidates (the server's defaults).
Wall-clock on this machine; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

# This checkout at the end of the path: a --before checkout on PYTHONPATH is the mcp_memory a child runs.
sys.path.append(str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, table

DIMENSION = 384
QUERIES = 50
USER = "bench"
ANN = {"ann_min_memories": 50_000, "ann_expansion": 2048}  # LongTermSettings' defaults


def fill(path: Path, size: int, locomo_path: str) -> None:
    """A store of `size` synthetic turns at `path`, its vectors in vectors.npy, its queries in queries.json."""
    from bench.scale import SPEC, Synthetic, turns
    from mcp_memory.storage.sqlite.db import SqliteDatabase
    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

    corpus = Synthetic(locomo_path)
    rng = np.random.default_rng(4)
    vectors = np.lib.format.open_memmap(path.parent / "vectors.npy", "w+", np.float32, (size, DIMENSION))

    async def put() -> None:
        async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, SPEC) as store:
            count = 0
            while count < size:
                batch = min(5000, size - count)
                drawn, _ = corpus.draw(batch, rng)
                vectors[count : count + batch] = drawn
                await store.put(list(turns(corpus.contents, count, batch, drawn)))
                count += batch

    asyncio.run(put())
    vectors.flush()
    queries = {"texts": corpus.questions[:QUERIES], "vectors": corpus.query_vectors[:QUERIES].tolist()}
    (path.parent / "queries.json").write_text(json.dumps(queries))
    (path.parent / "filled").write_text(str(size))


def exact_top10(folder: Path) -> list[list[str]]:
    """Each query's ten nearest stored vectors (numpy, float32, a block at a time)."""
    matrix = np.load(folder / "vectors.npy", mmap_mode="r")
    queries = np.asarray(json.loads((folder / "queries.json").read_text())["vectors"], dtype=np.float32)
    best = np.full((len(queries), 10), -2.0, dtype=np.float32)
    rows = np.zeros((len(queries), 10), dtype=np.int64)
    for start in range(0, len(matrix), 100_000):
        block = np.asarray(matrix[start : start + 100_000]) @ queries.T  # (block, queries)
        for q in range(len(queries)):
            scores = np.concatenate([best[q], block[:, q]])
            ids = np.concatenate([rows[q], np.arange(start, start + len(block))])
            top = np.argpartition(-scores, 9)[:10]
            best[q], rows[q] = scores[top], ids[top]
    return [[f"m{i}" for i in r] for r in rows.tolist()]


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def child(path: Path, exact: list[list[str]], first_only: bool = False) -> dict[str, Any]:
    """A new process: open the file, answer the first search, wait for a complete index, then measure."""
    from mcp_memory.llm.onnx_minilm import MODEL_NAME
    from mcp_memory.models import EmbeddingSpec
    from mcp_memory.search.query import SearchQuery
    from mcp_memory.storage.sqlite.db import SqliteDatabase
    from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

    queries = json.loads((path.parent / "queries.json").read_text())
    texts, vectors = queries["texts"], queries["vectors"]
    spec = EmbeddingSpec(model=MODEL_NAME, dimension=DIMENSION)
    began = time.perf_counter()
    report: dict[str, Any] = {}
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, spec, **ANN) as store:
        indexes = store.indexes
        await store.search(USER, SearchQuery(text=texts[0], mode="hybrid", limit=10), vectors[0])
        report["first_answer_s"] = round(time.perf_counter() - began, 2)
        complete = getattr(indexes, "complete", lambda user: True)
        report["whole_at_first_answer"] = complete(USER)
        if first_only:  # closing stops the build
            report["peak_rss_mb"] = round(status_mb("VmHWM"))
            return report
        cold = getattr(indexes, "cold", None)
        if cold is not None:
            words = None
            while cold.building(USER):
                build = cold.builds.get(USER)
                if words is None and build is not None and build.progress.words_ready:
                    words = round(time.perf_counter() - began, 1)
                    report["rss_mb_words_ready"] = round(status_mb("VmRSS"))
                await asyncio.sleep(0.25)
            report["words_whole_s"] = words
        await store.search(USER, SearchQuery(text=texts[0], mode="hybrid", limit=10), vectors[0])
        report["complete_s"] = round(time.perf_counter() - began, 1)
        report["rss_mb_after_build"] = round(status_mb("VmRSS"))
        recall, hybrid = [], []
        for text, vector, truth in zip(texts, vectors, exact, strict=True):
            found = await store.search(USER, SearchQuery(text=text, mode="vector", limit=10), vector)
            recall.append(len({h.memory.id for h in found} & set(truth)) / 10)
            started = time.perf_counter()
            await store.search(USER, SearchQuery(text=text, mode="hybrid", limit=10), vector)
            hybrid.append(time.perf_counter() - started)
        report["vector_recall_at_10"] = round(float(np.mean(recall)), 3)
        report["hybrid_p50_ms"] = round(float(np.percentile(hybrid, 50)) * 1000, 1)
        report["rss_mb_serving"] = round(status_mb("VmRSS"))
        report["rss_anon_mb"] = round(status_mb("RssAnon"))
        report["peak_rss_mb"] = round(status_mb("VmHWM"))
        report["builds"], report["loads"] = indexes.stats.builds, indexes.stats.loads
    return report


def run_child(path: Path, exact_file: Path, code: str | None, first_only: bool = False) -> dict[str, Any]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if code:
        env["PYTHONPATH"] = code
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            str(path),
            str(exact_file),
            *(["--first-only"] if first_only else []),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the measured process failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="cold-start-", dir=args.scratch))
    folder = cache / f"store-{size}"
    path = folder / "memory.db"
    row: dict[str, Any] = {"memories": size}
    if not (folder / "filled").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        began = time.perf_counter()
        fill(path, size, args.locomo)
        row["fill_s"] = round(time.perf_counter() - began)
    exact_file = folder / "exact.json"
    if not exact_file.exists():
        exact_file.write_text(json.dumps(exact_top10(folder)))
    index_folder = path.with_name(path.name + "-index")
    if args.before:
        shutil.rmtree(index_folder, ignore_errors=True)
        row["before"] = run_child(path, exact_file, args.before)
        print(json.dumps({"memories": size, "before": row["before"]}), file=sys.stderr, flush=True)
    shutil.rmtree(index_folder, ignore_errors=True)
    if args.first_only:
        row["first"] = run_child(path, exact_file, None, first_only=True)
        print(json.dumps(row), file=sys.stderr, flush=True)
        return row
    row["cold"] = run_child(path, exact_file, None)
    print(json.dumps({"memories": size, "cold": row["cold"]}), file=sys.stderr, flush=True)
    row["warm"] = run_child(path, exact_file, None)
    print(json.dumps({"memories": size, "warm": row["warm"]}), file=sys.stderr, flush=True)
    if not args.cache:
        shutil.rmtree(cache, ignore_errors=True)
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "| memories | start | first answer s | whole then | words whole s | complete s | peak RSS MB "
        "| RSS after build MB | serving RSS MB | recall@10 | hybrid p50 ms |"
    )
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        for kind in ("before", "cold", "warm"):
            r = row.get(kind)
            if r is None:
                continue
            print(
                f"| {row['memories']:,} | {kind} | {r['first_answer_s']} | {'yes' if r['whole_at_first_answer'] else 'no'} "
                f"| {r.get('words_whole_s') or '-'} | {r['complete_s']} | {r['peak_rss_mb']:,} "
                f"| {r['rss_mb_after_build']:,} | {r['rss_mb_serving']:,} | {r['vector_recall_at_10']:.3f} "
                f"| {r['hybrid_p50_ms']} |"
            )


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("--locomo", help="path to locomo_dev.json (its turn texts and questions)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--cache", help="keep the filled stores here (reused by the next run)")
    parser.add_argument("--scratch", help="where a store not kept goes")
    parser.add_argument("--before", help="a checkout whose code the first cold process runs (e.g. main)")
    parser.add_argument(
        "--first-only", action="store_true", help="only the cold process's first answer (its build stopped)"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        exact = json.loads(Path(args.child[1]).read_text())
        print(json.dumps(asyncio.run(child(Path(args.child[0]), exact, args.first_only))))
        return
    if not args.locomo:
        parser.error("--locomo is needed to fill a store")
    rows = [measure(size, args) for size in args.sizes]
    if not args.first_only:
        print_table(rows)
    table.save(args.json, rows)


if __name__ == "__main__":
    main()
