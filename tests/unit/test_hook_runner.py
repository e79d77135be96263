"""The hook command's boundary: whatever arrives and whatever is broken, exit 0, print nothing but the
client's valid output, log one line, and store nothing of an excluded project. (With the resident server:
tests/integration/test_hooks_resident.py; with the real Claude Code: tests/e2e/test_claude_code_hooks.py.)"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_memory.cli import hook
from tests.services.resident import stop_resident


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MCP_MEMORY_HOOKS__EXCLUDE", raising=False)
    yield tmp_path / "data"
    stop_resident(tmp_path / "data")  # a capture event starts one


def fire(client: str, event: str | None, stdin: bytes) -> str:
    out = io.StringIO()
    assert hook.run(client, event, stdin, out) == 0
    return out.getvalue()


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"session_id": 5}', b"\xff\xfe"])
def test_anything_on_stdin_exits_0_and_prints_nothing_invalid(data_dir: Path, stdin: bytes) -> None:
    for client, event in (("claude-code", "PostToolUse"), ("gemini", "AfterTool"), ("cursor", "stop")):
        printed = fire(client, event, stdin)
        assert printed == "" or json.loads(printed) is not None
    fired = json.loads((data_dir / "hooks" / "fired" / "claude-code.json").read_text())
    assert fired["event"] == "PostToolUse"
    if stdin != b'{"session_id": 5}':  # doctor never counts a payload that is no event as the hooks firing
        assert fired["ok"] is False
        assert "not a JSON object" in fired["error"]


def run_cli(args: list[str], data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "MCP_MEMORY_DATA_DIR": str(data_dir), "HOME": str(data_dir.parent)}
    return subprocess.run(
        [sys.executable, "-m", "mcp_memory", *args], input="{}", capture_output=True, text=True, env=env
    )


@pytest.mark.parametrize("args", [["hook", "--help"], ["hook", "claude-code", "--help"], ["hook", "-h"]])
def test_help_prints_usage_and_touches_nothing(tmp_path: Path, args: list[str]) -> None:
    done = run_cli(args, tmp_path / "data")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: mcp-memory hook CLIENT [--event NAME]")
    assert "claude-code, cursor, vscode, codex, gemini" in done.stdout
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["hook"], "no client named"),
        (["hook", "emacs", "--event", "Start"], "unknown client 'emacs'"),
        (["hook", "claude-code", "--event"], "unexpected arguments '--event'"),
        (["hook", "claude-code", "--evnt", "Stop"], "unexpected arguments '--evnt Stop'"),
    ],
)
def test_a_malformed_call_exits_0_says_why_and_creates_nothing(
    tmp_path: Path, args: list[str], said: str
) -> None:
    done = run_cli(args, tmp_path / "data")
    assert done.returncode == 0
    assert done.stdout == ""
    assert said in done.stderr
    assert not (tmp_path / "data").exists()


def test_a_malformed_call_is_logged_where_hooks_ran_before_and_never_counts_as_fired(tmp_path: Path) -> None:
    hooks = tmp_path / "data" / "hooks"
    hooks.mkdir(parents=True)
    done = run_cli(["hook", "emacs"], tmp_path / "data")
    assert done.returncode == 0
    assert "unknown client 'emacs'" in (hooks / "hooks.log").read_text()
    assert not (hooks / "fired").exists()


def test_an_unknown_client_is_logged_not_raised(data_dir: Path) -> None:
    assert fire("emacs", "Start", b"{}") == ""
    assert "emacs" in (data_dir / "hooks" / "hooks.log").read_text()


def test_an_excluded_project_is_neither_captured_nor_recalled(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "work" / "secret-project"
    secret.mkdir(parents=True)
    monkeypatch.setenv("MCP_MEMORY_HOOKS__EXCLUDE", json.dumps([str(tmp_path / "work")]))
    payload = {"session_id": "s", "cwd": str(secret), "prompt": "our launch codes", "prompt_response": "ok"}
    for event in ("BeforeAgent", "AfterAgent", "SessionStart"):
        assert json.loads(fire("gemini", event, json.dumps(payload).encode())) == {}
    assert not (data_dir / "hooks" / "spool").exists()


def test_a_data_dir_that_cannot_be_written_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(blocked))
    payload = {"session_id": "s", "cwd": str(tmp_path), "prompt": "hello there, what did we decide?"}
    started = time.monotonic()
    assert fire("claude-code", "UserPromptSubmit", json.dumps(payload).encode()) == ""
    assert fire("cursor", "beforeSubmitPrompt", json.dumps(payload).encode()) in ("", '{"continue": true}')
    # Nothing waited for: a hook's own deadlines are seconds (hook.ASK_TIMEOUT, hook.START_WAIT), and a
    # hook waiting for a store it cannot have would hang; the bound is far above a loaded machine's run.
    assert time.monotonic() - started < 20.0


def test_the_console_command_needs_no_heavy_import() -> None:
    """A hook is a process per event: the MCP SDK, pydantic and the service stay out of it."""
    probe = (
        "import sys, io; sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'));"
        "from mcp_memory.cli import main\n"
        "try:\n    main(['hook', 'claude-code', '--event', 'PostToolUse'])\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('mcp', 'pydantic', 'anyio', 'numpy', 'mcp_memory.service', 'detect_secrets', 'inspect')"
        " if m in sys.modules]\n"
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("[]"), done.stdout


def test_copilot_clis_stop_spools_the_reply_read_from_its_session_log(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copilot CLI's Stop names the session's events.jsonl but carries no text (captured from 1.0.102)."""
    monkeypatch.setattr(hook, "_poke", lambda root: None)  # no resident server to drain the spool meanwhile
    log = tmp_path / "events.jsonl"
    lines = [
        {"type": "user.message", "data": {"content": "look for the folder"}},
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "bash"}]}},
        {"type": "assistant.message", "data": {"content": "All done here.", "toolRequests": []}},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    payload = {
        "hook_event_name": "Stop",
        "session_id": "cd538f45",
        "timestamp": "2026-11-28T22:36:48.366Z",
        "cwd": str(tmp_path),
        "transcript_path": str(log),
        "stop_reason": "end_turn",
        "stop_hook_active": False,
    }
    assert fire("copilot", "Stop", json.dumps(payload).encode()) == "{}"
    spooled = [json.loads(p.read_text()) for p in (data_dir / "hooks" / "spool").glob("*.json")]
    assert [(entry["kind"], entry["reply"]) for entry in spooled] == [("reply", "All done here.")]
