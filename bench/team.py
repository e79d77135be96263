"""The hooks against a memory server over the network (issue 57): what a team member's machine pays.

    .venv/bin/python bench/team.py ../shared/data/beam/100K                  # +20 ms each way, conversations 1 and 2
    .venv/bin/python bench/team.py ../shared/data/beam/100K --latency-ms 0   # the same on loopback

The server is `mcp-memory serve --transport http` on 127.0.0.1 (SQLite, the default local ONNX embedder,
a static bearer token for the user `bench`), behind tests/services/latency_proxy.py, which delays every
chunk `--latency-ms` each way (a request and its answer: one round trip of 2 x latency more). The user's
machine is a private data dir signed in with that token (`mcp-memory login URL --token-stdin`, as on a
headless machine); the hooks run as installed, `mcp-memory hook claude-code --event <Event> --server <proxy
URL>`, a new process per event, and so does the courier they start.

1. **Online**: BEAM conversation 1's sessions replayed as Claude Code sessions (bench/_hook_replay.py):
   wall time per event, process start included. Capture events only write the outbox; the prompt's recall
   asks the server. Then: the time until the courier has delivered everything, and whether the server's
   store holds each replayed message once, with its transcript's time.
2. **Questions**: once the server has embedded what it stored, each of the conversation's questions as a
   new session's first prompt (SessionStart + UserPromptSubmit): the prompt's wall time on a settled store,
   and the evidence found in what was injected (runs of 30 / 8 words, as bench/hooks.py counts).
3. **A day offline**: the server stopped, conversation 2 replayed (every hook must exit 0 and inject
   nothing; capture waits in the outbox), the server started again: the time until the outbox is
   delivered (events and messages per second: the courier's throughput on a backlog) and whether each
   message is stored once.

Run time on 2 shared cores: about 6 minutes with the defaults (the model's start twice, two replays).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench.* and tests.services, as hooks.py does
from bench._hook_replay import (
    Hooks,
    capture_check,
    clean_env,
    hook_command,
    project_repo,
    replay,
    stored,
    unembedded,
)
from bench._hooks_report import wall_times
from bench._hooks_subjects import Subject, ask, beam_subjects
from bench.harness import cli, table
from bench.harness.timing import percentile
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.remote import places
from mcp_memory.security.static_tokens import hash_token, new_token
from tests.services.latency_proxy import latency_proxy_process
from tests.services.server_process import free_port

START_SECONDS = 180.0  # the server's start: the model loaded, the store opened
DELIVERY_SECONDS = 900.0
EMBEDDED_SECONDS = 600.0
BUDGET = "1000"


class Server:
    """`mcp-memory serve --transport http` on a fixed port, so it can be stopped and started again."""

    def __init__(self, data_dir: Path, token: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        entry = {
            "sha256": hash_token(token),
            "user_id": "bench",
            "name": "bench",
            "scopes": ["read", "write"],
        }
        self.env = clean_env(data_dir, {}) | {
            "MCP_MEMORY_SECURITY__TOKENS": json.dumps([entry]),
            "MCP_MEMORY_HOOKS__BUDGET_TOKENS": BUDGET,
            # One user's day, not a team's load: the per-principal rate limit is not what is measured.
            "MCP_MEMORY_SECURITY__REQUESTS_PER_SECOND": "100000",
            "MCP_MEMORY_SECURITY__REQUEST_BURST": "100000",
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        began = time.monotonic()
        log = (self.data_dir.parent / "server.log").open("ab")
        self.process = subprocess.Popen(
            [hook_command(), "serve", "--transport", "http", "--port", str(self.port)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        while time.monotonic() - began < START_SECONDS:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                    return time.monotonic() - began
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.2)
        raise SystemExit(f"the server did not start; see {self.data_dir.parent / 'server.log'}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.process = None


def outbox(client: Path, url: str) -> int:
    return len(list(places.outbox_dir(client, url).glob("*.json")))


def delivered(client: Path, url: str, server: Server, expected: int) -> float:
    """Seconds until the outbox is empty and the server's store holds `expected` turns."""
    began = time.monotonic()
    while time.monotonic() - began < DELIVERY_SECONDS:
        if outbox(client, url) == 0 and len(stored(server.data_dir)) >= expected:
            return time.monotonic() - began
        time.sleep(0.2)
    print(f"not delivered within {DELIVERY_SECONDS:.0f} s: {outbox(client, url)} waiting", file=sys.stderr)
    return time.monotonic() - began


def embedded(server: Server) -> None:
    began = time.monotonic()
    while unembedded(server.data_dir) and time.monotonic() - began < EMBEDDED_SECONDS:
        time.sleep(0.5)


def times(hooks: Hooks, since: int) -> dict[str, dict[str, float]]:
    return wall_times(hooks.fired[since:])


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("data", type=Path, help="BEAM's 100K folder")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="added each way (default 20)")
    args = parser.parse_args()
    online, offline = beam_subjects(args.data, 2)
    token = new_token()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as temporary:
        work = Path(temporary)
        tokens = TokenCounter.load("o200k_base", cache_dir=work / "tiktoken")
        for folder in ("server", "transcripts"):
            (work / folder).mkdir()
        server = Server(work / "server" / "data", token)
        started = server.start()
        try:
            with latency_proxy_process("127.0.0.1", server.port, args.latency_ms) as proxy:
                url = f"http://127.0.0.1:{proxy.port}"
                client = work / "client"
                env = clean_env(client, {}) | {"MCP_MEMORY_HOOKS__BUDGET_TOKENS": BUDGET}
                signed_in = subprocess.run(  # as an administrator's token is stored on a headless machine
                    [hook_command(), "login", url, "--token-stdin"],
                    input=token,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if signed_in.returncode != 0:
                    raise SystemExit(f"login --token-stdin failed: {signed_in.stderr}")
                hooks = Hooks(client, env, arguments=("--server", url))
                results = run(hooks, server, client, url, online, offline, work, tokens)
        finally:
            server.stop()
    results |= {"server_start_s": started, "latency_ms_each_way": args.latency_ms}
    report(results)
    table.save(args.json, results)


def run(
    hooks: Hooks,
    server: Server,
    client: Path,
    url: str,
    online: Subject,
    offline: Subject,
    work: Path,
    tokens: TokenCounter,
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    # 1. Online.
    online.repo = project_repo(work / "repos", online.name)
    began = time.monotonic()
    replayed = replay(hooks, online.name, online.sessions, online.repo, work / "transcripts")
    replay_seconds = time.monotonic() - began
    expected = sum(n for roles in replayed["expected"].values() for n in roles.values())
    results["online"] = {
        "events": len(hooks.fired),
        "replay_s": replay_seconds,
        "delivered_after_s": delivered(client, url, server, expected),
        "wall_ms": times(hooks, 0),
        "capture": capture_check(server.data_dir, replayed["expected"], set(replayed["said"])),
    }
    # 2. Questions on a settled store.
    embedded(server)
    since = len(hooks.fired)
    rows = ask(hooks, online, tokens, BUDGET)
    results["questions"] = {
        "n": len(rows),
        "found30": sum(r["found30_both"] for r in rows) / max(1, len(rows)),
        "found8": sum(r["found8_both"] for r in rows) / max(1, len(rows)),
        "tokens_p95": percentile([r["tokens_both"] for r in rows], 0.95),
        "wall_ms": times(hooks, since),
    }
    # 3. A day offline, then the backlog.
    server.stop()
    offline.repo = project_repo(work / "repos", offline.name)
    since = len(hooks.fired)
    gone = replay(hooks, offline.name, offline.sessions, offline.repo, work / "transcripts")
    injected = sum(len(i["context"]) for i in gone["injected"])
    waiting = outbox(client, url)
    before = len(stored(server.data_dir))
    expected_offline = sum(n for roles in gone["expected"].values() for n in roles.values())
    restart = server.start()
    hooks.fire(  # the next session's start wakes the courier (waiting out its backoff) or starts it again
        "SessionStart", {"session_id": "back", "cwd": str(offline.repo), "source": "startup"}, "back"
    )
    seconds = delivered(client, url, server, before + expected_offline)
    results["offline"] = {
        "events": len(hooks.fired) - since - 1,
        "injected_chars": injected,
        "waiting": waiting,
        "max_hook_ms": max(f.seconds for f in hooks.fired[since:-1]) * 1000,
        "wall_ms": times(hooks, since),
        "server_restart_s": restart,
        "delivered_after_s": seconds,
        "events_per_s": waiting / seconds if seconds else 0.0,
        "messages_per_s": expected_offline / seconds if seconds else 0.0,
        # Every stored turn's time is one its transcript holds (the online conversation's are in the store).
        "capture": capture_check(
            server.data_dir, gone["expected"], set(gone["said"]) | set(replayed["said"])
        ),
    }
    results["courier_status"] = places.read_json(places.status_file(client, url))
    return results


def report(results: dict[str, Any]) -> None:
    load = os.getloadavg()[0]
    print(
        f"\nTeam memory through the hooks: {results['latency_ms_each_way']:g} ms added each way; "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load {load:.1f}\n"
    )
    print("| phase | event | n | p50 ms | p95 ms | max ms |\n|---|---|---:|---:|---:|---:|")
    for phase in ("online", "questions", "offline"):
        for event, row in results[phase]["wall_ms"].items():
            print(
                f"| {phase} | {event} | {row['n']:.0f} | {row['p50_ms']:.0f} | {row['p95_ms']:.0f} | "
                f"{row['max_ms']:.0f} |"
            )
    online, questions, offline = results["online"], results["questions"], results["offline"]
    print(
        f"\nOnline: {online['events']} events replayed in {online['replay_s']:.0f} s; everything delivered "
        f"{online['delivered_after_s']:.1f} s after the replay; store: {online['capture']}"
    )
    print(
        f"Questions ({questions['n']}, budget {BUDGET}): evidence found {questions['found30']:.3f} / "
        f"{questions['found8']:.3f} (30- / 8-word runs); injected tokens p95 {questions['tokens_p95']:.0f}"
    )
    print(
        f"Offline: {offline['events']} events with the server down, slowest hook {offline['max_hook_ms']:.0f} ms, "
        f"{offline['injected_chars']} characters injected, {offline['waiting']} events waiting; server back "
        f"after {offline['server_restart_s']:.1f} s; the backlog delivered in {offline['delivered_after_s']:.1f} s "
        f"({offline['events_per_s']:.1f} events/s, {offline['messages_per_s']:.1f} messages/s); "
        f"store: {offline['capture']}"
    )


if __name__ == "__main__":
    main()
