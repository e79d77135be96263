"""The memory in the real OpenCode CLI, end to end, with no network (issue 55).

OpenCode (npm opencode-ai, native binary; tests/services/opencode.py) runs headless (`opencode run`) against
a stand-in Chat Completions API (tests/services/chat_completions.py), as a user whose home is the test's own.
The memory is installed the way a user installs it (`mcp-memory install opencode`): a plugin in OpenCode's
plugin folder that hands each event to `mcp-memory hook opencode`, and the MCP server in opencode.json.
What it injects is read where it matters: in the system prompt the model receives. Each test stops the
resident server its hooks started.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.chat_completions import ChatCompletionsAPI, ToolCall
from tests.services.memory_user import (
    DECISION,
    QUESTION,
    Memory,
    git_project,
    installed,
    mcp_memory,
    stored,
    stored_rows,
    wait_until_stored,
)
from tests.services.opencode import OpenCodeRun, run_opencode

FIRST_REPLY = "Got it: PostgreSQL 16 with pgbouncer for billing, and Dana on the migration."
FAILING_COMMAND = "ls ./no-such-folder-here"


def assert_ran_cleanly(run: OpenCodeRun, reply: str) -> None:
    assert run.exit_code == 0, run.describe()
    assert run.reply == reply, run.describe()
    assert not [e for e in run.events if e.get("type") == "error"], run.describe()


@pytest.fixture
def api() -> Iterator[ChatCompletionsAPI]:
    with ChatCompletionsAPI.running(["Noted."]) as running:
        yield running


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """`mcp-memory install opencode --scope user`, as the user runs it; its processes stopped after."""
    with installed(tmp_path, "opencode", "--scope", "user") as memory:
        yield memory


def test_a_decision_reaches_a_later_session_of_the_same_project_and_not_another(
    memory: Memory, tmp_path: Path, api: ChatCompletionsAPI
) -> None:
    alpha = git_project(tmp_path / "work" / "alpha", "https://github.com/acme/alpha.git")
    beta = git_project(tmp_path / "work" / "beta", "https://github.com/acme/beta.git")

    # Session 1: the decision, and a shell command that fails before the reply.
    api.reply_with(
        [ToolCall("bash", {"command": FAILING_COMMAND, "description": "Look for it"}), FIRST_REPLY]
    )
    first = run_opencode(DECISION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(first, FIRST_REPLY)
    wait_until_stored(memory, FIRST_REPLY)
    wait_until_stored(memory, f"ran `{FAILING_COMMAND}` → exit")
    assert stored_rows(memory, DECISION) == [DECISION], "the prompt is stored once, verbatim"
    assert stored_rows(memory, FIRST_REPLY) == [FIRST_REPLY], "the reply is stored once, verbatim"

    # Session 2, same project: what was decided reaches the model's system prompt.
    api.reply_with(["Answered from memory."])
    second = run_opencode(QUESTION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(second, "Answered from memory.")
    system = second.system_prompt(second.conversation[0])
    tools = [t.get("function", {}).get("name", "") for t in second.conversation[0].body["tools"]]
    assert [t for t in tools if t.startswith("memory_")], f"no tool of the memory's MCP server: {tools}"
    assert "PostgreSQL 16" in system and "Dana" in system, system
    wait_until_stored(memory, "Answered from memory.")
    assert stored_rows(memory, QUESTION) == [QUESTION]
    # Nothing the memory injected is stored back.
    assert not stored(memory, "memory-recall") and not stored(memory, "What this project was doing")

    # Session 3, another project (another git origin): nothing of alpha's.
    third = run_opencode(QUESTION, cwd=beta, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(third, "Answered from memory.")
    for word in ("PostgreSQL 16", "pgbouncer"):
        assert not third.mentions(word), f"{word!r} leaked from alpha into beta"

    # doctor tells the truth about what is installed and what ran.
    report = json.loads(mcp_memory(memory.home, memory.env, "doctor", "--json").stdout)
    opencode = report["clients"]["opencode"]
    assert opencode["user"]["server"]["installed"] is True
    assert opencode["user"]["hooks"]["events"] == sorted(opencode["user"]["hooks"]["expected"])
    assert opencode["last_fired"] is not None and opencode["last_fired"]["ok"] is True, opencode
    assert report["resident_server"]["running"] is True
    assert report["store"]["healthy"] is True


def test_a_broken_store_never_makes_opencode_fail(
    memory: Memory, tmp_path: Path, api: ChatCompletionsAPI
) -> None:
    """The data dir is a file: every hook the plugin runs fails inside, and OpenCode answers as if none ran."""
    alpha = git_project(tmp_path / "work" / "alpha", "https://github.com/acme/alpha.git")
    memory.data_dir.write_text("not a directory\n")
    api.reply_with([ToolCall("bash", {"command": FAILING_COMMAND, "description": "Look for it"}), "Noted."])

    first = run_opencode(DECISION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    api.reply_with(["Noted."])
    second = run_opencode(QUESTION, cwd=alpha, home=memory.home, api=api, env=memory.env)

    for run in (first, second):
        assert_ran_cleanly(run, "Noted.")
        assert "PostgreSQL" not in run.system_prompt(run.conversation[0])
