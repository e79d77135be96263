"""Gemini CLI's own ways, read from its source (google-gemini/gemini-cli, packages/core): its session
transcript, the `<hook_context>` it wraps hook output in, and the escaping it applies to that output.

The transcript (`transcript_path` in every hook payload, ~/.gemini/tmp/<project>/chats/session-*.jsonl;
services/chatRecordingService.ts) is JSON Lines, appended to as the session goes:
- a metadata line (sessionId, projectHash, startTime, kind);
- message records {id, timestamp, type: user | gemini | info | error | warning, content, displayContent?,
  toolCalls?}; a record is written again, whole, under the same id when it changes (tokens, tool calls);
- `{"$set": {...}}` metadata updates; one that holds `messages` is a checkpoint Gemini rebuilds its history
  from. On `--resume` it writes one that can lack earlier prompts, so here a checkpoint only adds messages
  not read before: what happened stays readable, and a re-read finds the same keys;
- `{"$rewindTo": id}`: the person rewound; that message and everything after it are gone.
A prompt is a `user` record with text (its displayContent, when set, is what the person typed); a `user`
record of functionResponse parts is a tool's result; a `gemini` record's `content` is the model's whole text
for one model call (the AfterAgent payload's `prompt_response` joins streamed chunks and is garbled).

What is kept, each under a key the transcript gives it (so reading it again finds the same keys): every
prompt (the message id), and each exchange's final reply (the text after its last tool call, keyed by its
prompt: transcripts.reply_key). Tool calls are not read here: AfterTool's payload carries them (the
transcript records a call only once it is over, after that hook ran).

Hook output reaches the model escaped: DefaultHookOutput.getAdditionalContext() (hooks/types.ts) turns
every `<` and `>` of additionalContext (the only field that reaches the model) into `&lt;` and `&gt;`, then
wraps it in `<hook_context>...</hook_context>`. Headless (`gemini -p`), SessionStart's context is put in
front of the prompt itself (packages/cli/src/gemini.tsx), so BeforeAgent's and AfterAgent's `prompt` and
the transcript's prompt carry it. So the recall is marked with square brackets for Gemini (`marked`), and
every `<hook_context>` block is cut out of a prompt before it is stored or searched (`without_injected`).

Standard library only: the hook imports this on every event.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcp_memory.hooks.events import HookEvent
from mcp_memory.hooks.transcripts import RECALL_TAG, Captured, reply_key, without_recall

# The events whose transcript is read (and so spooled): an exchange is over (AfterAgent, SessionEnd), a
# tool ran (its prompt is stored before its observation, keeping the thread in order), a session resumed.
COMPLETE_KINDS = frozenset({"reply", "session_end", "session_start"})
_HOOK_CONTEXT = re.compile(r"\s*<hook_context>.*?(?:</hook_context>|\Z)\s*", re.DOTALL)
_OPEN = re.compile(rf"<({RECALL_TAG}\b[^>]*)>", re.IGNORECASE)
_CLOSE = re.compile(rf"</{RECALL_TAG}\s*>", re.IGNORECASE)
_BRACKET_CLOSE = re.compile(rf"\[\s*/\s*{RECALL_TAG}\s*\]", re.IGNORECASE)
# Gemini's own first message (the workspace it sees), typed by no one; Gemini skips it too on resume.
_SESSION_CONTEXT = "<session_context>"


def captures(event: HookEvent) -> bool:
    """Whether a Gemini event with a transcript is spooled: BeforeAgent is not (its prompt is not in the
    transcript yet; the next AfterTool or AfterAgent stores it under the transcript's own id)."""
    if event.kind == "tool":
        return event.tool is not None and bool(event.tool.paths or event.tool.command)
    return event.kind in ("reply", "session_end") or (
        event.kind == "session_start" and event.source == "resume"
    )


def without_injected(text: str) -> str:
    """A prompt less what hooks put in it: `<hook_context>` blocks and the memory's own recall."""
    if "<hook_context>" in text:
        text = _HOOK_CONTEXT.sub("\n\n", text)
    return without_recall(text).strip()


def marked(context: str) -> str:
    """The recall with its marker in square brackets: Gemini escapes `<` and `>` in hook output, so an
    angle-bracket marker would reach the model as `&lt;memory-recall&gt;`. The body's own angle brackets
    still reach it as entities (no other hook field reaches the model); a closing marker in the body is
    broken so the block cannot end early."""
    opened = _OPEN.search(context)
    closes = list(_CLOSE.finditer(context))
    closed = closes[-1] if closes else None
    if opened is None or closed is None or closed.start() < opened.end():
        return context
    body = _BRACKET_CLOSE.sub(
        lambda m: m.group(0).replace("[", "(", 1), context[opened.end() : closed.start()]
    )
    return f"{context[: opened.start()]}[{opened.group(1)}]{body}[/{RECALL_TAG}]{context[closed.end() :]}"


def captured_for(
    entry: dict[str, Any], from_payload: Callable[[dict[str, Any]], list[Captured]]
) -> list[Captured]:
    """What a spooled Gemini event stores: its transcript's prompts and replies (the event's own text only
    where the transcript lacks them), and a tool event's observation (`from_payload`)."""
    kind = entry.get("kind")
    path = entry.get("transcript_path")
    items = read_transcript(path, complete=kind in COMPLETE_KINDS) if isinstance(path, str) and path else None
    if items is None:
        items = _exchange_from_payload(entry)
    elif kind == "reply":
        items = _with_event_reply(items, entry)
    if kind == "tool":
        items += from_payload(entry)
    return items


def read_transcript(path: str | Path, *, complete: bool) -> list[Captured] | None:
    """The prompts and replies of a Gemini transcript, in order; None when it cannot be read. `complete`:
    the last exchange is over, so its reply is kept too."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return list(_captured(_messages(text), complete=complete))


def _messages(text: str) -> list[dict[str, Any]]:
    """The session's messages much as Gemini loads them (loadConversationRecord): the latest record of each
    id, in first-written order, after rewinds; checkpoints only add (module docstring)."""
    legacy = _legacy(text)
    if legacy is not None:
        return legacy
    messages: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError:
            continue  # a line being written, or damaged: the rest still counts
        if isinstance(record, dict):
            _apply(messages, record)
    return list(messages.values())


def _apply(messages: dict[str, dict[str, Any]], record: dict[str, Any]) -> None:
    rewind = record.get("$rewindTo")
    if isinstance(rewind, str):
        ids = list(messages)
        for gone in ids[ids.index(rewind) if rewind in messages else 0 :]:
            del messages[gone]
    elif _is_message(record):
        messages[record["id"]] = record
    else:
        update = record.get("$set")
        listed = (update if isinstance(update, dict) else record).get("messages")
        for message in listed if isinstance(listed, list) else []:
            if _is_message(message) and message["id"] not in messages:
                messages[message["id"]] = message


def _legacy(text: str) -> list[dict[str, Any]] | None:
    """The messages of a transcript written by releases before JSON Lines: one JSON object."""
    stripped = text.strip()
    if not stripped.startswith("{") or "\n{" in stripped:
        return None
    try:
        whole = json.loads(stripped)
    except ValueError:
        return None
    listed = whole.get("messages") if isinstance(whole, dict) and "sessionId" in whole else None
    return [m for m in listed if _is_message(m)] if isinstance(listed, list) else None


def _is_message(record: object) -> bool:
    return (
        isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("type"), str)
    )


def _captured(messages: list[dict[str, Any]], *, complete: bool) -> Iterator[Captured]:
    prompt: Captured | None = None
    tail: list[tuple[str, str | None]] = []  # (text, time): the reply so far

    def reply() -> Iterator[Captured]:
        if prompt is not None and tail:
            yield Captured(
                reply_key(prompt.key), "reply", "assistant", "\n\n".join(t for t, _ in tail), tail[-1][1]
            )

    for message in messages:
        time = message.get("timestamp") if isinstance(message.get("timestamp"), str) else None
        if message["type"] == "user":
            text = _prompt_of(message)
            if text is None:
                continue  # a tool's result, or Gemini's own context
            yield from reply()
            prompt, tail = Captured(message["id"], "prompt", "user", text, time), []
            yield prompt
        elif message["type"] == "gemini":
            if message.get("toolCalls"):
                tail = []  # the reply is what comes after the last tool call
            text = without_recall(_text_of(message.get("content"))).strip()
            if text and not message.get("toolCalls"):
                tail.append((text, time))
    if complete:
        yield from reply()


def _prompt_of(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and "functionResponse" in p for p in content):
        return None
    shown = message.get("displayContent")
    raw = _text_of(shown if shown else content)
    if not raw.strip() or raw.lstrip().startswith(_SESSION_CONTEXT):
        return None
    text = without_injected(raw)
    return text or None


def _text_of(content: object) -> str:
    """The text of a PartListUnion: a string, a part, or a list of them (thoughts left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return "" if content.get("thought") else str(content.get("text") or "")
    if isinstance(content, list):
        return "".join(_text_of(part) for part in content)
    return ""


def _with_event_reply(items: list[Captured], entry: dict[str, Any]) -> list[Captured]:
    """AfterAgent's own reply text when the transcript has no reply for its last prompt (a transcript not
    written, or written late): under the key the transcript's would have, so it is stored once either way."""
    reply = entry.get("reply")
    prompts = [i for i, item in enumerate(items) if item.kind == "prompt"]
    if not isinstance(reply, str) or not reply.strip() or not prompts:
        return items
    if any(item.kind == "reply" for item in items[prompts[-1] :]):
        return items
    time = entry.get("time") if isinstance(entry.get("time"), str) else None
    return [
        *items,
        Captured(reply_key(items[prompts[-1]].key), "reply", "assistant", without_recall(reply), time),
    ]


def _exchange_from_payload(entry: dict[str, Any]) -> list[Captured]:
    """No transcript to read: AfterAgent's own prompt and reply (the reply as Gemini joined it)."""
    if entry.get("kind") != "reply":
        return []
    time = entry.get("time") if isinstance(entry.get("time"), str) else None
    prompt_text = without_injected(str(entry.get("prompt") or ""))
    reply_text = without_recall(str(entry.get("reply") or "")).strip()
    digest = hashlib.sha256(json.dumps([prompt_text, reply_text]).encode()).hexdigest()[:24]
    prompt = Captured(f"prompt:{time or ''}:{digest}", "prompt", "user", prompt_text, time)
    items = [prompt] if prompt_text else []
    if reply_text:
        items.append(Captured(reply_key(prompt.key), "reply", "assistant", reply_text, time))
    return items
