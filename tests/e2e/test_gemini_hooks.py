"""The memory's hooks in the real Gemini CLI, end to end, with no network (issue 55).

Gemini CLI 0.61.0 (npm; tests/services/gemini_cli.py) runs headless (`gemini --skip-trust -p`) against a
stand-in Gemini API (tests/services/gemini_api.py) that streams each reply in chunks cut mid-word (as the real
API does, and as Gemini's AfterAgent payload garbles) and can answer with a tool call. The memory is
installed the way a user installs it (`mcp-memory install gemini`), in a private HOME; what its hooks inject
is read where it matters, in the request the model receives, and what they store is read from the SQLite
file. The sessions are shared by the module's tests (each `gemini -p` costs seconds); after each test the
resident server its hooks started is stopped.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HANG_SECONDS, eventually
from tests.services.gemini_api import GeminiAPI, ToolCall, chunks
from tests.services.gemini_cli import GeminiRun, prepare_home, run_gemini
from tests.services.memory_user import git_project, mcp_memory, user_env
from tests.services.resident import stop_resident_servers

# The hooks hand a capture to the resident server, which stores it soon after (its first start loads the
# model): a bound against a hang only.
STORED_SECONDS = HANG_SECONDS
DECISION = (
    "For the billing service we decided on PostgreSQL 16 behind pgbouncer, max 200 connections; "
    "Dana owns the migration. Check the migrations folder."
)
QUESTION = "which database did we choose for billing and who owns the migration?"
COMMAND = "test -d migrations"  # no such folder: exit 1, no output
REPLY = "Noted: PostgreSQL 16 behind pgbouncer for billing, and Dana owns the migration."
ANSWER = "Answered from memory: PostgreSQL 16, and Dana owns it."
OTHER_ANSWER = "Nothing known here."
INJECTED = ("memory-recall", "hook_context", "What this project was doing", "recalled data")


@dataclass(frozen=True)
class World:
    """A user with Gemini CLI and the memory installed, two projects, and the stand-in model API."""

    home: Path
    data_dir: Path
    env: dict[str, str]  # what the user's environment adds for the memory (and the hooks inherit)
    alpha: Path
    beta: Path
    api: GeminiAPI

    def run(self, prompt: str, cwd: Path, replies: list[str | ToolCall]) -> GeminiRun:
        self.api.reply_with(replies)
        return run_gemini(prompt, cwd=cwd, home=self.home, api=self.api, env=self.env)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("gemini")
    home, data_dir, temporary = root / "home", root / "data", root / "tmp"
    home.mkdir()
    temporary.mkdir()
    prepare_home(home)
    env = {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "tester", "TMPDIR": str(temporary)}
    mcp_memory(home, env, "install", "gemini")
    alpha = git_project(root / "work" / "alpha", "https://github.com/acme/alpha.git")
    beta = git_project(root / "work" / "beta", "https://github.com/acme/beta.git")
    try:
        with GeminiAPI.running() as api:
            yield World(home, data_dir, env, alpha, beta, api)
    finally:
        stop_resident_servers(data_dir)


@pytest.fixture(autouse=True)
def _stop_resident_server(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "world" in request.fixturenames:
        stop_resident_servers(request.getfixturevalue("world").data_dir)


@dataclass(frozen=True)
class Sessions:
    first: GeminiRun  # alpha: the decision, a shell command that fails, a reply streamed in chunks
    second: GeminiRun  # alpha: the question
    other: GeminiRun  # beta: the same question


@pytest.fixture(scope="module")
def sessions(world: World) -> Sessions:
    """Three sessions one after the other, as a user has them: the resident server the first one's hooks
    start serves the next ones (a cold start is not what these tests are about)."""
    first = world.run(DECISION, world.alpha, [ToolCall("run_shell_command", {"command": COMMAND}), REPLY])
    assert first.exit_code == 0 and first.response == REPLY, first.describe()
    wait_until(world, lambda: len(turns(world, first)) >= 3, "session 1's prompt, observation and reply")
    second = world.run(QUESTION, world.alpha, [ANSWER])
    assert second.exit_code == 0 and second.response == ANSWER, second.describe()
    wait_until(world, lambda: any(t["content"] == ANSWER for t in turns(world, second)), "session 2's reply")
    other = world.run(QUESTION, world.beta, [OTHER_ANSWER])
    assert other.exit_code == 0 and other.response == OTHER_ANSWER, other.describe()
    wait_until(world, lambda: any(t["content"] == OTHER_ANSWER for t in turns(world, other)), "beta's reply")
    return Sessions(first, second, other)


def turns(world: World, run: GeminiRun) -> list[dict[str, Any]]:
    """The stored turns of the run's session, in order (read-only from the SQLite file)."""
    return [t for t in stored_turns(world) if t["thread_id"].endswith(f".{run.session_id}")]


def stored_turns(world: World) -> list[dict[str, Any]]:
    database = world.data_dir / "memory.db"
    if not database.is_file():
        return []
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return []
    try:
        rows = db.execute(
            "SELECT thread_id, role, content, metadata, created_at FROM messages ORDER BY seq"
        ).fetchall()
    except sqlite3.Error:  # not created yet, or busy: ask again
        return []
    finally:
        db.close()
    keys = ("thread_id", "role", "content", "metadata", "created_at")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def wait_until(world: World, done: Any, what: str) -> None:
    eventually(
        done, what=f"{what} stored", seconds=STORED_SECONDS, every=0.1, detail=lambda: stored_turns(world)
    )


def test_the_stand_in_streams_the_reply_in_pieces_gemini_joins_badly(sessions: Sessions) -> None:
    """The precondition of the reply test: the reply reached Gemini in several chunks cut mid-word, and the
    tool call made Gemini run the command and come back."""
    assert len(chunks(REPLY)) > 1 and not all(piece.endswith(" ") for piece in chunks(REPLY)[:-1])
    first = sessions.first
    assert len(first.conversation) == 2, [r.path for r in first.requests]
    assert first.conversation[1].contains("Exit Code: 1"), "the command's result did not reach the model"


def test_a_prompt_and_its_reply_are_stored_once_and_verbatim(world: World, sessions: Sessions) -> None:
    first = sessions.first
    stored = turns(world, first)
    assert [(t["role"], t["content"]) for t in stored] == [
        ("user", DECISION),
        ("tool", f"[tool] ran `{COMMAND}` → exit 1"),
        ("assistant", REPLY),
    ]
    # The transcript's own times: the prompt's, then the reply's.
    said = next(
        m for m in first.transcript if m.get("type") == "user" and DECISION in json.dumps(m["content"])
    )
    replied = next(m for m in first.transcript if m.get("type") == "gemini" and m.get("content") == REPLY)
    assert stored[0]["created_at"][:23] == said["timestamp"][:23]
    assert stored[2]["created_at"][:23] == replied["timestamp"][:23]
    assert all(json.loads(t["metadata"])["source"] == "hook:gemini" for t in stored)


def test_a_decision_reaches_the_next_session_of_the_same_project_unescaped(sessions: Sessions) -> None:
    request = sessions.second.conversation[0]
    texts = "\n".join(request.user_texts())
    assert "[memory-recall" in texts and "[/memory-recall]" in texts, texts[-3000:]
    assert "PostgreSQL 16" in texts and "Dana" in texts, texts[-3000:]
    assert "&lt;memory-recall" not in request.text and "<memory-recall" not in texts


def test_nothing_injected_is_stored_back(world: World, sessions: Sessions) -> None:
    stored = turns(world, sessions.second)
    assert [(t["role"], t["content"]) for t in stored] == [("user", QUESTION), ("assistant", ANSWER)]
    leaked = [t["content"] for t in stored_turns(world) if any(mark in t["content"] for mark in INJECTED)]
    assert leaked == []
    decisions = [t for t in stored_turns(world) if "PostgreSQL 16 behind pgbouncer, max 200" in t["content"]]
    assert len(decisions) == 1, decisions  # the decision once, never again as session 2's prompt


def test_another_project_gets_nothing_of_it(world: World, sessions: Sessions) -> None:
    # Its hooks ran (its own prompt and reply are stored, in its own project), yet nothing of alpha reached it.
    stored = turns(world, sessions.other)
    assert [(t["role"], t["content"]) for t in stored] == [("user", QUESTION), ("assistant", OTHER_ANSWER)]
    assert {json.loads(t["metadata"])["project"] for t in stored} == {"github.com/acme/beta"}
    for word in ("PostgreSQL 16", "pgbouncer", "Dana"):
        assert not sessions.other.mentions(word), f"{word!r} reached beta's session"


def test_doctor_reports_the_hooks_installed_and_firing(world: World, sessions: Sessions) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "doctor", "--json"],
        cwd=world.alpha,
        env=user_env(world.home) | world.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(done.stdout)
    gemini = report["clients"]["gemini"]
    hooks = gemini["user"]["hooks"]
    assert sorted(hooks["events"]) == sorted(hooks["expected"])
    assert "PreCompress" not in hooks["events"]
    assert gemini["user"]["server"]["installed"] and gemini["user"]["server"]["capture"]
    assert all(program["exists"] for program in hooks["programs"])
    assert gemini["last_fired"]["ok"] is True and gemini["last_fired"]["event"] == "SessionEnd"
    assert report["store"]["healthy"] is True and report["spool"]["waiting"] == 0
