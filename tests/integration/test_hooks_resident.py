"""The hook command as the clients run it (a new `mcp-memory hook` process per event, JSON on stdin),
with the resident server it starts on demand: capture exactly once, recall within the project only, small
talk gets nothing, and a broken store never fails the client and loses nothing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.hooks.daemon import START_BACKOFF_SECONDS
from tests.helpers import HANG_SECONDS, eventually
from tests.services.resident import stop_resident
from tests.services.server_process import mcp_memory_command, server_env
from tests.unit.test_hook_transcripts import Transcript

# The resident server's first start loads the model and opens the store: a bound against a hang only.
STORE_SECONDS = HANG_SECONDS
# A hook never waits for a broken store: its own deadlines are at most hook.START_WAIT (2.5 s, a session
# start waiting for a server just started). This bound catches a hook that waits for the store instead,
# and is far above a hook's start on a loaded machine: it says nothing about speed (bench/ measures it).
HOOK_SECONDS = 20.0


class Hooks:
    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.env = env

    def fire(
        self, client: str, event: str, payload: dict[str, Any]
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.monotonic()
        done = subprocess.run(
            [mcp_memory_command(), "hook", client, "--event", event],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )
        return done, time.monotonic() - started

    def stored(self) -> list[tuple[str, str, str, str]]:
        path = self.data_dir / "memory.db"
        if not path.exists():
            return []
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            try:
                rows = db.execute(
                    "SELECT id, thread_id, role, content FROM memories WHERE type = 'turn' ORDER BY created_at, rowid"
                ).fetchall()
            except sqlite3.OperationalError:
                return []
        return [tuple(r) for r in rows]

    def wait_stored(self, count: int) -> list[tuple[str, str, str, str]]:
        deadline = time.monotonic() + STORE_SECONDS
        while time.monotonic() < deadline:
            rows = self.stored()
            spooled = list((self.data_dir / "hooks" / "spool").glob("*.json"))
            if len(rows) >= count and not spooled:
                time.sleep(0.5)  # anything more would show now
                return self.stored()
            time.sleep(0.2)
        pytest.fail(f"only {len(self.stored())} of {count} turns stored; log:\n{self.log()}")

    def wait_server(self) -> None:
        sock = self.data_dir / "hooks" / "server.sock"
        eventually(sock.exists, what="the resident server listening", seconds=STORE_SECONDS, detail=self.log)

    def log(self) -> str:
        path = self.data_dir / "hooks" / "hooks.log"
        return path.read_text() if path.exists() else "(no hooks.log)"

    def stop(self) -> None:
        stop_resident(self.data_dir)


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    data_dir = tmp_path / "data"
    env = server_env(data_dir, {"MCP_MEMORY_EMBEDDING__PROVIDER": "local"})
    h = Hooks(data_dir, env)
    yield h
    h.stop()


def repo(path: Path, remote: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=path, check=True)
    return path


def claude_session(tmp_path: Path, name: str) -> tuple[Transcript, Path]:
    path = tmp_path / f"{name}.jsonl"
    t = Transcript(path)
    t.user("For the billing service we decided on PostgreSQL 16 behind pgbouncer, max 200 connections.")
    t.say("Noted: PostgreSQL 16 with pgbouncer, 200 connections at most.")
    t.tool("toolu_1", "Write", {"file_path": "/repo/db.py", "content": "FILE BODY " * 100}, "File created")
    t.say("I wrote db.py with the pool settings.")
    return t, path


def test_capture_once_recall_in_the_project_only(hooks: Hooks, tmp_path: Path) -> None:
    alpha = repo(tmp_path / "alpha", "https://github.com/acme/alpha.git")
    beta = repo(tmp_path / "beta", "git@github.com:acme/beta.git")
    t, transcript = claude_session(tmp_path, "s1")
    stop = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(alpha),
        "hook_event_name": "Stop",
    }

    done, _ = hooks.fire("claude-code", "Stop", stop)
    assert done.returncode == 0 and done.stdout == ""
    rows = hooks.wait_stored(3)
    # The prompt, the work, the final reply (the narration before the tool call is not a reply).
    assert [r[2] for r in rows] == ["user", "tool", "assistant"]
    contents = [r[3] for r in rows]
    assert any("PostgreSQL 16" in c for c in contents)
    assert not any("FILE BODY" in c for c in contents)
    # Stop again (it fires after every reply), and a resume: nothing twice.
    hooks.fire("claude-code", "Stop", stop)
    hooks.fire("claude-code", "SessionStart", stop | {"hook_event_name": "SessionStart", "source": "resume"})
    t.user("Also Dana owns the migration.")
    t.say("Dana owns the migration, noted.")
    hooks.fire("claude-code", "Stop", stop)
    rows = hooks.wait_stored(len(rows) + 2)
    assert len({r[3] for r in rows}) == len(rows), "a message was stored twice"
    threads = {r[1] for r in rows}
    assert len(threads) == 1 and threads.pop().endswith(".s1")

    # A new session of the same project: its start is told nothing yet; its first prompt gets what is
    # relevant to it first, then the brief, in one budget; a later prompt only what is relevant to it.
    start = {"session_id": "s2", "cwd": str(alpha), "hook_event_name": "SessionStart", "source": "startup"}
    done, _ = hooks.fire("claude-code", "SessionStart", start)
    assert done.returncode == 0 and done.stdout == ""
    prompt = {
        "session_id": "s2",
        "cwd": str(alpha),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "which database did we choose for billing?",
    }
    done, _ = hooks.fire("claude-code", "UserPromptSubmit", prompt)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "PostgreSQL 16" in context and len(context) <= 10_000
    relevant, brief = context.index("relevant to the prompt"), context.index("What this project was doing")
    assert relevant < brief
    done, _ = hooks.fire(
        "claude-code", "UserPromptSubmit", prompt | {"prompt": "and the pool size for billing?"}
    )
    assert "What this project was doing" not in done.stdout
    # A resumed session is told the brief at its start.
    done, _ = hooks.fire("claude-code", "SessionStart", start | {"session_id": "s3", "source": "resume"})
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "What this project was doing" in context and "<memory-recall" in context

    # Small talk gets nothing; another project gets nothing of this one.
    done, _ = hooks.fire("claude-code", "UserPromptSubmit", prompt | {"prompt": "hi"})
    assert len(done.stdout) <= 300
    for event, payload in (
        ("SessionStart", start | {"cwd": str(beta), "session_id": "b1"}),
        ("UserPromptSubmit", prompt | {"cwd": str(beta), "session_id": "b1"}),
    ):
        done, _ = hooks.fire("claude-code", event, payload)
        assert done.returncode == 0
        assert "PostgreSQL" not in done.stdout and "pgbouncer" not in done.stdout


def test_a_corrupt_store_costs_a_log_line_and_loses_nothing(hooks: Hooks, tmp_path: Path) -> None:
    alpha = repo(tmp_path / "alpha", "https://github.com/acme/alpha.git")
    hooks.data_dir.mkdir(parents=True)
    (hooks.data_dir / "memory.db").write_bytes(b"this is not a database" * 100)
    _, transcript = claude_session(tmp_path, "s1")
    stop = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(alpha),
        "hook_event_name": "Stop",
    }
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        done, took = hooks.fire(
            "claude-code", event, stop | {"hook_event_name": event, "prompt": "billing db?"}
        )
        assert done.returncode == 0, done.stderr
        assert took < HOOK_SECONDS, f"{event} took {took:.2f} s"
        assert done.stdout == "" or json.loads(done.stdout)
    # The event waits in the spool; once the store is good again, it is stored.
    assert list((hooks.data_dir / "hooks" / "spool").glob("*.json"))
    hooks.stop()
    time.sleep(START_BACKOFF_SECONDS + 0.5)  # the failed start's backoff
    (hooks.data_dir / "memory.db").unlink()
    done, _ = hooks.fire(
        "claude-code",
        "SubagentStop",
        {"session_id": "x", "cwd": str(alpha), "hook_event_name": "SubagentStop"},
    )
    assert done.returncode == 0
    rows = hooks.wait_stored(3)
    assert any("PostgreSQL 16" in r[3] for r in rows)
