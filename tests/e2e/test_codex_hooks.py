"""The memory's hooks in the real Codex CLI, end to end, with no network (issue 55).

Codex 0.171.0 (npm, native binary; tests/services/codex_cli.py) runs headless (`codex exec`) against a
stand-in Responses API (tests/services/responses_api.py), as a user whose home is the test's own, in two
git repositories with different `origin`s. The memory is installed the way a user installs it
(`mcp-memory install codex`), then trusted the way install offers it (`--trust`): Codex runs no user hook
until it is trusted, and says nothing when it skips one. What the hooks inject is read where it matters,
in the request the model receives. The tests share one installation and run in order (a few Codex runs
in all); each stops the resident server its hooks started.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HANG_SECONDS, eventually
from tests.services import memory_user
from tests.services.codex_cli import CodexRun, run_codex
from tests.services.memory_user import git_project
from tests.services.resident import stop_resident
from tests.services.responses_api import ResponsesAPI, ToolCall

# The hooks hand a capture to the resident server, which stores it soon after (its first start loads the
# model): a bound against a hang only.
STORED_SECONDS = HANG_SECONDS

DECISION = (
    "For the billing service we decided on PostgreSQL 16 behind pgbouncer, max 200 connections; "
    "Dana owns the migration."
)
DECISION_REPLY = "Got it: PostgreSQL 16 with pgbouncer for billing, Dana on the migration. Retries noted."
QUESTION = "which database did we choose for billing and who owns the migration?"
PATCH = "*** Begin Patch\n*** Add File: billing/retry.py\n+RETRIES = 3\n*** End Patch\n"


@dataclass(frozen=True)
class Memory(memory_user.Memory):
    """The memory installed into Codex, with the user's two projects."""

    alpha: Path
    beta: Path
    installed: str  # what `mcp-memory install codex` printed


def mcp_memory(memory_env: dict[str, str], home: Path, *args: str) -> str:
    """`mcp-memory ARGS` as the user runs it, in their home; its output."""
    env = {
        name: value for name, value in os.environ.items() if not name.startswith(("MCP_MEMORY_", "CODEX_"))
    }
    done = subprocess.run(
        [sys.executable, "-m", "mcp_memory", *args],
        cwd=home,
        env=env | {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")} | memory_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"mcp-memory {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def doctor(memory: Memory) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(mcp_memory(memory.env, memory.home, "doctor", "--json"))
    codex: dict[str, Any] = report["clients"]["codex"]
    return codex


def rows(memory: Memory, sql: str, *params: object) -> list[tuple[Any, ...]]:
    if not memory.database.is_file():
        return []
    db = sqlite3.connect(f"file:{memory.database}?mode=ro", uri=True, timeout=1)
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error:  # not created yet, or busy: ask again
        return []
    finally:
        db.close()


def messages(memory: Memory, text: str) -> list[str]:
    """The stored messages (the turns as the threads keep them) whose content contains `text`."""
    return [row[0] for row in rows(memory, "SELECT content FROM messages WHERE content LIKE ?", f"%{text}%")]


def wait_until_stored(memory: Memory, text: str) -> None:
    eventually(lambda: messages(memory, text), what=f"{text!r} stored", seconds=STORED_SECONDS, every=0.1)


def assert_ran(run: CodexRun, reply: str) -> None:
    assert run.exit_code == 0, run.describe()
    assert run.stdout.strip() == reply, run.describe()
    assert "deprecated" not in run.stderr, run.describe()  # no `[features].codex_hooks` warning


def recalled(run: CodexRun) -> str:
    """What reached the model as the memory's recall (Codex puts hook context in developer messages)."""
    texts = [t for r in run.turns for t in r.input_texts("developer") if "memory-recall" in t]
    return "\n".join(dict.fromkeys(texts))


@pytest.fixture(scope="module")
def api() -> Iterator[ResponsesAPI]:
    with ResponsesAPI.running(["Noted."]) as running:
        yield running


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """`mcp-memory install codex`, as the user runs it (not trusted yet); its processes stopped after."""
    root = tmp_path_factory.mktemp("codex")
    home, data_dir, temporary = root / "home", root / "data", root / "tmp"
    home.mkdir()
    temporary.mkdir()  # where a socket goes when the data dir's path is too long for one
    env = {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "tester", "TMPDIR": str(temporary)}
    try:
        installed = mcp_memory(env, home, "install", "codex")
        yield Memory(
            home=home,
            data_dir=data_dir,
            env=env,
            alpha=git_project(root / "work" / "alpha", "https://github.com/acme/alpha.git"),
            beta=git_project(root / "work" / "beta", "https://github.com/acme/beta.git"),
            installed=installed,
        )
    finally:
        stop_resident(data_dir)


@pytest.fixture(autouse=True)
def _stop_resident_server(memory: Memory) -> Iterator[None]:
    yield
    stop_resident(memory.data_dir)


def test_until_trusted_codex_runs_no_hook_and_doctor_says_nothing_is_captured(
    memory: Memory, api: ResponsesAPI
) -> None:
    assert "mcp-memory install codex --trust" in memory.installed and "/hooks" in memory.installed
    trust = doctor(memory)["user"]["trust"]
    assert trust["status"] == "not trusted", trust
    assert trust["summary"].startswith("installed, not yet trusted: nothing is captured"), trust

    api.reply_with(["Noted."])
    run = run_codex(
        "Remember that the ledger runs nightly.", cwd=memory.alpha, home=memory.home, api=api, env=memory.env
    )

    assert_ran(run, "Noted.")
    assert run.hooks() == [], run.describe()  # skipped, without a word
    assert messages(memory, "ledger runs nightly") == []


def test_once_trusted_a_decision_is_captured_and_reaches_the_next_session_of_that_repo_only(
    memory: Memory, api: ResponsesAPI
) -> None:
    printed = mcp_memory(memory.env, memory.home, "install", "codex", "--trust")
    assert "trusted 6 hooks" in printed, printed
    assert doctor(memory)["user"]["trust"]["status"] == "trusted"

    api.reply_with(
        [
            ToolCall("apply_patch", PATCH, custom=True),
            ToolCall("exec_command", {"cmd": "ls missing-dir"}),
            DECISION_REPLY,
        ]
    )
    first = run_codex(DECISION, cwd=memory.alpha, home=memory.home, api=api, env=memory.env)

    assert_ran(first, DECISION_REPLY)
    ran = first.hooks()
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        assert (event, "Completed") in ran, first.describe()
    assert len(first.turns) == 3, [r.path for r in first.requests]
    wait_until_stored(memory, DECISION_REPLY)
    # The prompt and the reply, each stored once and verbatim; the tool calls as observations.
    assert messages(memory, "PostgreSQL 16 behind pgbouncer") == [DECISION]
    assert messages(memory, "Got it: PostgreSQL 16") == [DECISION_REPLY]
    wait_until_stored(memory, "ls missing-dir")
    assert messages(memory, "[tool] ran `ls missing-dir`")[0].startswith(
        "[tool] ran `ls missing-dir` → exit 2: ls:"
    )
    assert messages(memory, "[tool] edited billing/retry.py") == ["[tool] edited billing/retry.py"]
    fired = doctor(memory)["last_fired"]
    assert fired is not None and fired["ok"] is True, fired

    # Session 2, same repository: the decision reaches the model (the resident server is up by now).
    api.reply_with(["Answered from memory."])
    second = run_codex(QUESTION, cwd=memory.alpha, home=memory.home, api=api, env=memory.env)

    assert_ran(second, "Answered from memory.")
    injected = recalled(second)
    assert "PostgreSQL 16" in injected and "Dana" in injected, second.describe()
    # Session 2 is captured too, once and verbatim, but never what the memory injected into it.
    wait_until_stored(memory, "Answered from memory.")
    assert messages(memory, "which database did we choose") == [QUESTION]
    assert messages(memory, "memory-recall") == [] and messages(memory, "What this project was doing") == []
    assert messages(memory, "PostgreSQL 16 behind pgbouncer") == [DECISION]

    third = run_codex(QUESTION, cwd=memory.beta, home=memory.home, api=api, env=memory.env)
    assert_ran(third, "Answered from memory.")
    assert ("UserPromptSubmit", "Completed") in third.hooks(), third.describe()
    for word in ("PostgreSQL 16", "pgbouncer", "Dana"):
        assert not third.mentions(word), f"{word!r} leaked from alpha into beta"
    trust = doctor(memory)
    assert trust["user"]["trust"]["status"] == "trusted" and trust["last_fired"]["ok"] is True
