"""What a Claude Code transcript holds worth keeping, in the order it happened.

A transcript is JSON Lines under ~/.claude/projects/: one entry per message part (a thinking block, a
text block, a tool call, a tool's result), plus bookkeeping (file snapshots, hook summaries, compaction
boundaries). Kept, each under a key made of the entry's own uuid (or the tool call's id), so reading the
same transcript again, after a resume or a compaction, finds the same keys:

- every prompt the person typed (not tool results, slash-command echoes, meta messages or reminders);
- the final reply of each exchange: the text the agent wrote after its last tool call. An exchange opens at
  a typed prompt or at a background task's notification (`<task-notification>`, which Claude Code writes as
  a user entry when a task run in the background ends and the agent answers it): that reply is kept like
  any other, keyed by the notification, and the notification itself is kept as an observation (its
  summary), never as a prompt; so does any other message Claude Code marks as not the person's
  (`origin.kind` other than "human": another session, a coordinator), whose text is not kept. A compaction
  inside an exchange does not end it;
- compact observations of the work: files created and edited (by path), commands run with their exit
  status and the first lines of an error, the todo list, subagents' results (an excerpt);
- the client's own compaction summaries.

Every item carries the transcript's own time (an entry without a timestamp takes the one before it).

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
NOTIFICATION_TAG = "task-notification"  # Claude Code's note to the agent that a background task ended

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
_NOTIFICATION_FIELD = re.compile(r"<(summary|status|task-id)>(.*?)</\1>", re.DOTALL)
EDITS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
SHELLS = frozenset({"Bash", "BashOutput", "PowerShell"})
SUBAGENTS = frozenset({"Task", "Agent"})
COMMAND_CHARS = 200
ERROR_CHARS = 300
ERROR_LINES = 3
SUBAGENT_CHARS = 800
NOTIFICATION_CHARS = 300
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


@dataclass(frozen=True)
class Reading:
    """What one read of a transcript found: its items, and what a Stop event's reply needs to be stored
    under the same key and time as the transcript's own copy of it, when the transcript lacks it."""

    items: list[Captured]
    reply_key: str | None  # the key the last exchange's (next) reply has; None before any exchange opens
    latest: str | None  # the transcript's latest timestamp


def read_transcript(path: str | Path, *, complete: bool) -> list[Captured]:
    """What the transcript holds worth keeping, in order. `complete`: the last exchange is over (Stop,
    SessionEnd); otherwise its reply is left for a later read, since more of it may still come."""
    return read(path, complete=complete).items


def read(path: str | Path, *, complete: bool) -> Reading:
    """read_transcript, with the last exchange's reply key and the transcript's latest time."""
    reader = _Reader()
    items = list(reader.read(_entries(Path(path)), complete=complete))
    return Reading(items, reader.exchange.next_reply_key(), reader.latest)


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
    opener: str | None = None  # the key of the typed prompt or the notification that opened it
    prompt: Captured | None = None  # the typed prompt, or the notification's observation
    items: list[Captured] = field(default_factory=list)  # observations, subagents, compactions
    tail: list[tuple[str, str, str | None]] = field(default_factory=list)  # (uuid, text, time): the reply
    replies: int = 0  # replies already given (a compaction inside the exchange ends one)

    def next_reply_key(self) -> str | None:
        if self.opener is None:
            return None
        key = reply_key(self.opener)
        return key if self.replies == 0 else f"{key}{self.replies + 1}"


@dataclass
class _Reader:
    """One pass over a transcript: tool calls wait for their results; an exchange ends at the next prompt
    or notification."""

    exchange: _Exchange = field(default_factory=_Exchange)
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # tool id -> (name, input)
    latest: str | None = None  # the latest timestamp seen
    last: str | None = None  # the timestamp of the last entry that had one

    def read(self, entries: Iterable[dict[str, Any]], *, complete: bool) -> Iterator[Captured]:
        for entry in entries:
            if entry.get("isSidechain"):
                continue
            time = self.time_of(entry)
            uuid = str(entry.get("uuid") or "")
            message = _object(entry.get("message"))
            content = message.get("content")
            sender = _sender(entry, content) if entry.get("type") == "user" else None
            if sender is not None:
                # Before the meta rule: a notification written as meta still opens an exchange.
                yield from self.notification(sender, content, uuid, time)
            elif entry.get("isMeta"):
                continue
            elif entry.get("type") == "user":
                yield from self.user(entry, content, uuid, time)
            elif entry.get("type") == "assistant":
                self.assistant(content, uuid, time)
        yield from self.closed(final=complete)

    def time_of(self, entry: dict[str, Any]) -> str | None:
        stamp = entry.get("timestamp")
        if isinstance(stamp, str) and stamp:
            self.last = stamp
            if self.latest is None or _instant(stamp) >= _instant(self.latest):
                self.latest = stamp
        return self.last

    def user(self, entry: dict[str, Any], content: object, uuid: str, time: str | None) -> Iterator[Captured]:
        if entry.get("isCompactSummary"):
            # Between exchanges (a /compact) or inside one (an automatic compaction): what came before it
            # is kept now, and the exchange goes on under the same prompt.
            yield from self.closed(final=True)
            text = _text_of(content)
            if text:
                yield Captured(uuid, "compaction", "system", f"[compaction summary] {text}", time)
            return
        prompt = _prompt_of(content)
        if prompt:
            yield from self.next_exchange(uuid, Captured(uuid, "prompt", "user", prompt, time))
            return
        for block in _blocks(content, "tool_result"):
            key = str(block.get("tool_use_id"))
            call = self.calls.pop(key, None)
            observed = None if call is None else _observation(call[0], call[1], block, time, key)
            if observed is not None:
                self.exchange.items.append(observed)

    def notification(self, sender: str, content: object, uuid: str, time: str | None) -> Iterator[Captured]:
        """A message to the agent from elsewhere than the person (a background task that ended, another
        session, the harness): the agent answers it, so it opens an exchange; only a task's is kept."""
        note = _notification_of(_text_of(content)) if sender == NOTIFICATION_TAG else ""
        yield from self.next_exchange(
            uuid, Captured(uuid, "observation", "tool", note, time) if note else None
        )

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

    def next_exchange(self, opener: str, prompt: Captured | None) -> Iterator[Captured]:
        yield from self.closed(final=True)
        self.exchange = _Exchange(opener=opener, prompt=prompt)

    def closed(self, *, final: bool) -> Iterator[Captured]:
        """The exchange's items so far, in order: its prompt, what was done, and (when over) its reply.
        The exchange stays open (a compaction inside it); what was given is not given again."""
        exchange = self.exchange
        if exchange.prompt is not None:
            yield exchange.prompt
            exchange.prompt = None
        yield from exchange.items
        exchange.items = []
        if final and exchange.tail:
            reply = "\n\n".join(text for _, text, _ in exchange.tail)
            key = exchange.next_reply_key() or reply_key(exchange.tail[0][0])
            yield Captured(key, "reply", "assistant", reply, exchange.tail[-1][2])
            exchange.tail = []
            exchange.replies += 1


def captured(entries: Iterable[dict[str, Any]], *, complete: bool) -> Iterator[Captured]:
    return _Reader().read(entries, complete=complete)


def reply_key(opener: str) -> str:
    """An exchange's reply is keyed by what opened it (its prompt or notification): the same key whether
    the reply is read from the transcript or taken from the Stop event (when the transcript lacks it)."""
    return f"{opener}:reply"


def _instant(stamp: str) -> str:
    """A timestamp comparable as text: Claude Code writes UTC as ...Z, to the millisecond."""
    return stamp.replace("+00:00", "Z")


def _sender(entry: dict[str, Any], content: object) -> str | None:
    """Who a user entry is from when not the person: Claude Code marks it with `origin.kind` (its message
    origins: "human", "task-notification", "coordinator", "channel", "peer", "observer", ...; anything
    but "human" is "never presumed human"); an older one wrote a bare <task-notification> block."""
    kind = _object(entry.get("origin")).get("kind")
    if isinstance(kind, str) and kind and kind != "human":
        return kind
    if _text_of(content).startswith(f"<{NOTIFICATION_TAG}>"):
        return NOTIFICATION_TAG
    return None


def _notification_of(text: str) -> str:
    """A background task's notification as one short line: its summary (else its status)."""
    fields = {name: " ".join(value.split()) for name, value in _NOTIFICATION_FIELD.findall(text)}
    said = fields.get("summary") or fields.get("status") or ""
    if not said and not text.startswith(f"<{NOTIFICATION_TAG}>"):
        said = " ".join(_REMINDER.sub("", without_recall(text)).split())
    if not said:
        return ""
    return "[background task] " + said[:NOTIFICATION_CHARS] + ("…" if len(said) > NOTIFICATION_CHARS else "")


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
