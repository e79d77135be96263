"""What a client's `mcp-memory serve` (stdio) costs now that it relays to the user's resident server
(mcp_memory/relay/): time to answer `initialize` and memory, against serving in its own process.

    .venv/bin/python bench/relay.py                  # the shipped local model (what a user runs)
    .venv/bin/python bench/relay.py --rounds 50 --embedder hash

A private data dir; every process is the installed console script, started as a client starts it, with
one `initialize` line on stdin, timed from the process start to the answer's line on stdout:
- warm: the resident server is up (`--rounds` relays, one after the other): p50 / p95 / max;
- cold: no resident server, its kept initialize answer in the data dir (relay/handshakes.py): the time to
  the initialize answer, then to the first tools/list answer (the resident server loaded); also without
  the kept answer;
- in process (`serve --in-process`): the same initialize, for comparison (`--in-process-rounds`);
- memory: RSS of one relay, of the resident server, and of 3 open relayed sessions plus the resident
  server (which also serves the hooks) against one resident server alone and against 3 in-process
  servers plus the resident server (before the relay). Prints a table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import cli
from bench.harness.timing import median_p95_max
from tests.services.resident import resident_pids, stop_resident

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
TIMEOUT = 120.0


def command() -> str:
    return str(Path(sys.executable).parent / "mcp-memory")


def environment(data_dir: Path, embedder: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    env |= {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "bench"}
    if embedder != "local":
        env["MCP_MEMORY_EMBEDDING__PROVIDER"] = embedder
    return env


class Session:
    """One client session: the console script with pipes, as a client launches it."""

    def __init__(self, env: dict[str, str], workdir: Path, *args: str) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [command(), "serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=workdir,
        )
        self._buffer = b""

    def send(self, message: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: int) -> float:
        """Seconds from the process start to the answer to `request_id`."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + TIMEOUT
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if json.loads(line).get("id") == request_id:
                    return time.monotonic() - self.started
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                raise RuntimeError(f"no answer to request {request_id}")
            self._buffer += chunk

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def initialize(env: dict[str, str], workdir: Path, *args: str) -> float:
    session = Session(env, workdir, *args)
    session.send(INITIALIZE)
    seconds = session.answer(1)
    session.close()
    return seconds


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentiles(seconds: list[float]) -> str:
    p50, p95, most = median_p95_max([s * 1000 for s in seconds])
    return f"p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {most:.0f} ms (n={len(seconds)})"


def open_sessions(count: int, env: dict[str, str], workdir: Path, *args: str) -> list[Session]:
    sessions = [Session(env, workdir, *args) for _ in range(count)]
    for session in sessions:
        session.send(INITIALIZE)
        session.answer(1)
        session.send(INITIALIZED)
        session.send(TOOLS_LIST)
        session.answer(2)  # the service is open and serving this session
    return sessions


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--in-process-rounds", type=int, default=3)
    parser.add_argument("--embedder", default="local", choices=["local", "hash"])
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as scratch:
        workdir = Path(scratch)
        data_dir = workdir / "data"
        env = environment(data_dir, options.embedder)
        try:
            run(options, workdir, data_dir, env)
        finally:
            stop_resident(data_dir)


def run(options: argparse.Namespace, workdir: Path, data_dir: Path, env: dict[str, str]) -> None:
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, embedder {options.embedder}"
    )
    first = Session(env, workdir)  # starts the resident server, and keeps its initialize answer
    first.send(INITIALIZE)
    no_kept_answer = first.answer(1)
    first.send(INITIALIZED)
    first.send(TOOLS_LIST)
    first_tools = first.answer(2)
    first.close()
    warm = [initialize(env, workdir) for _ in range(options.rounds)]
    print(f"initialize through the relay, resident server up: {percentiles(warm)}")
    stop_resident(data_dir)
    cold = Session(env, workdir)
    cold.send(INITIALIZE)
    cold_initialize = cold.answer(1)
    cold.send(INITIALIZED)
    cold.send(TOOLS_LIST)
    cold_tools = cold.answer(2)
    cold.close()
    [resident] = resident_pids(data_dir)
    resident_alone = rss_mb(resident)  # loaded and serving, no session open
    print(
        f"cold start (no resident server), kept answer: initialize {cold_initialize * 1000:.0f} ms, "
        f"first tools/list {cold_tools * 1000:.0f} ms"
    )
    print(
        f"cold start, no kept answer yet (first ever): initialize {no_kept_answer * 1000:.0f} ms, "
        f"first tools/list {first_tools * 1000:.0f} ms"
    )
    in_process = [initialize(env, workdir, "--in-process") for _ in range(options.in_process_rounds)]
    print(f"initialize in process (--in-process): {percentiles(in_process)}")

    sessions = open_sessions(3, env, workdir)
    relays = [rss_mb(s.process.pid) for s in sessions]
    total = rss_mb(resident) + sum(relays)
    print(f"RSS per relay: {', '.join(f'{mb:.1f}' for mb in relays)} MB")
    print(
        f"3 relayed sessions + the resident server (hooks'): {total:.0f} MB = "
        f"{total / resident_alone:.2f}x the resident server alone ({resident_alone:.0f} MB, no session open)"
    )
    for session in sessions:
        session.close()
    before = open_sessions(3, env, workdir, "--in-process")
    in_process_total = resident_alone + sum(rss_mb(s.process.pid) for s in before)
    print(
        f"before the relay, 3 in-process servers + the resident server: {in_process_total:.0f} MB = "
        f"{in_process_total / resident_alone:.2f}x"
    )
    for session in before:
        session.close()


if __name__ == "__main__":
    main()
