"""Copilot CLI's reply, read from the session log its Stop hook names (mcp_memory/hooks/copilot_events.py).
The lines are shaped as copilot 1.0.102 wrote them (~/.copilot/session-state/<session>/events.jsonl)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from mcp_memory.hooks.copilot_events import TAIL_BYTES, last_reply


def line(kind: str, **data: object) -> str:
    return json.dumps({"type": kind, "data": data, "id": "e", "timestamp": "2026-11-28T22:36:48.050Z"})


def log(path: Path, *lines: str) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_reply_is_the_text_of_the_last_turns_assistant_messages(tmp_path: Path) -> None:
    path = log(
        tmp_path / "events.jsonl",
        line("user.message", content="first question"),
        line("assistant.message", content="First answer.", toolRequests=[]),
        line("user.message", content="look for the folder"),
        line("assistant.message", content="", toolRequests=[{"name": "bash"}]),
        line("tool.execution_complete", success=True, result={"content": "ls: cannot access"}),
        line("assistant.message", content="Let me check.", toolRequests=[{"name": "view"}]),
        line("assistant.message", content="All done here.", toolRequests=[]),
        line("hook.start", hookType="agentStop"),
    )
    assert last_reply(path) == "Let me check.\n\nAll done here."


def test_no_log_no_reply_or_a_cut_line_is_not_an_error(tmp_path: Path) -> None:
    assert last_reply(str(tmp_path / "missing.jsonl")) is None
    path = log(tmp_path / "events.jsonl", line("user.message", content="hi"), '{"type": "assistant.mess')
    assert last_reply(path) is None


def test_the_last_turn_of_a_long_log_is_found(tmp_path: Path) -> None:
    filler = line("assistant.message", content="x" * 1000)
    lines = [filler] * (2 * TAIL_BYTES // len(filler))
    path = log(
        tmp_path / "events.jsonl",
        *lines,
        line("user.message", content="q"),
        line("assistant.message", content="A."),
    )
    assert last_reply(path) == "A."


def test_a_reply_written_after_the_stop_hook_started_is_waited_for(tmp_path: Path) -> None:
    """Copilot CLI 1.0.102 ran its Stop hook before the reply's line was in the log."""
    path = log(
        tmp_path / "events.jsonl", line("user.message", content="q"), line("assistant.message", content="")
    )
    assert last_reply(path) is None

    def write_later() -> None:
        time.sleep(0.3)
        with open(path, "a") as handle:
            handle.write(line("assistant.message", content="Late but here.") + "\n")

    writer = threading.Thread(target=write_later)
    writer.start()
    try:
        assert last_reply(path, wait=10.0) == "Late but here."
    finally:
        writer.join()
