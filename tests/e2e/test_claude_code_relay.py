"""The real Claude Code CLI starts the memory's MCP server as installed (`mcp-memory serve` over stdio,
tests/services/claude_code.py): a relay to the resident server its hooks share (mcp_memory/relay/).

What the model's request holds proves the session worked end to end: the memory's tools, listed by the
resident server, and the instructions for a session whose hooks capture it (the server entry sets
MCP_MEMORY_HOOKS__CAPTURE; the resident server was started first, as a hook starts it, without it). Its log holds the
relayed session's requests, which an in-process server would have written to Claude Code's stderr.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_memory.mcp.app import CAPTURED_INSTRUCTIONS
from tests.services.claude_code import run_claude
from tests.services.memory_user import git_project, mcp_memory, user_env
from tests.services.messages_api import MessagesAPI
from tests.services.resident import resident_pids, stop_resident_servers

START_AND_WAIT = """
import sys, time
from pathlib import Path
from mcp_memory.hooks import daemon
data_dir = Path(sys.argv[1])
daemon.start(data_dir, data_dir / "hooks" / "hooks.log")
deadline = time.monotonic() + 100
while not daemon.running(data_dir):
    assert time.monotonic() < deadline, "the resident server did not listen"
    time.sleep(0.05)
"""


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI.running(["Noted."]) as running:
        yield running


def test_claude_codes_mcp_session_is_relayed_to_the_resident_server(tmp_path: Path, api: MessagesAPI) -> None:
    home, data_dir = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    (tmp_path / "tmp").mkdir()
    env = {
        "MCP_MEMORY_DATA_DIR": str(data_dir),
        "MCP_MEMORY_USER_ID": "tester",
        "TMPDIR": str(tmp_path / "tmp"),
    }
    try:
        mcp_memory(home, env, "install", "claude-code", "--scope", "user")
        project = git_project(tmp_path / "work" / "alpha", "https://github.com/acme/alpha.git")
        # The resident server as a hook starts it: without the server entry's MCP_MEMORY_HOOKS__CAPTURE.
        started = subprocess.run(
            [sys.executable, "-c", START_AND_WAIT, str(data_dir)],
            env=user_env(home) | env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert started.returncode == 0, started.stderr
        [resident] = resident_pids(data_dir)
        api.reply_with(["Noted."])

        run = run_claude("remember that the relay works", cwd=project, home=home, api=api, env=env)

        assert run.exit_code == 0, run.describe()
        [request] = run.conversation
        assert request.contains("mcp__memory__search_memory"), "the memory's tools reach the model"
        assert request.contains(CAPTURED_INSTRUCTIONS.splitlines()[2].strip()), (
            "the captured session's instructions"
        )
        assert resident_pids(data_dir) == [resident]
        log = (data_dir / "hooks" / "hooks.log").read_text()
        # Claude Code opens with server/discover (the 2026-07-28 era), then lists what the server has.
        assert "method=server/discover" in log and "method=tools/list" in log, log[-3000:]
    finally:
        stop_resident_servers(data_dir)
