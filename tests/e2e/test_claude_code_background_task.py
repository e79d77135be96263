"""The real Claude Code CLI with a command run in the background: when the command ends, Claude Code writes
a task notification into the transcript (and sends it to UserPromptSubmit as if it were a prompt), the
model answers it, and Stop fires again. The memory, installed as a user installs it, stores the typed
prompt once, both replies once each, the notification as an observation and never as a prompt, every
turn with the transcript's own time, and no byte of the credential the prompt held; and the same once
more after `--resume` (which appends to the same transcript).

The stand-in model API here answers with a tool call (the suite's tests/services/messages_api.py answers
text only): the first turn starts `sleep 2; echo built` in the background, then says so; the turn the
notification opens says the build finished.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import test_claude_code_hooks as installed
from tests.services.claude_code import QUIET, claude_binary
from tests.services.memory_user import Memory, git_project

PROMPT = "Run the billing build in the background; it reads postgres://app:Abc#123xyz@db.internal/billing"
SECRET = "Abc#123xyz"
AGAIN = "Build it once more."
STARTED = "Build {n} runs in the background; I will report when it ends."
FINISHED = "Build {n} finished: exit code 0."
WAIT_SECONDS = 90.0


class BackgroundTaskAPI:
    """The Messages API as a model that runs one command in the background and answers its notification."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.builds = 0  # commands started so far: each reply names its build
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        if not _conversation(body):  # a call Claude Code makes for itself (a title, a check, a summary)
            return [{"type": "text", "text": "Notes"}], "end_turn"
        blocks = _since_last_answer(body.get("messages") or [])
        if any("<task-notification>" in str(b.get("text", "")) for b in blocks):
            return [{"type": "text", "text": FINISHED.format(n=self.builds)}], "end_turn"
        if any(b.get("type") == "tool_result" for b in blocks):
            return [{"type": "text", "text": STARTED.format(n=self.builds)}], "end_turn"
        if not any(asked in str(b.get("text", "")) for b in blocks for asked in (PROMPT, AGAIN)):
            return [{"type": "text", "text": "Noted."}], "end_turn"  # a request of Claude Code's own
        self.builds += 1
        command = {
            "command": "sleep 2; echo built",
            "description": "Run the build",
            "run_in_background": True,
        }
        tool = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": "Bash", "input": command}
        return [{"type": "text", "text": "Starting the build."}, tool], "tool_use"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                if self.path.split("?")[0].endswith("/count_tokens"):
                    self._send("application/json", json.dumps({"input_tokens": 10}).encode())
                    return
                api.requests.append(body)
                blocks, stop = api.answer(body)
                self._send("text/event-stream", _events(body, blocks, stop))

            def _send(self, kind: str, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _since_last_answer(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The content blocks of the user messages after the model's last answer (Claude Code sends a turn's
    prompt, its context and reminders as several)."""
    answered = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    blocks: list[dict[str, Any]] = []
    for message in messages[answered + 1 :]:
        content = message.get("content")
        blocks += content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
    return blocks


def _conversation(body: dict[str, Any]) -> bool:
    """A turn of the session itself: the request offers the agent's tools (Bash among them)."""
    return any(isinstance(t, dict) and t.get("name") == "Bash" for t in body.get("tools") or [])


def _events(body: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> bytes:
    """A streamed answer, as the Messages API sends it: text deltas, and a tool call's input as JSON."""
    usage = {
        "input_tokens": 100,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


home = installed.home  # the test's own HOME, and the memory installed into Claude Code there
memory = installed.memory


@pytest.fixture
def api() -> Iterator[BackgroundTaskAPI]:
    running = BackgroundTaskAPI()
    running.thread.start()
    yield running
    running.server.shutdown()


def turns(data_dir: Path) -> list[tuple[str, str, str, str]]:
    """(role, what was captured, content, created_at) of every stored turn, oldest first."""
    path = data_dir / "memory.db"
    if not path.exists():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            rows = db.execute(
                "SELECT role, metadata, content, created_at FROM memories WHERE type = 'turn' ORDER BY created_at"
            ).fetchall()
    except sqlite3.Error:  # not created yet, or busy: ask again
        return []
    return [(role, json.loads(meta).get("captured", ""), content, at) for role, meta, content, at in rows]


def settled(installed_memory: Memory) -> list[tuple[str, str, str, str]]:
    """The turns once the final reply is stored, the spool is empty and nothing more arrives."""
    data_dir = installed_memory.data_dir
    deadline = time.monotonic() + WAIT_SECONDS
    seen: list[tuple[str, str, str, str]] | None = None
    while time.monotonic() < deadline:
        now = turns(data_dir)
        spooled = list((data_dir / "hooks" / "spool").glob("*.json"))
        if any(FINISHED.format(n=2) in t[2] for t in now) and not spooled and now == seen:
            return now
        seen = now
        time.sleep(1.0)
    pytest.fail(f"the session was not stored within {WAIT_SECONDS:g}s: {turns(data_dir)}")


def instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def test_a_background_tasks_notification_is_no_prompt_and_its_answer_is_kept_once(
    tmp_path: Path, home: Path, memory: Memory, api: BackgroundTaskAPI
) -> None:
    project = git_project(tmp_path / "work" / "billing", "https://github.com/acme/billing.git")
    # As tests/services/claude_code.py runs it: the test's home, the stand-in, Claude Code's traffic off.
    env = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TZ") if name in os.environ}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        **QUIET,
        **memory.env,
    }

    def claude(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [str(claude_binary()), *args, "--output-format", "json", "--allowedTools", "Bash"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    output = claude("-p", PROMPT)
    assert claude("-p", AGAIN, "--resume", output["session_id"])["session_id"] == output["session_id"]
    conversation = [r for r in api.requests if _conversation(r)]
    assert api.builds == 2 and len(conversation) >= 6, (
        "per run: the prompt, the tool's result, the notification"
    )
    transcripts = list((home / ".claude" / "projects").glob(f"*/{output['session_id']}.jsonl"))
    entries = [json.loads(line) for line in transcripts[0].read_text().splitlines()]
    notes = [e for e in entries if (e.get("origin") or {}).get("kind") == "task-notification"]
    assert len(notes) == 2 and all("<task-notification>" in n["message"]["content"] for n in notes)

    stored = settled(memory)
    users = [t for t in stored if t[0] == "user"]
    assert [(t[1], t[2]) for t in users] == [
        ("prompt", PROMPT.replace(SECRET, "[redacted:url_password]")),
        ("prompt", AGAIN),
    ]
    replies = [t[2] for t in stored if t[0] == "assistant"]
    assert replies == [STARTED.format(n=1), FINISHED.format(n=1), STARTED.format(n=2), FINISHED.format(n=2)]
    assert [t[2] for t in stored if t[2].startswith("[background task]")] == [
        '[background task] Background command "Run the build" completed (exit code 0)'
    ] * 2
    assert not any("task-notification" in t[2] for t in stored)
    said = {instant(e["timestamp"]) for e in entries if isinstance(e.get("timestamp"), str)}
    assert [t for t in stored if instant(t[3]) not in said] == []
    leaks = [str(p) for p in memory.data_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == []
