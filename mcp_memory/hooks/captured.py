"""What one captured event stores, read on the machine where the session ran: a Claude Code transcript
(with the Stop's reply looked for a few seconds), a Gemini CLI transcript, or the event's own text.

Standard library only: the resident server reads its spool with it (service/capture.py), and so does the
courier that delivers a memory server's outbox (remote/courier.py), so a server elsewhere never needs
the transcript. Each item keeps the key its id is derived from, so whichever reads it, a message is
stored once.

Turns keep the transcript's times, never the time of capture: the Stop event's reply, when the transcript
does not hold it yet (Claude Code may run the hook before it writes the reply), is first looked for again
for a few seconds, then stored with the transcript's latest time under the key the transcript's copy will
have.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from mcp_memory.hooks import gemini
from mcp_memory.hooks.transcripts import Captured, Reading, without_recall
from mcp_memory.hooks.transcripts import read as read_transcript

COMPLETE_KINDS = frozenset({"reply", "session_end"})  # the transcript's last exchange is over
STOP_WAIT_SECONDS = 3.0  # how long a Stop's reply is looked for in the transcript before it is stored alone
STOP_LOOK_SECONDS = 0.1


def items_of(entry: dict[str, Any], stop_wait: float = STOP_WAIT_SECONDS) -> list[Captured]:
    """What a spooled event stores (blocking: it may wait up to `stop_wait` for a Stop's reply)."""
    if entry.get("client") == "gemini":
        return gemini.captured_for(entry, from_payload)
    transcript = entry.get("transcript_path")
    if entry.get("client") == "claude-code" and isinstance(transcript, str) and transcript:
        complete = entry.get("kind") in COMPLETE_KINDS
        reply = _stop_reply(entry)
        waited = 0.0
        while True:
            reading = read_transcript(transcript, complete=complete)
            if reply is None or _held_by(reading, reply) is not None or waited >= stop_wait:
                return _with_stop_reply(reading, reply)
            time.sleep(STOP_LOOK_SECONDS)  # the hook ran before the client wrote the reply
            waited += STOP_LOOK_SECONDS
    return from_payload(entry)


def _stop_reply(entry: dict[str, Any]) -> str | None:
    """The final reply a Stop event carries (Claude Code's last_assistant_message), if any."""
    reply = entry.get("reply")
    if entry.get("kind") != "reply" or not isinstance(reply, str):
        return None
    return without_recall(reply).strip() or None


def _held_by(reading: Reading, reply: str) -> Captured | None:
    """The transcript's reply that is the Stop event's: the last exchange's when it ends with it (it may join
    several text blocks, the Stop's being the last), else an earlier one that is it (the Stop of an exchange the transcript has since
    gone past). Compared as the hook spooled it: redacted, whitespace folded."""
    said = _folded(reply)
    found = None
    for item in reading.items:
        if item.kind != "reply":
            continue
        from mcp_memory.redaction import redact_fast  # compiling its patterns: only when needed

        text = _folded(redact_fast(item.content).text)
        if _of_last_exchange(reading, item) and text.endswith(said):
            return item
        if text == said:
            found = item
    return found


def _of_last_exchange(reading: Reading, reply: Captured) -> bool:
    """Whether `reply` is the transcript's last exchange's (nothing opened another exchange after it)."""
    if reading.reply_key is None:
        return False
    opener = reading.reply_key.rsplit(":reply", 1)[0]
    return reply.key.startswith(f"{opener}:reply")


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _with_stop_reply(reading: Reading, reply: str | None) -> list[Captured]:
    """What a Stop event stores of the transcript. The exchange its reply ends is over: an exchange the
    transcript holds after it is not (its reply, if read already, may still grow: left for a later read).
    When the transcript lacks the reply (looked for a few seconds), the Stop's own copy is stored under
    the key the transcript's will have (so it is stored once either way), at the transcript's latest time,
    instead of what the transcript took for the last exchange's reply (narration before tool calls it had
    not written yet)."""
    items = reading.items
    last = (
        items[-1] if items and items[-1].kind == "reply" and _of_last_exchange(reading, items[-1]) else None
    )
    if reply is None or reading.reply_key is None:
        return items
    held = _held_by(reading, reply)
    if held is not None:
        return items if held is last or last is None else items[:-1]
    key = reading.reply_key if last is None else last.key
    return [
        *(items if last is None else items[:-1]),
        Captured(key, "reply", "assistant", reply, reading.latest),
    ]


def from_payload(entry: dict[str, Any]) -> list[Captured]:
    """A client without a transcript we read: the event's own text (already redacted by the hook)."""
    time = entry.get("time") if isinstance(entry.get("time"), str) else None
    kind = entry.get("kind")
    # The same event delivered twice (two clients running one another's hooks, a retried hook) has the
    # same session, kind, time and text: one key.
    what = json.dumps([entry.get("prompt"), entry.get("reply"), entry.get("tool")], sort_keys=True)
    key = f"{kind}:{time or ''}:{hashlib.sha256(what.encode()).hexdigest()[:24]}"
    if kind == "prompt" and entry.get("prompt"):
        return [Captured(key, "prompt", "user", without_recall(str(entry["prompt"])), time)]
    if kind in ("reply", "subagent") and entry.get("reply"):
        text = without_recall(str(entry["reply"]))
        if kind == "subagent":
            return [Captured(key, "subagent", "tool", f"[subagent] {text}", time)]
        return [Captured(key, "reply", "assistant", text, time)]
    tool = entry.get("tool")
    if kind == "tool" and isinstance(tool, dict):
        text = observation(tool)
        paths = tuple(str(p) for p in tool.get("paths") or ())
        return [Captured(key, "observation", "tool", text, time, paths)] if text else []
    return []


def observation(tool: dict[str, Any]) -> str:
    """A tool run as one line: the files it wrote, or the command with its outcome."""
    paths = [str(p) for p in tool.get("paths") or ()]
    excerpt = str(tool.get("excerpt") or "")
    if tool.get("command"):
        command = " ".join(str(tool["command"]).split())[:200]
        if tool.get("failed") or (tool.get("exit_code") not in (None, 0)):
            code = tool.get("exit_code")
            return (
                f"[tool] ran `{command}` → exit {code if code is not None else 'an error'}: {excerpt}".rstrip(
                    ": "
                )
            )
        return f"[tool] ran `{command}` → ok"
    if paths:
        verb = "failed to edit" if tool.get("failed") else "edited"
        return f"[tool] {verb} {', '.join(paths[:10])}" + (
            f": {excerpt}" if tool.get("failed") and excerpt else ""
        )
    return ""
