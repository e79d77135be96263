"""Conversations replayed as Claude Code sessions through the installed hooks (bench/hooks.py's engine):
the hook command run as Claude Code runs it, the transcripts it writes, the replay of a conversation's
sessions, the check of what was stored, and the rule that tells whether a message was injected.

The data (BEAM's or LoCoMo's) comes in as bench.harness.data.beam's Messages: a role, the text, the time it was
said; one project per conversation, one Claude Code session per session of the data.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import server
from bench.harness.data.beam import Message
from mcp_memory.hooks import daemon
from mcp_memory.hooks.projects import project_of
from mcp_memory.search.passages import passages

RUNS = (30, 8)  # an evidence message found: a run of 30 of its words shown (a passage), of 8 (a mention)
SMALL_TALK = ("hi", "thanks!", "ok")
HOOK_TIMEOUT = 30.0
READY_SECONDS = 180.0  # the resident server's start: the model loaded, the store opened
SETTLE_SECONDS = 600.0  # the spool stored and every passage embedded
QUIET_SECONDS = 60.0  # every turn has a vector and the later passages' count has not moved for this long
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
LATER_LINE = re.compile(r"later passages embedded: (\d+) long memories in all, none waiting")
NAMESPACE = uuid.UUID("6f1d3c52-8d4e-4c1b-9a57-2f0f0b6c1e11")


@dataclass
class Fired:
    event: str
    phase: str  # start, replay, question, small_talk
    seconds: float
    context: str


@dataclass
class Hooks:
    """The installed hook command, run as Claude Code runs it, against one private data dir."""

    data_dir: Path
    env: dict[str, str]
    fired: list[Fired] = field(default_factory=list)
    arguments: tuple[
        str, ...
    ] = ()  # after `--event NAME`: `--server URL` for a memory server (bench/team.py)

    def fire(self, event: str, payload: dict[str, Any], phase: str) -> str:
        began = time.perf_counter()
        done = subprocess.run(
            [hook_command(), "hook", "claude-code", "--event", event, *self.arguments],
            input=json.dumps(payload | {"hook_event_name": event}),
            capture_output=True,
            text=True,
            env=self.env,
            cwd=payload["cwd"],  # Claude Code runs its hooks in the project's directory
            timeout=HOOK_TIMEOUT,
        )
        seconds = time.perf_counter() - began
        if done.returncode != 0:
            print(f"{event}: exit {done.returncode}: {done.stderr[-500:]}", file=sys.stderr)
        context = ""
        if done.stdout.strip():
            try:
                context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            except (ValueError, KeyError, TypeError):
                print(f"{event}: not the expected output: {done.stdout[:300]!r}", file=sys.stderr)
        self.fired.append(Fired(event, phase, seconds, context))
        return context

    def start(self, scratch: Path) -> float:
        """A SessionStart in a directory of no project starts the server; then wait until it listens."""
        began = time.perf_counter()
        self.fire(
            "SessionStart", {"session_id": "warm-up", "cwd": str(scratch), "source": "startup"}, "start"
        )
        deadline = time.monotonic() + READY_SECONDS
        while not daemon.running(self.data_dir):
            if time.monotonic() > deadline:
                raise SystemExit(f"the resident server did not start; hooks.log:\n{self.log()[-3000:]}")
            time.sleep(0.2)
        return time.perf_counter() - began

    def stop(self) -> None:
        """SIGTERM the resident server of this data dir (found by its environment), and wait for it."""
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if b"--socket" in cmdline and f"MCP_MEMORY_DATA_DIR={self.data_dir}\0".encode() in environ:
                os.kill(int(pid), signal.SIGTERM)
                pids.append(pid)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)

    def log(self) -> str:
        logs = [self.data_dir / "hooks" / name for name in ("hooks.log.1", "hooks.log")]
        return "".join(p.read_text(errors="replace") for p in logs if p.exists())

    def settle(self) -> float:
        """Wait until the spool is empty, every turn has its vector and the server says every long
        turn's later passages are embedded (as a person asking later would find them)."""
        began = time.monotonic()
        spool = self.data_dir / "hooks" / "spool"
        while time.monotonic() - began < SETTLE_SECONDS:
            if not list(spool.glob("*.json")):
                break
            time.sleep(0.5)
        long_turns = sum(len(passages(content)) > 1 for *_, content in stored(self.data_dir))
        state, changed = None, time.monotonic()
        while time.monotonic() - began < SETTLE_SECONDS:
            done = [int(n) for n in LATER_LINE.findall(self.log())]
            now = (unembedded(self.data_dir), done[-1] if done else 0)
            if now != state:
                state, changed = now, time.monotonic()
            if now[0] == 0 and (now[1] >= long_turns or time.monotonic() - changed > QUIET_SECONDS):
                break
            time.sleep(1.0)
        else:
            print(f"not settled within {SETTLE_SECONDS:.0f} s; asking anyway", file=sys.stderr)
        return time.monotonic() - began


HOOK_COMMAND: list[str] = []  # --hook-command: another checkout's mcp-memory (a base to compare with)


def hook_command() -> str:
    if HOOK_COMMAND:
        return HOOK_COMMAND[0]
    script = Path(sys.executable).parent / "mcp-memory"
    if not script.is_file():
        raise SystemExit(f"the mcp-memory console script is missing at {script}; run `pip install -e .[dev]`")
    return str(script)


def clean_env(data_dir: Path, settings: dict[str, str]) -> dict[str, str]:
    """This process's environment without the developer's MCP_MEMORY_* settings, plus the bench's data
    dir and user (the server's own embedder and log level: the hooks' defaults)."""
    return server.clean_env(data_dir, settings, embedder=None, log_level=None)


def stored(data_dir: Path) -> list[tuple[str, str, str, str]]:
    """(thread, role, content hash, content) of every stored turn."""
    if not (data_dir / "memory.db").exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True)) as db:
        return db.execute(
            "SELECT thread_id, role, content_hash, content FROM memories WHERE type = 'turn'"
        ).fetchall()


def unembedded(data_dir: Path) -> int:
    if not (data_dir / "memory.db").exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True)) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM memories WHERE type = 'turn' AND embedding IS NULL"
        ).fetchone()
    return int(count)


# ---- the replay ----------------------------------------------------------------------------------------


def exchanges(session: list[Message]) -> list[tuple[Message | None, list[Message]]]:
    """(prompt, replies) pairs; replies before any prompt (never in the dev split) get no prompt."""
    out: list[tuple[Message | None, list[Message]]] = []
    for m in session:
        if m.role == "user":
            out.append((m, []))
        elif out:
            out[-1][1].append(m)
        else:
            out.append((None, [m]))
    return out


class Transcript:
    """A Claude Code transcript: one JSONL entry per message, chained by parentUuid."""

    def __init__(self, path: Path, session_id: str, cwd: Path) -> None:
        self.path, self.session_id, self.cwd = path, session_id, str(cwd)
        self.parent: str | None = None
        path.touch()

    def append(self, message: Message) -> None:
        if message.role == "user":
            body: dict[str, Any] = {"role": "user", "content": message.content}
        else:
            body = {
                "role": "assistant",
                "type": "message",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": message.content}],
            }
        entry_id = str(uuid.uuid5(NAMESPACE, f"{self.session_id}/{message.id}"))
        entry = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.332",
            "type": message.role,
            "message": body,
            "uuid": entry_id,
            "timestamp": message.said_at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        }
        with self.path.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")
        self.parent = entry_id


def project_repo(root: Path, name: str) -> Path:
    repo = root / f"conv-{name}"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", f"https://github.com/bench/conv-{name}.git"], cwd=repo, check=True
    )
    return repo


def replay(
    hooks: Hooks,
    name: str,
    sessions: list[list[Message]],
    repo: Path,
    work: Path,
    *,
    flush_race: bool = False,
) -> dict[str, Any]:
    """Every session through the hooks; what UserPromptSubmit and SessionStart injected on the way.
    `flush_race`: each Stop fires before its replies are in the transcript, which gets them right after."""
    injected: list[dict[str, Any]] = []
    expected: dict[str, dict[str, int]] = {}
    for number, session in enumerate(sessions):
        session_id = str(uuid.uuid5(NAMESPACE, f"conv-{name}/session-{number}"))
        transcript = Transcript(work / f"{session_id}.jsonl", session_id, repo)
        base = {
            "session_id": session_id,
            "transcript_path": str(transcript.path),
            "cwd": str(repo),
            "permission_mode": "default",
        }
        start = hooks.fire("SessionStart", base | {"source": "startup"}, "replay")
        injected.append({"event": "SessionStart", "session": number, "context": start})
        for prompt, replies in exchanges(session):
            if prompt is not None:
                context = hooks.fire("UserPromptSubmit", base | {"prompt": prompt.content}, "replay")
                injected.append({"event": "UserPromptSubmit", "session": number, "context": context})
            for m in [prompt] if prompt else []:
                transcript.append(m)
            for m in [] if flush_race else replies:
                transcript.append(m)
            last = replies[-1].content if replies else ""
            hooks.fire("Stop", base | {"last_assistant_message": last, "stop_hook_active": False}, "replay")
            for m in replies if flush_race else []:
                transcript.append(m)
        hooks.fire("SessionEnd", base | {"reason": "prompt_input_exit"}, "replay")
        thread = project_of(repo).thread_id(session_id)
        expected[thread] = {role: sum(m.role == role for m in session) for role in ("user", "assistant")}
    said = sorted({m.said_at.strftime("%Y-%m-%dT%H:%M:%S.000Z") for s in sessions for m in s})
    return {"injected": injected, "expected": expected, "said": said}


def capture_check(data_dir: Path, expected: dict[str, dict[str, int]], said: set[str]) -> dict[str, int]:
    """Replayed prompts and replies stored, missing, stored more than once, and dated otherwise than
    their transcript (`said`: every time the transcripts hold)."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    hashes: dict[str, list[str]] = defaultdict(list)
    capture_time = 0
    with contextlib.closing(sqlite3.connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True)) as db:
        times = db.execute("SELECT created_at FROM memories WHERE type = 'turn'").fetchall()
    for (created_at,) in times:
        moment = datetime.fromisoformat(str(created_at).replace("Z", "+00:00")).astimezone(UTC)
        capture_time += moment.strftime("%Y-%m-%dT%H:%M:%S.000Z") not in said
    for thread, role, content_hash, _ in stored(data_dir):
        counts[thread, role] += 1
        hashes[thread].append(content_hash)
    want = sum(n for roles in expected.values() for n in roles.values())
    kept = sum(min(counts[t, r], n) for t, roles in expected.items() for r, n in roles.items())
    twice = sum(len(hashes[t]) - len(set(hashes[t])) for t in expected)
    others = sum(n for (t, _), n in counts.items() if t not in expected)
    return {
        "replayed": want,
        "stored": kept,
        "missing": want - kept,
        "twice": twice,
        "capture_time": capture_time,
        "other_threads": others,
    }


# ---- what was injected ---------------------------------------------------------------------------------


def normalized(text: str) -> str:
    return " ".join(text.lower().split())


def found(evidence: str, injected: str, run: int) -> bool:
    """A run of the evidence message is in the injected text (both normalized): some `run` consecutive
    words of it, or the whole message when it is shorter (a short message counts when shown whole)."""
    words = normalized(evidence).split()
    if not words:
        return False
    if len(words) <= run:
        return " ".join(words) in injected
    return any(" ".join(words[i : i + run]) in injected for i in range(len(words) - run + 1))


def small_talk(hooks: Hooks, name: str, repo: Path) -> list[int]:
    session_id = str(uuid.uuid5(NAMESPACE, f"conv-{name}/small-talk"))
    base = {
        "session_id": session_id,
        "transcript_path": str(repo.parent / f"{session_id}.jsonl"),
        "cwd": str(repo),
    }
    return [len(hooks.fire("UserPromptSubmit", base | {"prompt": text}, "small_talk")) for text in SMALL_TALK]
