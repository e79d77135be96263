"""GitHub Copilot CLI's reply, read from its session log: its Stop hook names the log (transcript_path,
~/.copilot/session-state/<session>/events.jsonl) but carries no text.

Each line is one event {"type", "data", "id", "timestamp", "parentId"}; a reply is an "assistant.message"
whose data.content is the text (empty when the model only called tools), and "user.message" starts a turn.
The reply of the turn that just stopped is the text of its assistant messages, in order. Only the end of
the file is read. Copilot CLI writes the log behind its events: its Stop hook may run before the reply's
line is in the file (measured with 1.0.102), so the reader looks again for a moment. Standard library only:
this runs in the hook's process.
"""

from __future__ import annotations

import json
import os
import time

TAIL_BYTES = 512_000  # the end of a long session's log holds its last turn


def last_reply(path: str, wait: float = 0.0) -> str | None:
    """The text the agent answered the last prompt with; None when the log cannot be read or has none
    within `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        found = _read_last_reply(path)
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _read_last_reply(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    texts: list[str] = []
    for line in tail.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the first line of the tail may be cut; a line being written may be partial
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
            continue
        if event.get("type") == "user.message":
            texts = []
        elif event.get("type") == "assistant.message":
            content = event["data"].get("content")
            if isinstance(content, str) and content.strip():
                texts.append(content)
    return "\n\n".join(texts) or None
