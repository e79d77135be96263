"""bench/shared_file.py's HTTP phase (5): get_working_memory latency while other clients loop
search_memory over `mcp-memory serve --transport http`, and with nobody searching."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench._shared_file_procs import (
    CALL_SECONDS,
    START_SECONDS,
    STOP_SECONDS,
    USER,
    call,
    child_env,
    load,
    server_command,
)
from bench._shared_file_seed import Corpus
from bench.harness.server import free_port
from bench.harness.timing import percentiles


class HttpServer:
    """`mcp-memory serve --transport http` on a free loopback port; stopped by stop()."""

    def __init__(self, data_dir: Path, workdir: Path) -> None:
        self.data_dir = data_dir
        self.workdir = workdir
        self.port = 0
        self.stderr_path = workdir / "http-server.stderr"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> float:
        env = child_env(
            self.data_dir,
            USER,
            {
                "MCP_MEMORY_LOG_LEVEL": "WARNING",
                # One loopback principal for every client: lift its rate limit, measure the server.
                "MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "1000000",
                "MCP_MEMORY_SECURITY__REQUEST_BURST": "1000000",
            },
        )
        began = time.perf_counter()
        for _ in range(3):  # a free port can be taken before the server binds it
            self.port = free_port()
            with self.stderr_path.open("ab") as stderr:
                self.process = subprocess.Popen(
                    [
                        *server_command(),
                        "serve",
                        "--transport",
                        "http",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.port),
                    ],
                    env=env,
                    cwd=self.workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                )
            deadline = time.monotonic() + START_SECONDS
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                        if r.status == 200:
                            return time.perf_counter() - began
                except OSError:
                    pass
                time.sleep(0.1)
            self.stop()
        raise RuntimeError(f"the HTTP server did not come up; see {self.stderr_path}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Calls:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0
        self.first_error = ""
        self.started = self.ended = 0.0

    def per_second(self) -> float:
        span = self.ended - self.started
        return len(self.latencies) / span if span > 0 else 0.0


async def loop_calls(
    client: Client, deadline: float, calls: Calls, next_call: Callable[[int], tuple[str, dict[str, Any]]]
) -> None:
    n = 0
    while time.perf_counter() < deadline:
        tool, arguments = next_call(n)
        t0 = time.perf_counter()
        try:
            with anyio.fail_after(CALL_SECONDS):
                result = await client.call_tool(tool, arguments)
        except Exception as e:  # benchmark boundary: count it, keep measuring
            calls.errors += 1
            calls.first_error = calls.first_error or f"{type(e).__name__}: {e}"
        else:
            if result.is_error:
                calls.errors += 1
                calls.first_error = calls.first_error or str(result.content[0].text if result.content else "")  # type: ignore[union-attr]
            else:
                calls.latencies.append(time.perf_counter() - t0)
        n += 1
    calls.ended = max(calls.ended, time.perf_counter())


async def http_phase(url: str, searchers: int, seconds: float, questions: list[str]) -> dict[str, Any]:
    """One get_working_memory client and `searchers` search_memory clients, all connected first, then
    looping for `seconds`."""
    reads, searches = Calls(), Calls()
    async with AsyncExitStack() as stack:
        reader = await stack.enter_async_context(Client(url, read_timeout_seconds=CALL_SECONDS))
        searching = [
            await stack.enter_async_context(Client(url, read_timeout_seconds=CALL_SECONDS))
            for _ in range(searchers)
        ]
        load_start = load()
        reads.started = searches.started = time.perf_counter()
        deadline = reads.started + seconds
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                loop_calls, reader, deadline, reads, lambda n: ("get_working_memory", {"thread_id": "live-0"})
            )
            for i, client in enumerate(searching):
                tg.start_soon(
                    loop_calls,
                    client,
                    deadline,
                    searches,
                    lambda n, i=i: (
                        "search_memory",
                        {"query": questions[(i * 251 + n) % len(questions)], "limit": 10},
                    ),
                )
    return {
        "searchers": searchers,
        "seconds": seconds,
        "get_working_memory": {**percentiles(reads.latencies), "count": len(reads.latencies)},
        "get_working_memory_errors": reads.errors,
        "search_memory": {**percentiles(searches.latencies), "count": len(searches.latencies)},
        "searches_per_s": searches.per_second(),
        "search_errors": searches.errors,
        "first_error": reads.first_error or searches.first_error,
        "load": load_start,
        "load_end": load(),
        "at": datetime.now().isoformat(timespec="seconds"),
    }


async def http_bench(url: str, seconds: float, corpus: Corpus) -> dict[str, Any]:
    async with Client(url, read_timeout_seconds=CALL_SECONDS) as probe:
        t0 = time.perf_counter()
        await call(probe, "search_memory", {"query": corpus.questions[0], "limit": 10})  # waits for warm-up
        first = time.perf_counter() - t0
        await call(probe, "get_working_memory", {"thread_id": "live-0"})
    baseline = await http_phase(url, 0, seconds, corpus.questions)
    loaded = await http_phase(url, 4, seconds, corpus.questions)
    return {"first_search_s": first, "baseline": baseline, "loaded": loaded}
