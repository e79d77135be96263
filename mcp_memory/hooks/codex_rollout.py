"""A shell command's exit status, read from Codex's own session file, for its PostToolUse hook.

Codex 0.171.0 hands PostToolUse of its shell tool (exec_command, reported as tool_name "Bash") only the
command's output as `tool_response`: no exit code, so a failed command would pass for a success. Codex
writes the finished command to the session's rollout file (the payload's `transcript_path`, JSON Lines)
before the hook runs, as an `item_completed` event whose item is the CommandExecution of that call:

    {"type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "CommandExecution",
     "id": "<call id = the hook's tool_use_id>", "status": "failed", "exit_code": 2, ...}}}

Only the end of the file is read (a session's file grows with every turn), and nothing here raises: when
the entry is not there, the exit status stays unknown. Standard library only (a hook starts per event).
"""

from __future__ import annotations

import json
import os

TAIL_BYTES = 512 * 1024


def exit_code(transcript_path: str | None, call_id: str | None) -> int | None:
    """The exit code Codex recorded for tool call `call_id`, or None when it did not (yet)."""
    if not transcript_path or not call_id:
        return None
    needle = json.dumps(call_id).encode()
    try:
        with open(transcript_path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TAIL_BYTES))
            tail = file.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if needle not in line or b"item_completed" not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        payload = entry.get("payload") if isinstance(entry, dict) else None
        item = payload.get("item") if isinstance(payload, dict) else None
        if isinstance(item, dict) and item.get("id") == call_id:
            code = item.get("exit_code")
            return code if isinstance(code, int) and not isinstance(code, bool) else None
    return None
