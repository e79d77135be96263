"""BEAM's development conversations replayed as Claude Code sessions through the installed hooks: what
the hooks store, what they inject, how long each event takes, and what memory costs the model.

    .venv/bin/python bench/hooks.py ../shared/data/beam/100K                      # every dev conversation
    .venv/bin/python bench/hooks.py ../shared/data/beam/100K --conversations 3 --budget 1000,500,1500

(The second is docs/benchmarks.md's "Latest: Hooks": 17 minutes on 2 shared cores; the whole split,
~4,400 hook events, takes about an hour.)

Each conversation (the first N with `--conversations N`) is one project: a temporary git repository
whose remote is https://github.com/bench/conv-<n>.git. Each BEAM session is one Claude Code session,
its transcript written as Claude Code writes it (a user entry and an assistant text entry per message,
chained by uuid, timestamped with the message's BEAM date: its time anchor plus a minute per message),
and the installed command `mcp-memory hook claude-code --event <Event>` run as Claude Code runs it, a
new process per event with the JSON payload on stdin: SessionStart (source startup) at the session's
start; per exchange UserPromptSubmit with the prompt (before the prompt is in the transcript), then the
user and assistant entries appended, then Stop (last_assistant_message, stop_hook_active false);
SessionEnd at its end. One private data dir for the whole run (MCP_MEMORY_DATA_DIR, user `bench`,
the default local ONNX embedder): projects must stay apart in one store, as for one person. Before the
replay a SessionStart in a scratch directory starts the resident server (its time is reported alone).

Then, once the spool is empty and the server has embedded every passage, each probing question that
names its evidence (every ability but abstention) is asked as a new session's first prompt in its
project: SessionStart, then UserPromptSubmit with the question; the injected context is what both
print as hookSpecificOutput.additionalContext. Small talk ("hi", "thanks!", "ok") is sent as a prompt in
each project. With several budgets (`--budget 500,1000,1500`) the resident server is stopped and
restarted with MCP_MEMORY_HOOKS__BUDGET_TOKENS set to each in turn and every question is asked again;
the replay runs at the first (default: the setting's default).

An evidence message counts as found when a run of it is in the injected text: both lowercased and
their whitespace collapsed, some 8 consecutive words of the message (the whole message when it has
fewer) appear as a substring of the injected text. A question's evidence found = the share of its
evidence messages found; reported per ability and overall, for SessionStart + UserPromptSubmit and for
each alone. Injected tokens: tiktoken o200k_base. Hook wall time: each subprocess, process start
included, per event, without the events that (re)start the resident server.

The model's tokens spent on memory per exchange, before the hooks: a model that follows the server's
instructions calls add_turn for the prompt and for its reply; it writes the call's JSON arguments
(output tokens) and reads the result back (input tokens: the result's text content). Measured on the
real `mcp-memory serve` over stdio (the MCP SDK's Client, a fresh data dir) for the first 40 exchanges
of the first conversation. With the hooks: 0 output tokens; input = what UserPromptSubmit injected for
those same exchanges during the replay (SessionStart's injection once per session, reported beside).

Also checked: every prompt and reply replayed is stored once (turns per session thread in the store),
and every turn keeps its transcript's time (turns dated otherwise: `capture_time`). `--flush-race` fires
each Stop before its exchange's replies are in the transcript and appends them right after, as Claude Code
can (its Stop hook may run before the transcript is written); `--capture-only` stops after that check:

    .venv/bin/python bench/hooks.py ../shared/data/beam/100K --conversations 1 --capture-only --flush-race
Prints markdown tables; `--json` writes everything (default bench/results/hooks.json). Cite BEAM when
reporting: Tavakoli et al., "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in
LLMs", arXiv 2510.27246. The data is read from the path given, never copied.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._beam_data import Conversation, Message, conversation_folders, load_conversation
from mcp_memory.hooks import daemon
from mcp_memory.hooks.projects import project_of
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.search.passages import passages

RUN_WORDS = 8
SMALL_TALK = ("hi", "thanks!", "ok")
BEFORE_EXCHANGES = 40
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

    def fire(self, event: str, payload: dict[str, Any], phase: str) -> str:
        began = time.perf_counter()
        done = subprocess.run(
            [hook_command(), "hook", "claude-code", "--event", event],
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
    """This process's environment without the developer's MCP_MEMORY_* settings, plus the bench's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    return env | {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "bench", **settings}


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


def sessions_of(folder: Path, conversation: Conversation) -> list[list[Message]]:
    """BEAM's sessions (chat.json: batches -> sessions -> messages), as the messages of each."""
    by_id = {m.id: m for m in conversation.messages}
    chat = json.loads((folder / "chat.json").read_text())
    return [[by_id[int(m["id"])] for m in session] for batch in chat for session in batch["turns"] if session]


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


# ---- the questions -------------------------------------------------------------------------------------


def normalized(text: str) -> str:
    return " ".join(text.lower().split())


def found(evidence: str, injected: str) -> bool:
    """A run of the evidence message is in the injected text (both normalized): some RUN_WORDS
    consecutive words of it, or the whole message when it is shorter."""
    words = normalized(evidence).split()
    if not words:
        return False
    if len(words) <= RUN_WORDS:
        return " ".join(words) in injected
    return any(" ".join(words[i : i + RUN_WORDS]) in injected for i in range(len(words) - RUN_WORDS + 1))


def ask(
    hooks: Hooks, conversation: Conversation, repo: Path, tokens: TokenCounter, budget: str
) -> list[dict[str, Any]]:
    by_id = {m.id: m.content for m in conversation.messages}
    rows = []
    for number, question in enumerate(conversation.questions):
        session_id = str(uuid.uuid5(NAMESPACE, f"conv-{conversation.name}/question-{number}/{budget}"))
        base = {
            "session_id": session_id,
            "transcript_path": str(repo.parent / f"{session_id}.jsonl"),
            "cwd": str(repo),
            "permission_mode": "default",
        }
        start = hooks.fire("SessionStart", base | {"source": "startup"}, "question")
        prompt = hooks.fire("UserPromptSubmit", base | {"prompt": question.text}, "question")
        texts = {"start": normalized(start), "prompt": normalized(prompt)}
        texts["both"] = texts["start"] + "\n" + texts["prompt"]
        row: dict[str, Any] = {
            "conversation": conversation.name,
            "ability": question.ability,
            "question": question.text,
            "evidence": list(question.evidence),
        }
        for side, text in texts.items():
            hits = [i for i in question.evidence if found(by_id[i], text)]
            row[f"found_{side}"] = len(hits) / len(question.evidence)
        row |= {"tokens_start": tokens.count(start), "tokens_prompt": tokens.count(prompt)}
        row["tokens_both"] = row["tokens_start"] + row["tokens_prompt"]
        rows.append(row)
    return rows


def small_talk(hooks: Hooks, name: str, repo: Path) -> list[int]:
    session_id = str(uuid.uuid5(NAMESPACE, f"conv-{name}/small-talk"))
    base = {
        "session_id": session_id,
        "transcript_path": str(repo.parent / f"{session_id}.jsonl"),
        "cwd": str(repo),
    }
    return [len(hooks.fire("UserPromptSubmit", base | {"prompt": text}, "small_talk")) for text in SMALL_TALK]


# ---- the model's tokens before the hooks ----------------------------------------------------------------


async def add_turn_cost(messages: list[Message], tokens: TokenCounter, work: Path) -> list[dict[str, Any]]:
    """Each message added with add_turn on the real server over stdio, as an instructed model would."""
    params = StdioServerParameters(
        command=hook_command(), args=["serve", "--in-process"], env=clean_env(work / "data", {}), cwd=work
    )
    calls = []
    with (work / "serve.stderr").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            for m in messages:
                arguments = {"thread_id": "beam-conversation", "role": m.role, "content": m.content}
                result = await client.call_tool("add_turn", arguments)
                read_back = "".join(getattr(part, "text", "") for part in result.content)
                calls.append(
                    {
                        "role": m.role,
                        "message": tokens.count(m.content),
                        "output": tokens.count(json.dumps(arguments)),
                        "input": tokens.count(read_back),
                    }
                )
    return calls


# ---- the report ----------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def found_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_ability: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_ability[row["ability"]].append(row)

    def means(group: list[dict[str, Any]]) -> dict[str, float]:
        return {
            side: statistics.fmean(r[f"found_{side}"] for r in group) for side in ("both", "start", "prompt")
        } | {"n": len(group)}

    return {"overall": means(rows), "by_ability": {a: means(g) for a, g in sorted(by_ability.items())}}


def tokens_row(rows: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for side in ("both", "start", "prompt"):
        values = [r[f"tokens_{side}"] for r in rows]
        out |= {f"{side}_p50": percentile(values, 0.5), f"{side}_p95": percentile(values, 0.95)}
    return out


def report(results: dict[str, Any]) -> None:
    print(f"\n{results['setup']}\n")
    print(
        "| budget | evidence found (SessionStart + prompt) | SessionStart alone | UserPromptSubmit alone "
        "| injected tokens p50 / p95 | SessionStart p50 / p95 | UserPromptSubmit p50 / p95 |"
    )
    print("|---:|---:|---:|---:|---|---|---|")
    for budget, run in results["budgets"].items():
        o, t = run["found"]["overall"], run["tokens"]
        print(
            f"| {budget} | {o['both']:.3f} | {o['start']:.3f} | {o['prompt']:.3f} | {t['both_p50']:.0f} / "
            f"{t['both_p95']:.0f} | {t['start_p50']:.0f} / {t['start_p95']:.0f} | {t['prompt_p50']:.0f} / "
            f"{t['prompt_p95']:.0f} |"
        )
    first = next(iter(results["budgets"].values()))
    print(
        f"\nBy ability (budget {next(iter(results['budgets']))}):\n\n| ability | n | found | SessionStart | "
        "UserPromptSubmit |\n|---|---:|---:|---:|---:|"
    )
    for ability, row in first["found"]["by_ability"].items():
        print(f"| {ability} | {row['n']} | {row['both']:.3f} | {row['start']:.3f} | {row['prompt']:.3f} |")
    print("\n| event | n | p50 ms | p95 ms | max ms |\n|---|---:|---:|---:|---:|")
    for event, row in results["wall_time"].items():
        print(f"| {event} | {row['n']} | {row['p50_ms']:.0f} | {row['p95_ms']:.0f} | {row['max_ms']:.0f} |")
    events = ", ".join(f"{ms / 1000:.2f} s" for ms in results["start_events_ms"])
    listening = ", ".join(f"{s:.1f} s" for s in results["server_starts_s"])
    print(
        f"\nResident server (re)starts: the SessionStart that starts it took {events} (hook process); "
        f"the server listened after {listening}"
    )
    print(
        f"Small talk ({', '.join(SMALL_TALK)}): at most {results['small_talk_max_chars']} characters injected"
    )
    print(f"Replay: {results['capture']}; settled {results['settle_s']:.0f} s after the replay")
    c = results["cost"]
    print(
        f"\nModel tokens on memory per exchange (conversation {c['conversation']}, first {c['exchanges']} "
        f"exchanges):\n\n| | output tokens | input tokens |\n|---|---:|---:|"
    )
    print(
        f"| before: add_turn for the prompt and the reply | {c['before_output']:.0f} | {c['before_input']:.0f} |"
    )
    print(f"| after: the hooks (UserPromptSubmit injection) | 0 | {c['after_input']:.0f} |")
    print(
        f"\n(add_turn's result: {c['result_per_call']:.0f} tokens per call for a {c['message_per_call']:.0f}-token "
        f"message on average; SessionStart injected {c['session_start_per_session']:.0f} tokens per session)"
    )


def wall_times(fired: list[Fired]) -> dict[str, dict[str, float]]:
    """Per event, every run but the (re)starts; and per event and phase (the replay: while the server
    stores and embeds what came before; questions and small talk: once it has)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for f in fired:
        if f.phase != "start":
            groups[f.event].append(f.seconds * 1000)
            groups[f"{f.event}, {f.phase}"].append(f.seconds * 1000)
    order = [
        key
        for event in EVENTS
        for key in sorted(groups)
        if key.split(",")[0] == event and (key == event or len(groups[key]) < len(groups[event]))
    ]
    return {
        key: {
            "n": len(groups[key]),
            "p50_ms": percentile(groups[key], 0.5),
            "p95_ms": percentile(groups[key], 0.95),
            "max_ms": max(groups[key]),
        }
        for key in order
    }


@dataclass
class Beam:
    folder: Path
    conversation: Conversation
    repo: Path = Path()
    replayed: dict[str, Any] = field(default_factory=dict)


def measure(
    beams: list[Beam],
    budgets: list[str],
    work: Path,
    tokens: TokenCounter,
    *,
    flush_race: bool = False,
    capture_only: bool = False,
) -> dict[str, Any]:
    """Replay every conversation at the first budget, then ask every question at each budget."""

    def env_at(budget: str) -> dict[str, str]:
        setting = {} if budget == "default" else {"MCP_MEMORY_HOOKS__BUDGET_TOKENS": budget}
        return clean_env(work / "data", {"MCP_MEMORY_LOG_LEVEL": "INFO"} | setting)

    hooks = Hooks(work / "data", env_at(budgets[0]))
    out: dict[str, Any] = {"server_starts_s": [], "budgets": {}}
    talk: list[int] = []
    try:
        out["server_starts_s"].append(hooks.start(work / "nowhere"))
        kept = work / "replayed.json"
        if kept.exists():  # --work with a finished replay: its store is asked again, not replayed
            saved = json.loads(kept.read_text())
            for beam in beams:
                beam.repo = work / "projects" / f"conv-{beam.conversation.name}"
                beam.replayed = saved["replayed"][beam.conversation.name]
            out["settle_s"], out["capture"] = saved["settle_s"], saved["capture"]
        else:
            for beam in beams:
                name = beam.conversation.name
                beam.repo = project_repo(work / "projects", name)
                began = time.monotonic()
                sessions = sessions_of(beam.folder, beam.conversation)
                beam.replayed = replay(hooks, name, sessions, beam.repo, work, flush_race=flush_race)
                print(f"conversation {name} replayed in {time.monotonic() - began:.0f} s", file=sys.stderr)
            out["settle_s"] = hooks.settle()
            expected = {t: n for b in beams for t, n in b.replayed["expected"].items()}
            said = {t for b in beams for t in b.replayed["said"]}
            out["capture"] = capture_check(hooks.data_dir, expected, said)
            replayed = {b.conversation.name: b.replayed for b in beams}
            kept.write_text(
                json.dumps({"replayed": replayed, "settle_s": out["settle_s"], "capture": out["capture"]})
            )
        print(f"capture: {json.dumps(out['capture'])}", file=sys.stderr)
        for number, budget in enumerate([] if capture_only else budgets):
            if number:
                hooks.stop()
                hooks.env = env_at(budget)
                out["server_starts_s"].append(hooks.start(work / "nowhere"))
            rows = []
            for beam in beams:
                rows += ask(hooks, beam.conversation, beam.repo, tokens, budget)
                talk += small_talk(hooks, beam.conversation.name, beam.repo)
            out["budgets"][budget] = {
                "found": found_table(rows),
                "tokens": tokens_row(rows),
                "questions": rows,
            }
            print(f"budget {budget}: every question asked", file=sys.stderr)
    finally:
        hooks.stop()
    replayed = [
        tokens.count(i["context"])
        for b in beams
        for i in b.replayed["injected"]
        if i["event"] == "UserPromptSubmit"
    ]
    return out | {
        "wall_time": wall_times(hooks.fired),
        "start_events_ms": [f.seconds * 1000 for f in hooks.fired if f.phase == "start"],
        "small_talk_max_chars": max(talk, default=0),
        "replay_prompt_tokens": {"p50": percentile(replayed, 0.5), "p95": percentile(replayed, 0.95)},
        "fired": [{"event": f.event, "phase": f.phase, "ms": f.seconds * 1000} for f in hooks.fired],
    }


def model_cost(beam: Beam, work: Path, tokens: TokenCounter) -> dict[str, Any]:
    """Before (add_turn by the model) and after (hooks) on the first exchanges of one conversation."""
    messages = [m for session in sessions_of(beam.folder, beam.conversation) for m in session]
    firsts = [(p, r) for p, r in exchanges(messages) if p is not None][:BEFORE_EXCHANGES]
    (work / "before").mkdir()
    calls = anyio.run(add_turn_cost, [m for p, r in firsts for m in [p, *r]], tokens, work / "before")
    injected = beam.replayed["injected"]
    prompts = [i for i in injected if i["event"] == "UserPromptSubmit"][: len(firsts)]
    return {
        "conversation": beam.conversation.name,
        "exchanges": len(firsts),
        "before_output": sum(c["output"] for c in calls) / len(firsts),
        "before_input": sum(c["input"] for c in calls) / len(firsts),
        "after_input": statistics.fmean(tokens.count(i["context"]) for i in prompts),
        "session_start_per_session": statistics.fmean(
            tokens.count(i["context"]) for i in injected if i["event"] == "SessionStart"
        ),
        "result_per_call": statistics.fmean(c["input"] for c in calls),
        "message_per_call": statistics.fmean(c["message"] for c in calls),
        "calls": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="BEAM's 100K folder (../shared/data/beam/100K)")
    parser.add_argument("--conversations", type=int, help="the first N dev conversations (default: all)")
    parser.add_argument(
        "--budget",
        default="",
        help="MCP_MEMORY_HOOKS__BUDGET_TOKENS, or several: 500,1000,1500 (every question asked at each, the "
        "replay at the first; default: the setting's default)",
    )
    parser.add_argument("--json", type=Path, default=Path("bench/results/hooks.json"))
    parser.add_argument("--flush-race", action="store_true", help="each Stop before its replies are written")
    parser.add_argument("--capture-only", action="store_true", help="the replay and its capture check only")
    parser.add_argument(
        "--work",
        type=Path,
        help="keep the replay's store here; a later run with the same folder skips the replay and asks again",
    )
    parser.add_argument(
        "--hook-command",
        type=Path,
        help="the mcp-memory to ask with (another checkout's .venv/bin/mcp-memory)",
    )
    args = parser.parse_args()
    budgets = [b.strip() for b in args.budget.split(",") if b.strip()] or ["default"]
    beams = [Beam(f, load_conversation(f)) for f in conversation_folders(args.data)[: args.conversations]]
    began, load_before = time.monotonic(), os.getloadavg()[0]
    if args.hook_command:
        HOOK_COMMAND.append(str(args.hook_command.resolve()))
    with contextlib.ExitStack() as stack:
        if args.work:  # kept: a later run with the same --work asks the same store again, without a replay
            work = args.work.resolve()
            work.mkdir(parents=True, exist_ok=True)
            (work / "nowhere").mkdir(exist_ok=True)
            for old in ("before", "tiktoken"):
                shutil.rmtree(work / old, ignore_errors=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-memory-hooks-")))
            (work / "nowhere").mkdir()
        tokens = TokenCounter.load("o200k_base", cache_dir=work / "tiktoken")
        results = measure(
            beams, budgets, work, tokens, flush_race=args.flush_race, capture_only=args.capture_only
        )
        if args.capture_only:
            print(json.dumps(results["capture"]))
            return
        results["cost"] = model_cost(beams[0], work, tokens)
    messages = sum(len(b.conversation.messages) for b in beams)
    questions = sum(len(b.conversation.questions) for b in beams)
    results["setup"] = (
        f"BEAM 100K dev, {len(beams)} conversations ({messages} messages, {questions} questions with evidence); "
        f"budgets {', '.join(budgets)}; {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {time.monotonic() - began:.0f} s in all; load average {load_before:.1f} "
        f"before, {os.getloadavg()[0]:.1f} after"
    )
    report(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
