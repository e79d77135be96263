"""The memory in the real GitHub Copilot CLI, end to end, with no network (issue 55).

Copilot CLI (npm @github/copilot, native binary; tests/services/copilot_cli.py) runs headless (`copilot -p`),
offline, against a stand-in Chat Completions API as its bring-your-own-key provider, as a user whose home is
the test's own. The memory is installed the way a user installs it (`mcp-memory install copilot`): hooks in
~/.copilot/hooks and the MCP server in ~/.copilot/mcp-config.json. Copilot CLI processes no output of its
SessionStart or UserPromptSubmit hooks (its hooks reference: "Output processed: No"), so a later session
recalls through the MCP server: the model calls memory-search_memory. Each test stops the resident server
its hooks started.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.chat_completions import ChatCompletionsAPI, ToolCall
from tests.services.copilot_cli import CopilotRun, run_copilot
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

FIRST_REPLY = "Got it: PostgreSQL 16 with pgbouncer for billing, and Dana on the migration."
FAILING_COMMAND = "ls ./no-such-folder-here"


def assert_ran_cleanly(run: CopilotRun, reply: str) -> None:
    assert run.exit_code == 0, run.describe()
    assert run.stdout.strip() == reply, run.describe()
    assert run.hooks() and all(h.get("success") is True for h in run.hooks()), run.describe()


def tool_results(run: CopilotRun) -> str:
    """What the tools answered, as the model read it in the run's later requests."""
    texts: list[str] = []
    for request in run.conversation:
        for message in request.body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "tool":
                texts.append(json.dumps(message.get("content")))
    return "\n".join(texts)


@pytest.fixture
def api() -> Iterator[ChatCompletionsAPI]:
    with ChatCompletionsAPI.running(["Noted."]) as running:
        yield running


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """`mcp-memory install copilot --scope user`, as the user runs it; its processes stopped after."""
    with installed(tmp_path, "copilot", "--scope", "user") as memory:
        yield memory


def test_a_session_is_captured_and_a_later_one_recalls_it_through_the_mcp_server(
    memory: Memory, tmp_path: Path, api: ChatCompletionsAPI
) -> None:
    alpha = git_project(tmp_path / "work" / "alpha", "https://github.com/acme/alpha.git")

    # Session 1: the decision, and a shell command that fails before the reply.
    api.reply_with(
        [ToolCall("bash", {"command": FAILING_COMMAND, "description": "Look for it"}), FIRST_REPLY]
    )
    first = run_copilot(DECISION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(first, FIRST_REPLY)
    wait_until_stored(memory, FIRST_REPLY)  # read from the session's events.jsonl: Stop carries no text
    wait_until_stored(memory, f"ran `{FAILING_COMMAND}` → exit 2")
    assert stored_rows(memory, DECISION) == [DECISION], "the prompt is stored once, verbatim"
    assert stored_rows(memory, FIRST_REPLY) == [FIRST_REPLY], "the reply is stored once, verbatim"

    # Session 2, same project: the model asks the memory's MCP server, which answers with the decision.
    api.reply_with(
        [ToolCall("memory-search_memory", {"query": "billing database migration"}), "From memory."]
    )
    second = run_copilot(QUESTION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(second, "From memory.")
    answered = tool_results(second)
    assert "PostgreSQL 16" in answered and "Dana" in answered, answered
    wait_until_stored(memory, "From memory.")
    assert stored_rows(memory, QUESTION) == [QUESTION]
    # Nothing recalled is stored back.
    assert not stored(memory, "memory-recall") and not stored(memory, "What this project was doing")

    # doctor tells the truth about what is installed and what ran.
    report = json.loads(mcp_memory(memory.home, memory.env, "doctor", "--json").stdout)
    copilot = report["clients"]["copilot"]
    assert copilot["user"]["server"]["installed"] is True and copilot["user"]["server"]["capture"] is True
    assert copilot["user"]["hooks"]["events"] == sorted(copilot["user"]["hooks"]["expected"])
    assert copilot["last_fired"] is not None and copilot["last_fired"]["ok"] is True, copilot
    assert report["resident_server"]["running"] is True, report["resident_server"]
    assert report["store"]["healthy"] is True
