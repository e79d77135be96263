"""bench/shared_file.py's in-process and child-process phases: a foreign process's writes (2), a new
process's first search (3), and a new process's RSS across many users (4)."""

from __future__ import annotations

import inspect
import json
import random
import time
import uuid
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench._shared_file_procs import (
    CALL_SECONDS,
    START_SECONDS,
    USER,
    FileWatch,
    call,
    child_env,
    load,
    run_child,
    server_command,
    snapshot_dir,
)
from bench._shared_file_seed import Corpus, distinctive_word
from bench.harness.timing import percentiles, rss_mb
from mcp_memory.config import Settings
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service


async def foreign_writes(
    data_dir: Path, workdir: Path, corpus: Corpus, rounds: int, budget: float
) -> dict[str, Any]:
    settings = Settings(user_id=USER, data_dir=data_dir)
    rng = random.Random(data_dir.name)
    questions = [corpus.questions[i * 37 % len(corpus.questions)] for i in range(5)]
    row: dict[str, Any] = {"memories": None, "load_start": load()}
    watch = FileWatch(settings.sqlite_path)
    errlog_path = workdir / f"foreign-{data_dir.name}.stderr"
    try:
        async with AsyncExitStack() as stack:
            began = time.perf_counter()
            service = await stack.enter_async_context(open_service(settings))
            warmup = getattr(service, "warmup", None)
            if warmup is not None:
                with anyio.fail_after(CALL_SECONDS):
                    await warmup.done.wait()
            warm_times = []
            for q in questions[:3]:
                t0 = time.perf_counter()
                await service.search(SearchQuery.of(USER, q, limit=10, settings=service.settings))
                warm_times.append(time.perf_counter() - t0)
            row["in_process_ready_s"] = time.perf_counter() - began
            row["in_process_warm_search_ms"] = [t * 1000 for t in warm_times]

            errlog: TextIO = stack.enter_context(errlog_path.open("a"))
            command = server_command()
            params = StdioServerParameters(
                command=command[0],
                args=[*command[1:], "serve", "--in-process"],  # one process each on the file, as measured
                env=child_env(data_dir, USER),
                cwd=workdir,
            )
            began = time.perf_counter()
            # No fail_after around it: the client's task group outlives this statement (a cancel scope
            # must not close before it); its initialize is bounded by read_timeout_seconds.
            foreign = await stack.enter_async_context(
                Client(stdio_client(params, errlog=errlog), read_timeout_seconds=START_SECONDS)
            )
            row["foreign_connect_s"] = time.perf_counter() - began
            # Its first search waits for its own start-up warm-up: after it, the other process is idle.
            await call(foreign, "search_memory", {"query": questions[3], "limit": 1})
            row["foreign_ready_s"] = time.perf_counter() - began
            await watch.quiet()
            await service.search(
                SearchQuery.of(USER, questions[4], limit=10, settings=service.settings)
            )  # whatever its start-up wrote is seen

            after, warm, found, disturbed = [], [], [], 0
            thread = f"foreign-{uuid.uuid4().hex[:6]}"
            phase_began = time.perf_counter()
            for r in range(rounds):
                if r >= 3 and time.perf_counter() - phase_began > budget:
                    break
                word = distinctive_word(rng)
                text = (
                    f"{corpus.turns[r * 131 % len(corpus.turns)]} (note {r}: the {word} key is in the drawer)"
                )
                added = await call(
                    foreign, "add_turn", {"thread_id": thread, "role": "user", "content": text}
                )
                version = await watch.quiet()
                t0 = time.perf_counter()
                with anyio.fail_after(CALL_SECONDS):
                    result = await service.search(
                        SearchQuery.of(USER, word, limit=10, settings=service.settings)
                    )
                after.append(time.perf_counter() - t0)
                found.append(any(hit.id == added["turn"]["id"] for hit in result.results))
                t0 = time.perf_counter()
                await service.search(SearchQuery.of(USER, word, limit=10, settings=service.settings))
                warm.append(time.perf_counter() - t0)
                disturbed += watch.version() != version  # something committed between: warm not clean
            row.update(
                rounds=len(after),
                after_write=percentiles(after),
                warm=percentiles(warm),
                found=sum(found),
                found_flags=found,
                warm_disturbed=disturbed,
                phase_s=time.perf_counter() - phase_began,
            )
            memories = await service.stores.long_term.memories_of(USER)
            row["memories"] = len(memories)
            del memories
    finally:
        watch.close()
    row["load_end"] = load()
    row["at"] = datetime.now().isoformat(timespec="seconds")
    return row


async def child_first_search(query: str) -> None:
    """In the child: open the service from the environment, time its first search sent right away."""
    import mcp_memory

    began = time.perf_counter()
    async with open_service(Settings()) as service:
        opened = time.perf_counter() - began
        t0 = time.perf_counter()
        result = await service.search(
            SearchQuery.of(service.settings.user_id, query, limit=10, settings=service.settings)
        )
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        await service.search(
            SearchQuery.of(service.settings.user_id, query, limit=10, settings=service.settings)
        )
        second = time.perf_counter() - t0
        rss = rss_mb()
    print(
        json.dumps(
            {
                "open_s": opened,
                "first_search_s": first,
                "second_search_ms": second * 1000,
                "hits": len(result.results),
                "rss_mb": rss,
                "mcp_memory": mcp_memory.__file__,
            }
        )
    )


def first_searches(data_dir: Path, workdir: Path, corpus: Corpus, runs: int) -> list[dict[str, Any]]:
    out = []
    for run in range(runs):
        before = snapshot_dir(data_dir)
        query = corpus.questions[(run * 53 + 11) % len(corpus.questions)]
        started_load = load()
        answer = run_child("first-search", data_dir, workdir, ["--child-query", query])
        out.append(
            {
                "run": run + 1,
                "snapshot_before": before,
                "snapshot_after": snapshot_dir(data_dir),
                "load": started_load,
                "at": datetime.now().isoformat(timespec="seconds"),
                **answer,
            }
        )
    return out


async def index_memory(store: object) -> int | None:
    """The store's own count of its in-memory index bytes, if it keeps one (index_memory_bytes: a method,
    sync or async, or a property); None otherwise. The one place this bench looks into the store."""
    found = getattr(store, "index_memory_bytes", None)
    if found is None:
        return None
    value = found() if callable(found) else found
    if inspect.isawaitable(value):
        value = await value
    return int(value) if isinstance(value, int | float) else None


async def child_rss(users: list[str], rounds: int, questions: list[str]) -> None:
    import mcp_memory

    began = time.perf_counter()
    async with open_service(Settings()) as service:
        opened = time.perf_counter() - began
        rss_open = rss_mb()
        times: list[list[float]] = []
        for r in range(rounds):
            times.append([])
            for u, user in enumerate(users):
                t0 = time.perf_counter()
                await service.search(
                    SearchQuery.of(
                        user,
                        questions[(r * len(users) + u) % len(questions)],
                        limit=10,
                        settings=service.settings,
                    )
                )
                times[-1].append(time.perf_counter() - t0)
        rss = rss_mb()
        index_bytes = await index_memory(service.stores.long_term)
    print(
        json.dumps(
            {
                "open_s": opened,
                "rss_after_open_mb": rss_open,
                "rss_mb": rss,
                "index_memory_bytes": index_bytes,
                "round_ms": [[t * 1000 for t in rnd] for rnd in times],
                "mcp_memory": mcp_memory.__file__,
            }
        )
    )
