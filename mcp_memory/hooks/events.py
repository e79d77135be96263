"""One hook event, whatever the client sent it, and the few kinds the memory cares about."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

# What an event means to the memory:
# - session_start: a session begins or resumes: inject what this project was doing;
# - prompt: the person typed a prompt: inject what is relevant to it (and capture it);
# - reply: the agent finished a reply (Stop and its equivalents): capture;
# - tool: a tool ran (PostToolUse and its equivalents): capture an observation;
# - compact: the client is about to compact (or has compacted) the conversation: capture;
# - subagent: a subagent finished: capture its result;
# - session_end: the session ended: capture what is left;
# - other: nothing to do (exit 0, print nothing).
EventKind = Literal["session_start", "prompt", "reply", "tool", "compact", "subagent", "session_end", "other"]
KINDS: tuple[EventKind, ...] = (
    "session_start",
    "prompt",
    "reply",
    "tool",
    "compact",
    "subagent",
    "session_end",
    "other",
)
CLIENTS = ("claude-code", "cursor", "vscode", "codex", "gemini", "opencode", "copilot")
Client = Literal["claude-code", "cursor", "vscode", "codex", "gemini", "opencode", "copilot"]


# NamedTuples, not dataclasses: `dataclasses` imports `inspect`, 10 ms of every hook's start.


class ToolRun(NamedTuple):
    """A tool call, as a compact observation: never the file's content or the whole output."""

    name: str  # the client's tool name: Bash, Write, Edit, run_shell_command, ...
    paths: tuple[str, ...] = ()  # files created or edited
    command: str | None = None  # a shell command
    exit_code: int | None = None
    failed: bool = False
    excerpt: str = ""  # the first lines of an error (at most a few hundred characters)


class HookEvent(NamedTuple):
    client: str  # one of CLIENTS
    event: str  # the client's own event name, as sent (SessionStart, beforeSubmitPrompt, AfterAgent...)
    kind: EventKind
    session_id: str
    cwd: str
    transcript_path: str | None = None
    prompt: str | None = None  # kind prompt: the text typed
    reply: str | None = None  # kind reply / subagent: the final reply, when the payload carries it
    tool: ToolRun | None = None  # kind tool
    source: str | None = None  # session_start: startup, resume, clear, compact (Claude Code's words)
    time: str | None = None  # ISO 8601, when the payload says
    raw: dict[str, Any] | None = None  # the payload as received
