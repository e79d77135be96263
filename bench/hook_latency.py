"""Wall time of each hook event, process start included, at 10,000 memories: what a person waits for.

    .venv/bin/python bench/hook_latency.py ../shared/data/locomo/locomo_dev.json            # 10,000 memories
    .venv/bin/python bench/hook_latency.py ../shared/data/locomo/locomo_dev.json --memories 2000 --rounds 20

A private data dir is filled with `--memories` LoCoMo turns (real text, embedded by the shipped local
model, written straight into the store) spread over 10 projects (temporary git repositories with their
own remotes) of 10 sessions each. Then the installed command `mcp-memory hook claude-code --event <E>`
runs as Claude Code runs it, a new process per event with the JSON payload on stdin, in rounds: each
round fires one of each event in project 0 (UserPromptSubmit with a LoCoMo question, a new session's
SessionStart, Stop after one more exchange appended to a transcript, PostToolUse), so the events share
the machine alike. The first event, which starts the resident server, is timed alone. Also `mcp-memory
--help`. Prints p50 / p95 / max per event in milliseconds; nothing is asserted.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import cli
from bench.harness.data.corpus import locomo
from bench.harness.timing import median_p95_max
from mcp_memory.config import Settings
from mcp_memory.hooks.projects import project_of
from mcp_memory.models import Memory, utcnow
from mcp_memory.service.assembly import open_service
from tests.services.resident import stop_resident
from tests.unit.test_hook_transcripts import Transcript

PROJECTS, SESSIONS = 10, 10
EVENTS = ("UserPromptSubmit", "SessionStart", "Stop", "PostToolUse")


def repo(path: Path, n: int) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", f"https://github.com/bench/p{n}.git"], cwd=path, check=True
    )
    return path


async def fill(data_dir: Path, repos: list[Path], texts: list[str], count: int) -> float:
    settings = Settings(user_id="bench", data_dir=data_dir)
    started = time.monotonic()
    async with open_service(settings) as service:
        per_thread = max(1, count // (PROJECTS * SESSIONS))
        batch: list[Memory] = []
        base = utcnow().timestamp() - count * 60
        for i in range(count):
            project = project_of(repos[(i // (per_thread * SESSIONS)) % PROJECTS])
            thread = project.thread_id(f"old-{(i // per_thread) % SESSIONS}")
            batch.append(
                Memory(
                    id=f"turn_fill{i:06d}",
                    user_id="bench",
                    thread_id=thread,
                    role="user" if i % 2 == 0 else "assistant",
                    type="turn",
                    content=texts[i % len(texts)],
                    created_at=datetime.fromtimestamp(base + i * 60, UTC),
                    token_count=20,
                )
            )
            if len(batch) == 256 or i == count - 1:
                vectors = await service.embedder.embed([m.content for m in batch])
                await service.stores.long_term.put(
                    [m.model_copy(update={"embedding": v}) for m, v in zip(batch, vectors, strict=True)]
                )
                batch = []
    return time.monotonic() - started


def fire(env: dict[str, str], event: str, payload: Mapping[str, object]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(Path(sys.executable).parent / "mcp-memory"), "hook", "claude-code", "--event", event],
        input=json.dumps({**payload, "hook_event_name": event}),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    return (time.perf_counter() - started) * 1000


def percentiles(values: list[float]) -> str:
    p50, p95, most = median_p95_max(values)
    return f"{p50:.0f} | {p95:.0f} | {most:.0f}"


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("locomo", help="path to locomo_dev.json (read where it is, never copied)")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    texts, questions = locomo(args.locomo)
    with tempfile.TemporaryDirectory(prefix="mcp-memory-hook-latency-") as scratch:
        root = Path(scratch)
        data_dir = root / "data"
        repos = [repo(root / f"p{n}", n) for n in range(PROJECTS)]
        filled = anyio.run(fill, data_dir, repos, texts, args.memories)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
        env |= {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "bench"}
        times: dict[str, list[float]] = {event: [] for event in EVENTS}
        try:
            cwd = str(repos[0])
            first = fire(env, "SessionStart", {"session_id": "warm", "cwd": cwd, "source": "startup"})
            sock = data_dir / "hooks" / "server.sock"
            while not sock.exists():
                time.sleep(0.05)
            fire(env, "UserPromptSubmit", {"session_id": "warm", "cwd": cwd, "prompt": questions[0]})
            transcript = Transcript(root / "live.jsonl")
            for n in range(args.rounds):
                question = questions[(n * 7 + 1) % len(questions)]
                prompt = {"session_id": "live", "cwd": cwd, "prompt": question}
                times["UserPromptSubmit"].append(fire(env, "UserPromptSubmit", prompt))
                start = {"session_id": f"new-{n}", "cwd": cwd, "source": "startup"}
                times["SessionStart"].append(fire(env, "SessionStart", start))
                transcript.user(question)
                transcript.say(texts[(n * 13) % len(texts)])
                stop = {"session_id": "live", "cwd": cwd, "transcript_path": str(transcript.path)}
                times["Stop"].append(fire(env, "Stop", stop))
                tool = {
                    "session_id": "live",
                    "cwd": cwd,
                    "tool_name": "Read",
                    "tool_input": {"file_path": "/x"},
                }
                times["PostToolUse"].append(fire(env, "PostToolUse", tool))
        finally:
            stop_resident(data_dir)
        help_times = []
        for _ in range(args.rounds // 2 or 1):
            started = time.perf_counter()
            subprocess.run(
                [str(Path(sys.executable).parent / "mcp-memory"), "--help"], capture_output=True, check=True
            )
            help_times.append((time.perf_counter() - started) * 1000)
    print(
        f"\n{args.memories:,} memories ({PROJECTS} projects x {SESSIONS} sessions; filled in {filled:.0f} s), "
        f"{args.rounds} rounds; {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average after: {os.getloadavg()[0]:.1f}\n"
    )
    print("| event | p50 ms | p95 ms | max ms |\n|---|---:|---:|---:|")
    for event in EVENTS:
        print(f"| {event} | {percentiles(times[event])} |")
    print(f"| `mcp-memory --help` | {percentiles(help_times)} |")
    print(
        f"\nthe first event (starts the resident server, which then loads the model and the store): {first:.0f} ms"
    )


if __name__ == "__main__":
    main()
