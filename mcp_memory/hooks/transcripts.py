"""What a Claude Code transcript holds worth keeping, in the order it happened.

A transcript is JSON Lines under ~/.claude/projects/: one entry per message part (a thinking block, a
text block, a tool call, a tool's result), plus bookkeeping (file snapshots, hook summaries, compaction
boundaries). Kept, each under a key made of the entry's own uuid (or the tool call's id), so reading the
same transcript again, after a resume or a compaction, finds the same keys:

- every prompt the person typed (not tool results, slash-command echoes, meta messages or reminders);
- the final reply of each exchange: the text the agent wrote after its last tool call;
- compact observations of the work: files created and edited (by path), commands run with their exit
  status and the first lines of an error, the todo list, subagents' results (an excerpt);
- the client's own compaction summaries.

Never kept: thinking, file contents, tool output beyond an error's first lines, and the memory's own
injected context (RECALL_TAG spans, wherever they appear).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

CapturedKind = Literal["prompt", "reply", "observation", "compaction", "subagent"]

RECALL_TAG = "memory-recall"  # what the hooks inject is wrapped in <memory-recall ...>...</memory-recall>
# The marker as injected (<memory-recall ...>), as Gemini CLI escapes hook output (&lt;memory-recall ...&gt;),
# and as we mark it for Gemini (hooks/gemini.py: [memory-recall ...]); each closed by its own form.
_RECALLED = re.compile(
    "|".join(
        rf"{o}{RECALL_TAG}\b.*?(?:{o}/{RECALL_TAG}\s*{c}|\Z)"
        for o, c in (("<", ">"), ("&lt;", "&gt;"), (r"\[", r"\]"))
    ),
    re.DOTALL | re.IGNORECASE,
)
_REMINDER = re.compile(r"<system-reminder>.*?(</system-reminder>|\Z)", re.DOTALL)
_COMMAND_ECHO = re.compile(
    r"^\s*<(command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    r"bash-input|bash-stdout|bash-stderr|user-prompt-submit-hook)>"
)
_EXIT = re.compile(r"^Exit code (\d+)")
EDITS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
SHELLS = frozenset({"Bash", "BashOutput", "PowerShell"})
SUBAGENTS = frozenset({"Task", "Agent"})
COMMAND_CHARS = 200
ERROR_CHARS = 300
ERROR_LINES = 3
SUBAGENT_CHARS = 800
TASK_LIST_CHARS = 500


@dataclass(frozen=True)
class Captured:
    key: str  # stable across re-reads: the transcript entry's uuid or the tool call's id
    kind: CapturedKind
    role: Literal["user", "assistant", "tool", "system"]
    content: str
    time: str | None  # the transcript's timestamp (ISO 8601)
    paths: tuple[str, ...] = ()  # an observation's files


def without_recall(text: str) -> str:
    """The text less any context the memory itself injected (never captured back)."""
    if RECALL_TAG not in text:
        return text
    return _RECALLED.sub("", text).strip()


def read_transcript(path: str | Path, *, complete: bool) -> list[Captured]:
    """What the transcript holds worth keeping, in order. `complete`: the last exchange is over (Stop,
    SessionEnd); otherwise its reply is left for a later read, since more of it may still come."""
    return list(captured(_entries(Path(path)), complete=complete))


def _entries(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue  # a line being written, or damaged: the rest still counts
            if isinstance(entry, dict):
                yield entry


@dataclass
class _Exchange:
    prompt: Captured | None = None
    items: list[Captured] = field(default_factory=list)  # observations, subagents, compactions
    tail: list[tuple[str, str, str | None]] = field(default_factory=list)  # (uuid, text, time): the reply


@dataclass
class _Reader:
    """One pass over a transcript: tool calls wait for their results; an exchange ends at the next prompt."""

    exchange: _Exchange = field(default_factory=_Exchange)
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # tool id -> (name, input)

    def user(self, entry: dict[str, Any], content: object, uuid: str, time: str | None) -> Iterator[Captured]:
        if entry.get("isCompactSummary"):
            # The exchange before it is over (a compaction comes between exchanges, or ends one).
            yield from self.next_exchange(None)
            text = _text_of(content)
            if text:
                yield Captured(uuid, "compaction", "system", f"[compaction summary] {text}", time)
            return
        prompt = _prompt_of(content)
        if prompt:
            yield from self.next_exchange(Captured(uuid, "prompt", "user", prompt, time))
            return
        for block in _blocks(content, "tool_result"):
            key = str(block.get("tool_use_id"))
            call = self.calls.pop(key, None)
            observed = None if call is None else _observation(call[0], call[1], block, time, key)
            if observed is not None:
                self.exchange.items.append(observed)

    def assistant(self, content: object, uuid: str, time: str | None) -> None:
        for block in _blocks(content, "text", "tool_use"):
            if block.get("type") == "text":
                text = without_recall(str(block.get("text") or "")).strip()
                if text:
                    self.exchange.tail.append((uuid, text, time))
                continue
            self.exchange.tail.clear()  # the reply is what comes after the last tool call
            name, key = str(block.get("name") or ""), str(block.get("id"))
            tool_input = _object(block.get("input"))
            self.calls[key] = (name, tool_input)
            todo = _todo(tool_input) if name == "TodoWrite" else ""
            if todo:
                self.exchange.items.append(Captured(key, "observation", "tool", todo, time))

    def next_exchange(self, prompt: Captured | None) -> Iterator[Captured]:
        yield from _closed(self.exchange, final=True)
        self.exchange = _Exchange(prompt=prompt)


def captured(entries: Iterable[dict[str, Any]], *, complete: bool) -> Iterator[Captured]:
    reader = _Reader()
    for entry in entries:
        if entry.get("isSidechain") or entry.get("isMeta"):
            continue
        time = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        uuid = str(entry.get("uuid") or "")
        message = _object(entry.get("message"))
        if entry.get("type") == "user":
            yield from reader.user(entry, message.get("content"), uuid, time)
        elif entry.get("type") == "assistant":
            reader.assistant(message.get("content"), uuid, time)
    yield from _closed(reader.exchange, final=complete)


def _closed(exchange: _Exchange, *, final: bool) -> Iterator[Captured]:
    """An exchange's items in order: its prompt, what was done, and (when over) its final reply."""
    if exchange.prompt is not None:
        yield exchange.prompt
    yield from exchange.items
    if final and exchange.tail:
        reply = "\n\n".join(text for _, text, _ in exchange.tail)
        yield Captured(
            reply_key(exchange.prompt, exchange.tail[0][0]), "reply", "assistant", reply, exchange.tail[-1][2]
        )


def reply_key(prompt: Captured | None, first_uuid: str) -> str:
    """An exchange's reply is keyed by its prompt: the same key whether the reply is read from the
    transcript or taken from the Stop event (when the transcript did not have it yet)."""
    return f"{prompt.key if prompt is not None else first_uuid}:reply"


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _blocks(content: object, *types: str) -> Iterator[dict[str, Any]]:
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in types:
                yield block


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content.strip()
    return "\n".join(str(b.get("text") or "") for b in _blocks(content, "text")).strip()


def _prompt_of(content: object) -> str:
    """The text the person typed, or "" for tool results, command echoes and injected context."""
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    ):
        return ""
    text = _text_of(content)
    if not text or _COMMAND_ECHO.match(text):
        return ""
    text = _REMINDER.sub("", without_recall(text)).strip()
    return text


def _observation(
    name: str, tool_input: dict[str, Any], result: dict[str, Any], time: str | None, key: str
) -> Captured | None:
    output = _result_text(result.get("content"))
    failed = bool(result.get("is_error"))
    if name in EDITS:
        path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
        if not path:
            return None
        verb = "wrote" if name == "Write" else "edited"
        text = f"[tool] {verb} {path}"
        if failed:
            text = f"[tool] failed to {'write' if name == 'Write' else 'edit'} {path}: {_excerpt(output)}"
        return Captured(key, "observation", "tool", text, time, (path,))
    if name in SHELLS:
        command = " ".join(str(tool_input.get("command") or "").split())
        if not command:
            return None
        if len(command) > COMMAND_CHARS:
            command = command[:COMMAND_CHARS] + "…"
        exit_match = _EXIT.match(output)
        if failed or exit_match:
            code = exit_match.group(1) if exit_match else "an error"
            body = output[exit_match.end() :] if exit_match else output
            return Captured(
                key, "observation", "tool", f"[tool] ran `{command}` → exit {code}: {_excerpt(body)}", time
            )
        return Captured(key, "observation", "tool", f"[tool] ran `{command}` → ok", time)
    if name in SUBAGENTS:
        what = str(tool_input.get("description") or tool_input.get("subagent_type") or "subagent")
        text = " ".join(without_recall(output).split())
        if not text:
            return None
        if len(text) > SUBAGENT_CHARS:
            text = text[:SUBAGENT_CHARS] + "…"
        return Captured(key, "subagent", "tool", f"[subagent] {what}: {text}", time)
    return None


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text") or "") for b in _blocks(content, "text"))


def _excerpt(output: str) -> str:
    lines = [line.rstrip() for line in _REMINDER.sub("", output).strip().splitlines() if line.strip()]
    text = " | ".join(lines[:ERROR_LINES])
    return text[:ERROR_CHARS] + ("…" if len(text) > ERROR_CHARS else "")


def _todo(tool_input: dict[str, Any]) -> str:
    todos = tool_input.get("todos")
    if not isinstance(todos, list):
        return ""
    by_status: dict[str, list[str]] = {}
    for item in todos:
        if isinstance(item, dict) and item.get("content"):
            by_status.setdefault(str(item.get("status") or "pending"), []).append(str(item["content"]))
    parts = [f"{status}: {'; '.join(items)}" for status, items in by_status.items()]
    text = "[todo] " + " / ".join(parts)
    return text[:TASK_LIST_CHARS] if parts else ""
