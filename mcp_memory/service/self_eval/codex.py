"""A Codex CLI session read from its session file into what the hooks capture of it, under the same keys.

Codex CLI keeps each session as `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`, JSON
Lines of {timestamp, type, payload}, appended to when the session is resumed. What 0.171.0 writes (a real
history: tests/unit/hook_payloads/captured/codex-0.171.0-sessions/):
- `session_meta`: the session's id, its working directory (`cwd`), the repository's remote
  (`git.repository_url`) and who started it (`thread_source` "user");
- `response_item` messages: what the model is sent, among them user messages nobody typed (AGENTS.md's
  instructions, `<environment_context>`) and the hooks' own context (developer messages): never read;
- `event_msg` `item_completed`: a `UserMessage` is what the person typed; a `CommandExecution` a shell
  command's exit code and output; `event_msg` `task_complete`: the turn's `last_agent_message`;
- `response_item` `function_call` of exec_command (its `cmd`), `custom_tool_call` of apply_patch (the
  patch), and their outputs.

The hooks take Codex's prompts, final replies and tool calls from its hook payloads (UserPromptSubmit, Stop,
PostToolUse of its shell and apply_patch). Each is made here into the payload its hook got, read by the
hook's own parser (hooks/clients.py), spooled as the hook spools it (hooks/spool.py) and made into items by
the capture (service/capture.py): the keys, and so the stored ids, are the hooks'. Codex's payloads carry no
time (the hooks store each when it arrives); here each item takes its line's timestamp.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcp_memory.hooks import clients, spool
from mcp_memory.hooks.captured import from_payload
from mcp_memory.hooks.events import HookEvent
from mcp_memory.hooks.projects import Project, recorded_project
from mcp_memory.hooks.transcripts import Captured

SHELL = "exec_command"  # Codex's shell tool, which its PostToolUse hook names "Bash"
PATCH = "apply_patch"


@dataclass(frozen=True)
class Rollout:
    """A Codex session file's session and what the hooks keep of it, in order."""

    session_id: str
    cwd: str
    project: Project  # from the working directory, or the git remote Codex recorded with it
    items: tuple[Captured, ...]


def read_rollout(path: Path) -> Rollout | None:
    """The session in `path` and what the hooks capture of it: the typed prompts, each turn's final reply,
    its shell commands and patches as observations, each at its line's time. None when it is no session
    the person started (a subagent's, or one without its session_meta line)."""
    lines = _lines(path)
    meta = next((payload for kind, _, payload in lines if kind == "session_meta"), None)
    if meta is None or meta.get("thread_source") not in (None, "user"):
        return None
    session_id = _text(meta.get("id")) or _text(meta.get("session_id"))
    if session_id is None:
        return None
    cwd = _text(meta.get("cwd")) or str(path.parent)
    git = meta.get("git")
    remote = _text(git.get("repository_url")) if isinstance(git, dict) else None
    reader = _Reader(session_id, cwd, recorded_project(cwd, remote))
    for kind, time, payload in lines:
        reader.read(kind, time, payload)
    return Rollout(session_id, cwd, reader.project, tuple(reader.items))


@dataclass
class _Reader:
    session_id: str
    cwd: str
    project: Project
    items: list[Captured] = field(default_factory=list)
    calls: dict[str, tuple[str, dict[str, Any]]] = field(
        default_factory=dict
    )  # call id -> hook's name, input
    ran: dict[str, tuple[int | None, str]] = field(default_factory=dict)  # call id -> exit code, output

    def read(self, kind: str, time: str | None, payload: dict[str, Any]) -> None:
        what = payload.get("type")
        call_id = _text(payload.get("call_id")) or ""
        if kind == "event_msg" and what == "item_completed" and isinstance(payload.get("item"), dict):
            item = payload["item"]
            if item.get("type") == "UserMessage":
                self._hook("UserPromptSubmit", time, {"prompt": _joined(item.get("content"))})
            elif item.get("type") == "CommandExecution" and isinstance(item.get("id"), str):
                code, output = item.get("exit_code"), item.get("aggregated_output")
                self.ran[item["id"]] = (
                    code if isinstance(code, int) and not isinstance(code, bool) else None,
                    output if isinstance(output, str) else "",
                )
        elif kind == "event_msg" and what == "task_complete":
            reply = _text(payload.get("last_agent_message"))
            if reply:
                self._hook("Stop", time, {"last_assistant_message": reply})
        elif kind != "response_item":
            return
        elif what == "function_call" and payload.get("name") == SHELL:
            self.calls[call_id] = ("Bash", {"command": clients.as_dict(payload.get("arguments")).get("cmd")})
        elif what == "custom_tool_call" and payload.get("name") == PATCH:
            self.calls[call_id] = (PATCH, {"command": payload.get("input")})
        elif what in ("function_call_output", "custom_tool_call_output") and call_id in self.calls:
            self._tool(call_id, time, payload.get("output"))

    def _tool(self, call_id: str, time: str | None, output: object) -> None:
        """PostToolUse as the hook gets it: a shell's output alone (the exit code it reads from this file)."""
        name, tool_input = self.calls.pop(call_id)
        code, ran_output = self.ran.pop(call_id, (None, None))
        response = ran_output if ran_output is not None else output
        event = self._event(
            "PostToolUse",
            {"tool_name": name, "tool_input": tool_input, "tool_response": response, "tool_use_id": call_id},
        )
        tool = event.tool
        if tool is None or not (tool.paths or tool.command):
            return  # the hook spools only a tool run that wrote a file or ran a command
        if tool.command is not None and tool.exit_code is None:
            event = event._replace(tool=clients.with_exit_code(tool, code, response))
        self._store(event, time)

    def _hook(self, name: str, time: str | None, fields: dict[str, Any]) -> None:
        self._store(self._event(name, fields), time)

    def _event(self, name: str, fields: dict[str, Any]) -> HookEvent:
        payload = {"hook_event_name": name, "session_id": self.session_id, "cwd": self.cwd}
        return clients.parse("codex", payload | fields)

    def _store(self, event: HookEvent, time: str | None) -> None:
        for item in from_payload(spool.entry(event, self.project)):
            self.items.append(replace(item, time=time or item.time))


def _lines(path: Path) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(type, timestamp, payload) of each readable line; none when the file cannot be read."""
    found = []
    try:
        with path.open("rb") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except (ValueError, UnicodeDecodeError):
                    continue  # a line being written, or damaged
                if isinstance(entry, dict) and isinstance(entry.get("payload"), dict):
                    found.append((str(entry.get("type")), _text(entry.get("timestamp")), entry["payload"]))
    except OSError:
        return []
    return found


def _joined(content: object) -> str | None:
    parts = content if isinstance(content, list) else []
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "\n".join(texts) or None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
