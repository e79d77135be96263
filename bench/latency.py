"""add_turn and search_memory latency, ingest throughput and memory footprint as the store grows.

Runs in process through the public service API (what the MCP tools call), on a fresh temporary data dir:

    .venv/bin/python bench/latency.py --sizes 1000 10000            # embedded default (SQLite + local ONNX)
    .venv/bin/python bench/latency.py --sizes 1000 10000 --redis redis://127.0.0.1:6379/0   # Redis working memory

At each size: p50/p95/p99 of 200 add_turn, search_memory and get_working_memory calls, the ingest rate,
the process's RSS, and the first search of a new process opened on the same data, sent as soon as it has
opened (it waits for the start-up warm-up to prepare the user's in-memory search indexes: what a restart
or a second MCP client pays).

Prints a table and writes JSON (--json). Numbers are wall-clock on this machine; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, table
from bench.harness.data.corpus import locomo, queries, turns
from bench.harness.timing import cpu, percentiles, rss_mb
from mcp_memory.config import Settings, WorkingSettings
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service

USER = "bench"
THREAD_SIZE = 100  # turns per thread while ingesting


async def run(
    sizes: list[int], samples: int, redis_url: str | None, modes: list[str], locomo_path: str | None
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-bench-") as scratch:
        settings = Settings(user_id=USER, data_dir=Path(scratch))
        if redis_url:
            settings = settings.model_copy(
                update={
                    "working": WorkingSettings(
                        redis_url=SecretStr(redis_url), key_prefix=f"bench{time.time_ns()}"
                    )
                }
            )
        needed = max(sizes) + samples * len(sizes)
        if locomo_path:
            # Real turns, repeated (each copy a new thread) until there are enough; real questions.
            real_turns, real_questions = locomo(locomo_path)
            corpus = [real_turns[i % len(real_turns)] for i in range(needed)]
            probe = [real_questions[i * 7 % len(real_questions)] for i in range(samples)]
        else:
            corpus = turns(needed)
            probe = queries(samples)
        async with open_service(settings) as service:
            stored = 0
            for size in sizes:
                started = time.perf_counter()
                while stored < size:
                    thread = f"thread-{stored // THREAD_SIZE}"
                    await service.add_turn(USER, thread, "user", corpus[stored], None, None)
                    stored += 1
                if service.vectors is not None:  # ingested means embedded too (service/vectors.py)
                    await service.vectors.settled(USER)
                ingest_seconds = time.perf_counter() - started
                ingested = size - (results[-1]["memories"] if results else 0)

                add_times = []
                for _ in range(samples):
                    text = corpus[stored]
                    began = time.perf_counter()
                    await service.add_turn(USER, f"probe-{size}", "user", text, None, None)
                    add_times.append(time.perf_counter() - began)
                    stored += 1
                # The probes' vectors are written in the background meanwhile; searches are timed once
                # they are (a search right after add_turn would wait for them: read-your-writes).
                if service.vectors is not None:
                    await service.vectors.settled(USER)
                search_times: dict[str, list[float]] = {}
                for mode in modes:
                    search_times[mode] = []
                    for query in probe:
                        began = time.perf_counter()
                        await service.search(
                            SearchQuery.of(USER, query, limit=10, mode=mode, settings=service.settings)
                        )
                        search_times[mode].append(time.perf_counter() - began)
                get_times = []
                for i in range(samples):
                    began = time.perf_counter()
                    await service.get_working_memory(USER, f"thread-{i % max(1, size // THREAD_SIZE)}")
                    get_times.append(time.perf_counter() - began)
                rss = rss_mb()
                first_search = await anyio.to_thread.run_sync(
                    first_search_elsewhere, settings, probe[0], modes[0]
                )
                row = {
                    "memories": stored,
                    "ingest_turns_per_s": ingested / ingest_seconds,
                    "add_turn": percentiles(add_times),
                    "search_memory": percentiles(search_times[modes[0]]),
                    "search_by_mode": {mode: percentiles(times) for mode, times in search_times.items()},
                    "get_working_memory": percentiles(get_times),
                    "first_search_s": first_search,
                    "rss_mb": rss,
                }
                results.append(row)
                print_row(row, file=sys.stderr)
    return results


def first_search_elsewhere(settings: Settings, query: str, mode: str) -> float:
    """Seconds the first search of a new process on the same data takes when sent as soon as the process
    has opened: it waits for the user's in-memory search indexes, which the start-up warm-up is preparing
    (what a restart or a second MCP client pays). A process of its own, so this one's RSS stays its own."""
    env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(settings.data_dir), "MCP_MEMORY_USER_ID": USER}
    if settings.working.redis_url is not None:
        env["MCP_MEMORY_WORKING__REDIS_URL"] = settings.working.redis_url.get_secret_value()
        env["MCP_MEMORY_WORKING__KEY_PREFIX"] = settings.working.key_prefix
    child = subprocess.run(
        [sys.executable, __file__, "--first-search", query, "--modes", mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(child.stdout.split()[-1])


async def first_search(query: str, mode: str) -> None:
    """The child's side of first_search_elsewhere: settings from the environment, one timed search."""
    async with open_service(Settings()) as service:
        began = time.perf_counter()
        await service.search(SearchQuery.of(USER, query, limit=10, mode=mode, settings=service.settings))
        print(time.perf_counter() - began)


def print_row(row: dict[str, Any], file: Any = sys.stdout) -> None:
    a, s, g = row["add_turn"], row["search_memory"], row["get_working_memory"]
    print(
        f"| {row['memories']:>7,} | {a['p50_ms']:6.2f} | {a['p95_ms']:6.2f} | {a['p99_ms']:6.2f} "
        f"| {s['p50_ms']:6.2f} | {s['p95_ms']:6.2f} | {s['p99_ms']:6.2f} "
        f"| {g['p50_ms']:6.2f} | {g['p95_ms']:6.2f} | {row['first_search_s']:6.2f} "
        f"| {row['ingest_turns_per_s']:7.1f} | {row['rss_mb']:7.1f} |",
        file=file,
    )


HEADER = (
    "| memories | add_turn p50 ms | p95 | p99 | search p50 ms | p95 | p99 | get_wm p50 ms | p95"
    " | first search after opening, s | ingest turns/s | RSS MB |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--samples", type=int, default=200, help="timed calls per operation and size")
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["hybrid"],
        choices=["hybrid", "vector", "text"],
        help="search modes to time; the table's search columns show the first, a second table all",
    )
    parser.add_argument("--redis", default=None, help="Redis URL: working memory on Redis instead of SQLite")
    parser.add_argument(
        "--locomo", default=None, help="path to locomo_dev.json: real conversation turns and questions"
    )
    parser.add_argument("--first-search", default=None, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.first_search is not None:
        anyio.run(first_search, args.first_search, args.modes[0])
        return
    rows = anyio.run(run, sorted(args.sizes), args.samples, args.redis, args.modes, args.locomo)
    backend = "redis + sqlite" if args.redis else "sqlite (embedded)"
    corpus = "LoCoMo turns and questions" if args.locomo else "synthetic turns and questions"
    print(
        f"\ncorpus: {corpus}; working memory: {backend}; search mode {args.modes[0]}; {cpu()}, "
        f"{__import__('os').cpu_count()} cores, Python {platform.python_version()}\n"
    )
    print(HEADER)
    for row in rows:
        print_row(row)
    if len(args.modes) > 1:
        print("\n| memories | mode | search p50 ms | p95 | p99 |\n|---:|---|---:|---:|---:|")
        for row in rows:
            for mode, p in row["search_by_mode"].items():
                print(
                    f"| {row['memories']:>7,} | {mode} | {p['p50_ms']:6.2f} | {p['p95_ms']:6.2f} | {p['p99_ms']:6.2f} |"
                )
    table.save(args.json, {"backend": backend, "modes": args.modes, "rows": rows})


if __name__ == "__main__":
    main()
