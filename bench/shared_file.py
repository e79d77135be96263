"""Several `mcp-memory serve` processes on one SQLite data file: what noticing another process's write,
starting a new process, holding many users' indexes and searching beside a get_working_memory cost.

The embedded default (SQLite long term + working memory, the local ONNX embedder, default settings), on
fresh temporary data dirs seeded with LoCoMo turns (the data stays where it is: its path is an argument):

    .venv/bin/python bench/shared_file.py --locomo ../shared/data/locomo/locomo_dev.json
    .venv/bin/python bench/shared_file.py --locomo ../shared/data/locomo/locomo_dev.json \\
        --sizes 10000 --phases foreign first --rounds 10 --json /tmp/shared_file.json

Another checkout of the code (e.g. a git worktree of an older commit) runs with this venv's Python and
its own tree first on the path; every child process inherits PYTHONPATH, and the header prints which
mcp_memory each process imported:

    PYTHONPATH=/work/before .venv/bin/python /work/before/bench/shared_file.py --locomo ...

Phases (--phases, default all; the seeding each needs always runs):

1. seed: one data dir per --sizes entry, filled fast: turn Memory objects built as MemoryService.add_turn
   builds them (same fields, index_context as service._index_context builds it, token counts from the
   service's counter, embeddings from its embedder, computed once per distinct text), LoCoMo turns
   repeated (each copy a new thread of 100 turns), written with stores.long_term.put in batches; plus a
   few threads through the real add_turn, so working memory exists.
2. foreign: this process opens the service on the dir and warms it; a real second process
   (`mcp-memory serve` over stdio, same dir and user) adds one turn per round; the in-process
   search_memory right after it (once the file is quiet again) is timed, then the same search again
   (warm, no write between). Also whether that first search finds the new turn.
3. first: a new process opens the service on the dir and sends its first search right away (open time
   and first-search time apart), twice in a row; a second run may load what the first left.
4. rss: --users users of --per-user memories each in one dir; a new process opens the service, searches
   every user round robin a few times, then reports its VmRSS (and the store's index memory if the
   store reports it); then a second new process does the same (a restart: it finds what the first left).
5. http: `mcp-memory serve --transport http` on the largest seeded dir: get_working_memory latency while
   4 other clients loop search_memory, and with nobody searching (baseline), for --seconds each.

Prints markdown tables (with the load average at each figure: the machine may be shared) and writes
JSON (--json). Numbers are wall-clock on this machine; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import random
import socket
import sqlite3
import string
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import locomo
from latency import cpu, percentiles, rss_mb

from mcp_memory import safety
from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.models import Memory, utcnow
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.terms import date_words
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService

USER = "bench"
THREAD_SIZE = 100  # seeded turns per thread
LIVE_THREADS = 3  # threads added through the real add_turn (working memory exists for them)
LIVE_TURNS = 10  # turns in each
BATCH = 500  # memories per long_term.put while seeding
PHASES = ("seed", "foreign", "first", "rss", "http")
START_SECONDS = 120.0  # a server process answering (stdio initialize, GET /health)
CALL_SECONDS = 300.0  # one call, at most (a search may rebuild a 100k index on a busy machine)
CHILD_SECONDS = 900.0  # one measuring child process, at most
STOP_SECONDS = 10.0
INDEX_MEMORY_ENV = "MCP_MEMORY_LONG_TERM__INDEX_MEMORY_MB"


# ---- the machine and the code under test ------------------------------------------------------------


def load() -> str:
    """The 1/5/15-minute load averages, as uptime prints them."""
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "n/a"


def code_under_test() -> dict[str, str]:
    """Which mcp_memory this process imported, and the git commit of the tree it lives in."""
    import mcp_memory

    package = Path(mcp_memory.__file__).resolve().parent
    where = {"mcp_memory": str(package), "commit": "n/a", "modified": "n/a"}
    try:
        where["commit"] = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(package), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.splitlines()
        where["modified"] = f"{len(changed)} file(s) under mcp_memory/ differ from the commit"
    except (OSError, subprocess.SubprocessError):
        pass
    return where


# ---- processes ----------------------------------------------------------------------------------------


def child_env(data_dir: Path, user: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment (PYTHONPATH included: children run the same code) minus MCP_MEMORY_* settings,
    plus the data dir, the user, and the index memory budget when one was given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    env |= {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": user}
    if INDEX_MEMORY_ENV in os.environ:
        env[INDEX_MEMORY_ENV] = os.environ[INDEX_MEMORY_ENV]
    return env | (extra or {})


def server_command() -> list[str]:
    """`mcp-memory` next to this Python (the venv's console script), else `python -m mcp_memory`.
    Both import mcp_memory through PYTHONPATH first, so a worktree on PYTHONPATH is what runs."""
    script = Path(sys.executable).parent / "mcp-memory"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mcp_memory"]


def server_code(cwd: Path) -> str:
    """The mcp_memory a server process started like ours imports (same Python, env, cwd)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import mcp_memory; print(mcp_memory.__file__)"],
        env=child_env(cwd, USER),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return probe.stdout.strip()


def run_child(kind: str, data_dir: Path, cwd: Path, args: list[str], user: str = USER) -> dict[str, Any]:
    """This script as a child process (--child kind): a fresh process on the data dir; its JSON answer
    plus its wall time from start to exit."""
    began = time.perf_counter()
    child = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", kind, *args],
        env=child_env(data_dir, user),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CHILD_SECONDS,
    )
    if child.returncode != 0:
        raise RuntimeError(f"child {kind} failed ({child.returncode}): {child.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    answer["process_s"] = time.perf_counter() - began
    return answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def snapshot_dir(data_dir: Path, sqlite_file: str = "memory.db") -> str:
    """What is in `<data_dir>/<sqlite_file>-index/` (where a store may keep index snapshots)."""
    folder = data_dir / f"{sqlite_file}-index"
    if not folder.is_dir():
        return "absent"
    files = [p for p in folder.rglob("*") if p.is_file()]
    return f"{len(files)} files, {sum(p.stat().st_size for p in files) / 2**20:.1f} MB"


class FileWatch:
    """A connection of our own to the data file, only to see when another connection commits
    (PRAGMA data_version); it never writes."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    async def quiet(self, settle: float = 0.25, longest: float = 10.0) -> int:
        """Wait until nothing was committed for `settle` seconds (at most `longest`): the other process's
        background work after a turn (learning counters) lands before the timed search."""
        deadline = time.perf_counter() + longest
        seen, since = self.version(), time.perf_counter()
        while time.perf_counter() < deadline:
            await anyio.sleep(0.05)
            now = self.version()
            if now != seen:
                seen, since = now, time.perf_counter()
            elif time.perf_counter() - since >= settle:
                break
        return seen

    def close(self) -> None:
        self._conn.close()


# ---- corpus and seeding ---------------------------------------------------------------------------------


class Corpus:
    """LoCoMo turns and questions, with each distinct turn's vector, token count and metadata computed once
    (by the service's embedder and token counter, as add_turn computes them)."""

    def __init__(self, path: str) -> None:
        self.turns, questions = locomo(path)
        # Questions with a quoted title ("The Four Seasons") must match it verbatim and often find
        # nothing: left out, so every search is an ordinary hybrid one.
        self.questions = [q for q in questions if '"' not in q]
        self.vectors: dict[str, list[float]] = {}
        self.tokens: dict[str, int] = {}
        self.metadata: dict[str, dict[str, Any]] = {}
        self.embed_seconds = 0.0

    async def prepare(self, service: MemoryService) -> None:
        if self.vectors:
            return
        began = time.perf_counter()
        distinct = list(dict.fromkeys(self.turns))
        for start in range(0, len(distinct), 64):
            batch = distinct[start : start + 64]
            for text, vector in zip(batch, await service.embedder.embed(batch), strict=True):
                self.vectors[text] = vector.tolist()
        for text in distinct:
            content = check.content(text, service.settings.max_content_chars)
            self.tokens[text] = service.tokens.count(content)
            metadata = check.metadata(None)
            if service.settings.security.flag_instructions:
                metadata = safety.stamp(metadata, content)
            self.metadata[text] = metadata
        self.embed_seconds = time.perf_counter() - began


def seed_dir(data_dir: Path, users: list[str], per_user: int, corpus: Corpus) -> dict[str, Any]:
    """seed() on a new dir, plus the size of the file it made."""
    data_dir.mkdir(parents=True, exist_ok=True)
    row = anyio.run(seed, data_dir, users, per_user, corpus)
    row["file_mb"] = sum(p.stat().st_size for p in data_dir.glob("memory.db*")) / 2**20
    return row


def seeded_batches(
    service: MemoryService, corpus: Corpus, user: str, count: int, start: datetime
) -> Iterator[list[Memory]]:
    """`count` turns as add_turn would store them, in threads of THREAD_SIZE, one second apart from
    `start`, BATCH at a time (built lazily: 100k vectors as Python lists would take a gigabyte)."""
    context_turns = service.settings.search.context_turns
    batch: list[Memory] = []
    previous: list[str] = []
    for i in range(count):
        position = i % THREAD_SIZE
        if position == 0:
            previous = []
        text = corpus.turns[i % len(corpus.turns)]
        moment = start + timedelta(seconds=i)
        # service._index_context: the thread's `context_turns` previous turns, oldest first, and the date.
        context = " ".join([*(previous[-context_turns:] if context_turns else []), date_words(moment)])
        batch.append(
            Memory(
                id=f"turn_{uuid.uuid4().hex}",
                user_id=user,
                thread_id=f"seed-{i // THREAD_SIZE}",
                role="user" if position % 2 == 0 else "assistant",
                type="turn",
                content=text,
                embedding=corpus.vectors[text],
                index_context=context,
                metadata=dict(corpus.metadata[text]),
                created_at=moment,
                token_count=corpus.tokens[text],
            )
        )
        previous.append(text)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def seed(data_dir: Path, users: list[str], per_user: int, corpus: Corpus) -> dict[str, Any]:
    """Fill a fresh data dir: per user, per_user memories, LIVE_THREADS x LIVE_TURNS of them through the
    real add_turn. The service is opened without the start-up warm-up so nothing builds indexes."""
    settings = Settings(user_id=users[0], data_dir=data_dir)
    settings = settings.model_copy(
        update={"long_term": settings.long_term.model_copy(update={"warm_on_start": False})}
    )
    began = time.perf_counter()
    put_seconds = add_seconds = 0.0
    async with open_service(settings) as service:
        await corpus.prepare(service)
        prepared = time.perf_counter()
        live = LIVE_THREADS * LIVE_TURNS
        for user in users:
            seeded = max(0, per_user - live)
            start = utcnow() - timedelta(seconds=seeded + 86_400)
            t0 = time.perf_counter()
            for batch in seeded_batches(service, corpus, user, seeded, start):
                await service.stores.long_term.put(batch)
            put_seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            for n in range(min(live, per_user)):
                text = corpus.turns[(7919 * (n + 1)) % len(corpus.turns)]
                role = "user" if n % 2 == 0 else "assistant"
                await service.add_turn(user, f"live-{n % LIVE_THREADS}", role, text, None, None)
            add_seconds += time.perf_counter() - t0
        embed_seconds = prepared - began
    total = len(users) * per_user
    return {
        "dir": str(data_dir),
        "users": len(users),
        "memories": total,
        "seconds": time.perf_counter() - began,
        "open_and_embed_s": embed_seconds,
        "put_s": put_seconds,
        "put_rows_per_s": (total - len(users) * LIVE_THREADS * LIVE_TURNS) / put_seconds
        if put_seconds
        else 0,
        "add_turn_s": add_seconds,
        "load": load(),
        "at": datetime.now().isoformat(timespec="seconds"),
    }


# ---- 2: the cost of noticing one foreign write ----------------------------------------------------------


def distinctive_word(rng: random.Random) -> str:
    """A word no LoCoMo turn holds (letters only: the text index splits on anything else)."""
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(CALL_SECONDS):
        result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text if result.content else '?'}")  # type: ignore[union-attr]
    return result.structured_content or {}


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


# ---- 3: the first search of a new process ----------------------------------------------------------------


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


# ---- 4: RSS with many users' indexes -----------------------------------------------------------------


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


# ---- 5: get_working_memory over HTTP while others search --------------------------------------------


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


# ---- the run ------------------------------------------------------------------------------------------


def wanted(args: argparse.Namespace) -> dict[str, Any]:
    """Run the phases asked for; every server and child process is stopped before this returns."""
    phases = set(args.phases)
    corpus = Corpus(args.locomo)
    out: dict[str, Any] = {
        "started": datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "code": code_under_test(),
        "index_memory_mb": os.environ.get(INDEX_MEMORY_ENV, "default"),
        "seed": [],
        "foreign": [],
        "first": [],
        "rss": [],
        "http": None,
    }
    with tempfile.TemporaryDirectory(prefix="mcp-memory-shared-bench-") as scratch:
        root = Path(args.workdir) if args.workdir else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        workdir = root / "work"  # children's cwd: no stray .env, no package next to it
        workdir.mkdir(exist_ok=True)
        out["code"]["server_imports"] = server_code(workdir)
        print(f"code under test: {out['code']}", file=sys.stderr)
        largest: Path | None = None
        if phases & {"seed", "foreign", "first", "http"}:
            for size in sorted(args.sizes):
                data_dir = root / f"size-{size}"
                row = seed_dir(data_dir, [USER], size, corpus)
                out["seed"].append(row)
                print(f"seeded {row}", file=sys.stderr)
                largest = data_dir
                if "foreign" in phases:
                    row = anyio.run(foreign_writes, data_dir, workdir, corpus, args.rounds, args.round_budget)
                    row["size"] = size
                    out["foreign"].append(row)
                    print(f"foreign {size}: {row}", file=sys.stderr)
                if "first" in phases:
                    for run in first_searches(data_dir, workdir, corpus, args.first_runs):
                        out["first"].append({"size": size, **run})
                        print(f"first {size}: {out['first'][-1]}", file=sys.stderr)
        if "rss" in phases:
            users = [f"{USER}-{u}" for u in range(args.users)]
            data_dir = root / f"users-{args.users}x{args.per_user}"
            row = seed_dir(data_dir, users, args.per_user, corpus)
            out["seed"].append(row)
            print(f"seeded {row}", file=sys.stderr)
            questions = [corpus.questions[i * 13 % len(corpus.questions)] for i in range(97)]
            out["rss"] = []
            # Twice: the first process builds every user's indexes from the file, the second (a restart)
            # finds what the first left beside it, if the store keeps anything there.
            for start in (1, 2):
                started_load = load()
                answer = run_child(
                    "rss",
                    data_dir,
                    workdir,
                    [
                        *("--child-users", *users),
                        *("--child-rounds", str(args.rss_rounds)),
                        *("--child-questions", json.dumps(questions)),
                    ],
                    user=users[0],  # the one its start-up warm-up builds, as a server's configured user
                )
                out["rss"].append(
                    {
                        "start": start,
                        "users": args.users,
                        "per_user": args.per_user,
                        "load": started_load,
                        "load_end": load(),
                        "at": datetime.now().isoformat(timespec="seconds"),
                        **answer,
                    }
                )
                print(f"rss: {out['rss'][-1]}", file=sys.stderr)
        if "http" in phases and largest is not None:
            server = HttpServer(largest, workdir)
            try:
                up = server.start()
                result = anyio.run(http_bench, server.url, args.seconds, corpus)
                out["http"] = {"memories": max(args.sizes), "health_s": up, **result}
                print(f"http: {out['http']}", file=sys.stderr)
            finally:
                server.stop()
    out["ended"] = datetime.now().isoformat(timespec="seconds")
    return out


def ms(value: float) -> str:
    return "n/a" if value != value else f"{value:.1f}"  # nan != nan


def clock(row: dict[str, Any]) -> str:
    """When the figure was taken (the end of its measurement), local time of day."""
    return str(row.get("at", "?")).split("T")[-1]


def report(out: dict[str, Any]) -> None:
    code = out["code"]
    print(
        f"\n{out['started']} to {out['ended']}; {out['cpu']}, {out['cores']} cores, Python {out['python']}; "
        f"mcp_memory from {code['mcp_memory']} (commit {code['commit']}, {code['modified']}); servers import "
        f"{code.get('server_imports', '?')}; index memory budget: {out['index_memory_mb']}\n"
    )
    if out["seed"]:
        print("Seeding (turns built as add_turn builds them, written with long_term.put)\n")
        print(
            "| data dir | users | memories | total s | open + embed corpus s | build + put s | rows/s | "
            "add_turn s | file MB | time | load 1/5/15 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        )
        for r in out["seed"]:
            print(
                f"| {Path(r['dir']).name} | {r['users']} | {r['memories']:,} | {r['seconds']:.1f} "
                f"| {r['open_and_embed_s']:.1f} | {r['put_s']:.1f} | {r['put_rows_per_s']:,.0f} "
                f"| {r['add_turn_s']:.1f} | {r['file_mb']:.0f} | {clock(r)} | {r['load']} |"
            )
    if out["foreign"]:
        print(
            "\nSearch in this process right after another process's add_turn, and warm (same query again)\n"
        )
        print(
            "| memories | rounds | after write p50 ms | p95 | max | warm p50 ms | p95 | found | "
            "in-process ready s | 2nd process ready s | time | load 1/5/15 (start -> end) |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|"
        )
        for r in out["foreign"]:
            a, w = r["after_write"], r["warm"]
            note = f" ({r['warm_disturbed']} warm disturbed)" if r["warm_disturbed"] else ""
            print(
                f"| {r['memories']:,} | {r['rounds']} | {ms(a['p50_ms'])} | {ms(a['p95_ms'])} "
                f"| {ms(a['max_ms'])} | {ms(w['p50_ms'])} | {ms(w['p95_ms'])} "
                f"| {r['found']}/{r['rounds']}{note} | {r['in_process_ready_s']:.1f} "
                f"| {r['foreign_ready_s']:.1f} | {clock(r)} | {r['load_start']} -> {r['load_end']} |"
            )
    if out["first"]:
        print("\nFirst search of a newly started process (sent right after opening)\n")
        print(
            "| memories | run | index snapshot dir before | open s | first search s | 2nd search ms "
            "| process start to exit s | RSS MB | time | load 1/5/15 |\n|---:|---:|---|---:|---:|---:|---:|---:|---|---|"
        )
        for r in out["first"]:
            print(
                f"| {r['size']:,} | {r['run']} | {r['snapshot_before']} | {r['open_s']:.2f} "
                f"| {r['first_search_s']:.2f} | {r['second_search_ms']:.1f} | {r['process_s']:.1f} "
                f"| {r['rss_mb']:.0f} | {clock(r)} | {r['load']} |"
            )
    if out["rss"]:
        print("\nOne process searching many users round robin (started twice on the same data)\n")
        print(
            "| users x memories | start | rounds | RSS after open MB | RSS after searches MB | index memory MB "
            "| 1st round search p50 ms | max | later rounds p50 ms | max | open s | time | load 1/5/15 |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        )
        for r in out["rss"]:
            rounds = r["round_ms"]
            first_round = percentiles([t / 1000 for t in rounds[0]])
            later = percentiles([t / 1000 for rnd in rounds[1:] for t in rnd])
            index = "n/a" if r["index_memory_bytes"] is None else f"{r['index_memory_bytes'] / 2**20:.0f}"
            print(
                f"| {r['users']} x {r['per_user']:,} | {r['start']} | {len(rounds)} | {r['rss_after_open_mb']:.0f} "
                f"| {r['rss_mb']:.0f} | {index} | {ms(first_round['p50_ms'])} | {ms(first_round['max_ms'])} "
                f"| {ms(later['p50_ms'])} | {ms(later['max_ms'])} | {r['open_s']:.1f} "
                f"| {clock(r)} | {r['load']} -> {r['load_end']} |"
            )
    if out["http"]:
        h = out["http"]
        print(
            f"\nget_working_memory over streamable HTTP at {h['memories']:,} memories, with and without 4 "
            f"clients searching (server up in {h['health_s']:.1f} s, its first search {h['first_search_s']:.1f} s)\n"
        )
        print(
            "| searching clients | get_wm calls | p50 ms | p95 | p99 | max | searches/s | search p50 ms "
            "| p95 | errors | time | load 1/5/15 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        )
        for r in (h["baseline"], h["loaded"]):
            g, s = r["get_working_memory"], r["search_memory"]
            print(
                f"| {r['searchers']} | {g['count']} | {ms(g['p50_ms'])} | {ms(g['p95_ms'])} "
                f"| {ms(g['p99_ms'])} | {ms(g['max_ms'])} | {r['searches_per_s']:.1f} "
                f"| {ms(s['p50_ms'])} | {ms(s['p95_ms'])} "
                f"| {r['get_working_memory_errors'] + r['search_errors']} | {clock(r)} "
                f"| {r['load']} -> {r['load_end']} |"
            )
            if r["first_error"]:
                print(f"\nfirst error: {r['first_error'][:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--locomo", default="../shared/data/locomo/locomo_dev.json", help="locomo_dev.json")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000], help="memories per data dir")
    parser.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    parser.add_argument("--rounds", type=int, default=30, help="foreign writes per size (phase 2)")
    parser.add_argument(
        "--round-budget",
        type=float,
        default=180.0,
        help="phase 2 stops starting rounds after this many seconds per size (3 rounds at least)",
    )
    parser.add_argument("--first-runs", type=int, default=2, help="new processes per size (phase 3)")
    parser.add_argument("--users", type=int, default=10, help="users in the RSS dir (phase 4)")
    parser.add_argument("--per-user", type=int, default=10000, help="memories per user (phase 4)")
    parser.add_argument("--rss-rounds", type=int, default=3, help="round-robin passes over the users")
    parser.add_argument("--seconds", type=float, default=20.0, help="each HTTP measurement (phase 5)")
    parser.add_argument(
        "--index-memory-mb",
        default=None,
        help=f"sets {INDEX_MEMORY_ENV} here and in every child (stores that lack the setting ignore it)",
    )
    parser.add_argument("--workdir", default=None, help="keep the data dirs here instead of a temp dir")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # a measuring child process
    parser.add_argument("--child-query", default="", help=argparse.SUPPRESS)
    parser.add_argument("--child-users", nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--child-rounds", type=int, default=3, help=argparse.SUPPRESS)
    parser.add_argument("--child-questions", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "first-search":
        anyio.run(child_first_search, args.child_query)
        return
    if args.child == "rss":
        anyio.run(child_rss, args.child_users, args.child_rounds, json.loads(args.child_questions))
        return
    if args.index_memory_mb is not None:
        os.environ[INDEX_MEMORY_ENV] = str(args.index_memory_mb)
    out = wanted(args)
    report(out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
