"""Each coding agent's hook payloads, read into one HookEvent, and what its hook prints back.

Every adapter follows its client's own hooks reference; read it before changing one:
- Claude Code: https://code.claude.com/docs/en/hooks (the input types are also in the
  @anthropic-ai/claude-agent-sdk package, sdk.d.ts: BaseHookInput, StopHookInput, ...).
- Cursor: https://cursor.com/docs/agent/hooks
- Gemini CLI: https://geminicli.com/docs/hooks/reference
- Codex CLI: https://developers.openai.com/codex/hooks (schemas: openai/codex, codex-rs/hooks/schema/generated/).
- VS Code: https://code.visualstudio.com/docs/agents/reference/hooks-reference, whose `.github/hooks/*.json`
  GitHub Copilot CLI also reads: https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference
- OpenCode: no command hooks; the plugin `mcp-memory install opencode` writes (mcp_memory/cli/opencode_plugin.js)
  sends its hooks' input as JSON, named after them (https://opencode.ai/docs/plugins).

Standard library only: a hook is a new process per event. Nothing here raises on an odd payload; a tool
event keeps paths, a command, an exit status and a short error excerpt, never a file's content or an output.
"""

from __future__ import annotations

import json
import math
import os
import re
from datetime import UTC, datetime
from typing import Any

from mcp_memory.hooks.events import EventKind, HookEvent, ToolRun

# The events worth hooking, per client: the installer writes exactly these, so none is captured twice.
EVENTS: dict[str, dict[str, EventKind]] = {
    # https://code.claude.com/docs/en/hooks: PostToolUse fires on success only, PostToolUseFailure on failure;
    # PostCompact carries the compaction summary.
    "claude-code": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "prompt",
        "Stop": "reply",
        "PostToolUse": "tool",
        "PostToolUseFailure": "tool",
        "PreCompact": "compact",
        "PostCompact": "compact",
        "SubagentStop": "subagent",
        "SessionEnd": "session_end",
    },
    # https://cursor.com/docs/agent/hooks: postToolUse fires for every tool (Shell, Write, ...), so the older
    # afterFileEdit / afterShellExecution are read (below) but not hooked. afterAgentResponse has the text;
    # stop only marks the end of the agent loop.
    "cursor": {
        "sessionStart": "session_start",
        "beforeSubmitPrompt": "prompt",
        "afterAgentResponse": "reply",
        "stop": "reply",
        "postToolUse": "tool",
        "postToolUseFailure": "tool",
        "preCompact": "compact",
        "subagentStop": "subagent",
        "sessionEnd": "session_end",
    },
    # https://geminicli.com/docs/hooks/reference, and Gemini CLI's source (hooks/gemini.py). PreCompress is not
    # hooked: Gemini fires it before every turn (it checks its threshold after the hook) and waits for it, and
    # its payload holds nothing to store; the transcript, read at AfterAgent, has the whole session.
    "gemini": {
        "SessionStart": "session_start",
        "BeforeAgent": "prompt",
        "AfterAgent": "reply",
        "AfterTool": "tool",
        "SessionEnd": "session_end",
    },
    # https://developers.openai.com/codex/hooks: no session-end event; PostToolUse covers Bash, apply_patch, MCP.
    "codex": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "prompt",
        "Stop": "reply",
        "PostToolUse": "tool",
        "PreCompact": "compact",
        "PostCompact": "compact",
        "SubagentStop": "subagent",
    },
    # VS Code's names, which Copilot CLI accepts too (then sending snake_case fields); PostToolUseFailure and
    # SessionEnd are Copilot CLI's only.
    "vscode": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "prompt",
        "Stop": "reply",
        "PostToolUse": "tool",
        "PostToolUseFailure": "tool",
        "PreCompact": "compact",
        "SubagentStop": "subagent",
        "SessionEnd": "session_end",
    },
    # OpenCode: the names of the plugin hooks (and bus event) mcp_memory/cli/opencode_plugin.js hands over.
    "opencode": {
        "session.created": "session_start",
        "chat.message": "prompt",
        "session.idle": "reply",
        "tool.execute.after": "tool",
        "experimental.session.compacting": "compact",
    },
    # GitHub Copilot CLI, installed as its own client: VS Code's PascalCase names (snake_case fields), and
    # PostToolUseFailure and SessionEnd, which only it sends. Its Stop carries no reply: the hook reads it
    # from the session's events.jsonl (mcp_memory/hooks/copilot_events.py).
    "copilot": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "prompt",
        "Stop": "reply",
        "PostToolUse": "tool",
        "PostToolUseFailure": "tool",
        "PreCompact": "compact",
        "SubagentStop": "subagent",
        "SessionEnd": "session_end",
    },
}
# Read when they arrive, never installed: a generic event above already covers them.
_ALSO_READ: dict[str, dict[str, EventKind]] = {
    "cursor": {"afterFileEdit": "tool", "afterShellExecution": "tool", "afterMCPExecution": "tool"},
    # Copilot CLI's own camelCase names (camelCase fields).
    "vscode": {
        "sessionStart": "session_start",
        "userPromptSubmitted": "prompt",
        "agentStop": "reply",
        "postToolUse": "tool",
        "postToolUseFailure": "tool",
        "preCompact": "compact",
        "subagentStop": "subagent",
        "sessionEnd": "session_end",
    },
}
_ALSO_READ["copilot"] = _ALSO_READ["vscode"]

# Each client's cap on injected context, in characters. The recall budget (at most 1,500 tokens) is far below.
CAP_CHARS: dict[str, int] = {
    "claude-code": 10_000,  # documented: hook output injected into context is capped at 10,000 characters
    # Not in the docs: codex-rs/hooks/src/output_spill.rs spills hook text over 2,500 approximate tokens
    # (4 bytes each) to a file; 8,000 characters leaves room for non-ASCII text in those 10,000 bytes.
    "codex": 8_000,
    "cursor": 10_000,  # undocumented; Claude Code's cap, the only one documented among these clients
    "gemini": 10_000,  # undocumented; likewise
    "vscode": 10_000,  # undocumented; likewise (Copilot CLI ignores SessionStart output altogether)
    "opencode": 10_000,  # the plugin adds it to the system prompt, which has no cap; kept like the others
    "copilot": 10_000,  # unused: Copilot CLI processes no output of SessionStart or UserPromptSubmit
}

# The events whose output reaches the model, per client, and the hookEventName its output must carry.
_INJECTS: dict[str, dict[EventKind, str]] = {
    "claude-code": {"session_start": "SessionStart", "prompt": "UserPromptSubmit"},
    "codex": {"session_start": "SessionStart", "prompt": "UserPromptSubmit"},
    "gemini": {"session_start": "SessionStart", "prompt": "BeforeAgent"},
    # VS Code: UserPromptSubmit "uses the common output format only" (continue, stopReason, systemMessage).
    "vscode": {"session_start": "SessionStart"},
    # Cursor: only sessionStart has `additional_context`; beforeSubmitPrompt can only allow or block.
    "cursor": {"session_start": "sessionStart"},
    # OpenCode: the plugin reads additionalContext and adds it to the session's system prompt.
    "opencode": {"session_start": "session.created", "prompt": "chat.message"},
    # Copilot CLI: none. Its reference says SessionStart / UserPromptSubmit output is not processed, and with
    # 1.0.102 nothing its hooks printed (additionalContext, plain or under hookSpecificOutput) reached the model.
}
# Cursor answers that let the agent go on. beforeSubmitPrompt and sessionStart expect `continue`; beforeReadFile
# fails closed on a missing answer, and allowing a read skips no approval. For the other permission events
# (beforeShellExecution, preToolUse, beforeMCPExecution) an `allow` would skip the user's own approval, so
# they get no decision at all. We hook none of these; the answers are there in case one reaches us.
_CURSOR_NEUTRAL: dict[str, dict[str, object]] = {
    "beforeSubmitPrompt": {"continue": True},
    "sessionStart": {"continue": True},
    "beforeReadFile": {"permission": "allow"},
    "beforeTabFileRead": {"permission": "allow"},
}

# Tool names (lowercased) whose input carries a shell command, and those that create or edit files.
_SHELL_TOOLS = frozenset(
    {"bash", "shell", "powershell", "run_shell_command", "run_in_terminal", "runinterminal"}
    | {"runterminalcommand", "exec_command", "local_shell", "aftershellexecution"}
)
_WRITE_TOOLS = frozenset(
    {"write", "edit", "multiedit", "notebookedit", "write_file", "replace", "create", "create_file"}
    | {"createfile", "editfiles", "edit_file", "replace_string_in_file", "multi_replace_string_in_file"}
    | {"insert_edit_into_file", "edit_notebook_file", "delete", "delete_file", "strreplace"}
    | {"search_replace", "apply_patch", "afterfileedit"}
)
_PATH_KEYS = ("file_path", "filePath", "notebook_path", "path", "target_file")
_PATH_LIST_KEYS = ("files", "paths", "filePaths")
_FAILED_RESULTS = frozenset({"failure", "denied", "error"})
# Cursor's older events put the tool's fields at the top level instead of under tool_input.
_TOP_LEVEL_TOOL_EVENTS = frozenset({"afterFileEdit", "afterShellExecution"})

# A shell's exit status as each client writes it: Claude Code "Exit code 1", Codex "Exit code: 1" or
# "Process exited with code 1", Gemini "Exit Code: 1".
_EXIT = re.compile(
    r"^(?:Error: )?(?:Exit code:?|Exit Code:|Process exited with code|<shellId: \S+ completed with exit code)"
    r"\s*(-?\d+)",
    re.M,
)  # the last: Copilot CLI's bash
# Lines of a shell result that are bookkeeping, not error output.
_BOOKKEEPING = re.compile(
    r"^(?:Error: )?(?:Exit code -?\d|Exit code:|Exit Code:|Process exited with code|Wall time:|Chunk ID:"
    r"|Original token count:|Process Group PGID:|Background PIDs:|Signal:|Command:|Directory:)"
    r"|^Output:\s*$|^(?:Output|Error): \((?:empty|none)\)"
    r"|^<shellId: |^</?untrusted_context>\s*$"  # Gemini CLI wraps a shell's output in these
)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_EXCERPT_CHARS = 300
_SCAN_CHARS = 4_000  # how much of a long output is read for an exit status or an excerpt, at each end


def parse(client: str, payload: object, event: str | None = None) -> HookEvent:
    """Read one hook payload of `client`; `event` is the client's event name the hook command was given."""
    if client not in EVENTS:
        raise ValueError(f"unknown client {client!r}: expected one of {', '.join(EVENTS)}")
    data: dict[str, Any] = payload if isinstance(payload, dict) else {}
    raw = data
    if client == "opencode":
        data = _from_opencode(data)
    name = event or _text(data.get("hook_event_name")) or _text(data.get("hookEventName")) or ""
    kind = _kind(client, name) if isinstance(payload, dict) else "other"
    if client == "codex" and kind == "prompt" and _text(data.get("agent_id")):
        kind = "other"  # a subagent's task, written by the parent agent: not the person's prompt
    if client == "claude-code" and kind == "prompt" and _notification(data.get("prompt")):
        kind = "other"  # a background task's notification, sent as a prompt: nobody typed it, no recall
    fields: dict[str, Any] = {}
    match kind:
        case "session_start":
            fields["source"] = _source(client, data)
        case "prompt":
            fields["prompt"] = _prompt(client, data)
        case "reply" | "subagent":
            fields["reply"] = _first_text(data, "last_assistant_message", "prompt_response", "text", "result")
            if client == "gemini":  # AfterAgent's prompt: stored from it when there is no transcript to read
                fields["prompt"] = _prompt(client, data)
        case "compact":
            fields["reply"] = _text(data.get("compact_summary"))  # Claude Code's PostCompact summary
        case "tool":
            fields["tool"] = _tool(name, data)
            if client == "codex":
                fields["tool"] = _codex_exit(fields["tool"], data)
    return HookEvent(
        client=client,
        event=name,
        kind=kind,
        session_id=_first_text(data, "session_id", "sessionId", "conversation_id") or "",
        cwd=_cwd(data),
        transcript_path=_first_text(data, "transcript_path", "transcriptPath"),
        time=_time(data.get("timestamp")),
        raw=raw,
        **fields,
    )


def render(event: HookEvent, context: str) -> str:
    """What the hook prints to inject `context` for this client and event (its neutral answer if it cannot)."""
    hook_event_name = _INJECTS.get(event.client, {}).get(event.kind)
    text = _clip(context, CAP_CHARS.get(event.client, 10_000))
    if hook_event_name is None or not text.strip():
        return render_nothing(event)
    if event.client == "cursor":
        return json.dumps({"continue": True, "additional_context": text})
    if event.client == "gemini":
        from mcp_memory.hooks import gemini  # only Gemini's hooks pay for its transcript reader's import

        text = gemini.marked(text)
    return json.dumps({"hookSpecificOutput": {"hookEventName": hook_event_name, "additionalContext": text}})


def can_inject(client: str) -> bool:
    """Whether any event's output of this client reaches the model (Copilot CLI's: none)."""
    return bool(_INJECTS.get(client))


def injects_at_prompt(client: str) -> bool:
    """Whether this client's prompt hook reaches the model (its session's brief can wait for the prompt)."""
    return "prompt" in _INJECTS.get(client, {})


def render_nothing(event: HookEvent) -> str:
    """What the hook prints when it has nothing to add, or when anything failed: the answer that changes nothing."""
    match event.client:
        case "cursor":  # JSON both ways; some events expect an answer (see _CURSOR_NEUTRAL)
            return json.dumps(_CURSOR_NEUTRAL.get(event.event, {}))
        case "gemini" | "vscode" | "copilot":  # stdout must be JSON only; every output field is optional
            return "{}"
        case _:  # Claude Code, Codex: no output is "go on", and leaves permission decisions to the user
            return ""


def _notification(prompt: object) -> bool:
    """Claude Code's note that a background task ended (`<task-notification>...`), which it also fires
    UserPromptSubmit for (measured with 2.1.332; hooks/transcripts.py keeps it as an observation)."""
    return isinstance(prompt, str) and prompt.lstrip().startswith("<task-notification>")


def _prompt(client: str, data: dict[str, Any]) -> str | None:
    """The prompt typed. Gemini's headless prompt carries SessionStart's context in a <hook_context> block:
    never stored, nor searched for."""
    prompt = _text(data.get("prompt"))
    if client != "gemini" or not prompt:
        return prompt
    from mcp_memory.hooks import gemini  # only Gemini's hooks pay for its transcript reader's import

    return _text(gemini.without_injected(prompt))


def _kind(client: str, name: str) -> EventKind:
    tables = (EVENTS[client], _ALSO_READ.get(client, {}))
    for table in tables:
        if name in table:
            return table[name]
    folded = name.casefold()
    for table in tables:
        for known, kind in table.items():
            if known.casefold() == folded:
                return kind
    return "other"


def _tool(event_name: str, data: dict[str, Any]) -> ToolRun:
    """A tool call as an observation: which files it wrote, which command it ran, whether that failed."""
    name = _first_text(data, "tool_name", "toolName") or event_name
    tool_input = as_dict(data.get("tool_input", data.get("toolArgs")))
    if not tool_input and event_name in _TOP_LEVEL_TOOL_EVENTS:
        tool_input = data
    lowered = name.casefold()
    command = _text(tool_input.get("command")) if lowered in _SHELL_TOOLS else None
    error = _first_text(data, "error", "error_message") or ""
    if not error and (data.get("is_interrupt") is True or event_name.casefold() == "posttoolusefailure"):
        error = "interrupted" if data.get("is_interrupt") is True else "failed"
    response = next((data[k] for k in _RESPONSE_KEYS if data.get(k) is not None), None)
    exit_code, failed, detail = _outcome(response, error, shell=command is not None)
    return ToolRun(
        name=name,
        paths=_paths(lowered, tool_input),
        command=command,
        exit_code=exit_code,
        failed=failed,
        excerpt=_excerpt(detail) if failed else "",
    )


def _codex_exit(tool: ToolRun, data: dict[str, Any]) -> ToolRun:
    """Codex's shell output carries no exit status (0.171.0): read it from its session file."""
    if tool.command is None or tool.exit_code is not None:
        return tool
    from mcp_memory.hooks import codex_rollout  # only for a Codex shell command

    code = codex_rollout.exit_code(_text(data.get("transcript_path")), _text(data.get("tool_use_id")))
    return with_exit_code(tool, code, data.get("tool_response"))


def with_exit_code(tool: ToolRun, code: int | None, output: object) -> ToolRun:
    """A shell command's run with the exit status read elsewhere (Codex's session file); a failure's
    excerpt comes from its output."""
    if not code:
        return tool._replace(exit_code=code)
    return tool._replace(
        exit_code=code, failed=True, excerpt=_excerpt(output if isinstance(output, str) else "")
    )


_RESPONSE_KEYS = ("tool_response", "tool_output", "toolResult", "tool_result", "output", "result_json")


def _outcome(response: object, error: str, *, shell: bool) -> tuple[int | None, bool, str]:
    """(exit code, failed, the text an error excerpt comes from). Output is read for shells only: a read
    file's content must never pass for an error message."""
    report = response if isinstance(response, dict) else {}
    exit_code = _int(report.get("exit_code", report.get("exitCode")))
    failed = bool(error) or _flagged(report)
    detail = error or _error_text(report)
    output = response if isinstance(response, str) else _first_text(report, *_OUTPUT_KEYS) or ""
    if shell and exit_code is None:
        exit_code = _exit_status(detail)
        if exit_code is None:
            exit_code = _exit_status(output)
    if exit_code:
        failed = True
    if failed and shell and not detail:
        detail = _text(report.get("stderr")) or output
    return exit_code, failed, detail


_OUTPUT_KEYS = ("llmContent", "output", "textResultForLlm", "text_result_for_llm", "stdout")


def _flagged(report: dict[str, Any]) -> bool:
    result_type = _first_text(report, "resultType", "result_type")
    return (
        report.get("is_error") is True
        or report.get("isError") is True
        or bool(report.get("error"))
        or (result_type or "").casefold() in _FAILED_RESULTS
    )


def _error_text(report: dict[str, Any]) -> str:
    error = report.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if _text(error):
        return str(error)
    if _flagged(report):
        return _first_text(report, "textResultForLlm", "text_result_for_llm", "stderr") or ""
    return ""


def _exit_status(text: str) -> int | None:
    if not text:
        return None
    found = _EXIT.search(text[:_SCAN_CHARS]) or _EXIT.search(text[-_SCAN_CHARS:])
    return int(found.group(1)) if found else None


def _excerpt(text: str) -> str:
    """The first lines of an error, at most 300 characters, without the clients' bookkeeping lines."""
    lines: list[str] = []
    for line in text[:_SCAN_CHARS].splitlines():
        line = line.strip()
        if not line or _BOOKKEEPING.match(line):
            continue
        lines.append(line.removeprefix("Output: ").removeprefix("Error: "))
        if sum(len(kept) + 1 for kept in lines) > _EXCERPT_CHARS:
            break
    return "\n".join(lines)[:_EXCERPT_CHARS]


def _paths(tool: str, tool_input: dict[str, Any]) -> tuple[str, ...]:
    """The files a writing tool created or edited, by path; reads and searches have none."""
    if tool not in _WRITE_TOOLS:
        return ()
    if tool == "apply_patch":  # Codex: tool_input.command is the patch; only its file headers are kept
        patch = _first_text(tool_input, "command", "input", "patch", "patchText") or ""  # patchText: OpenCode
        found = [a or b for a, b in _PATCH_FILE.findall(patch)]
    else:
        found = [tool_input.get(key) for key in _PATH_KEYS]
        for key in _PATH_LIST_KEYS:
            listed = tool_input.get(key)
            found += listed if isinstance(listed, list) else []
    paths = [p.strip() for p in found if isinstance(p, str) and 0 < len(p) <= 4096 and "\n" not in p]
    return tuple(dict.fromkeys(p for p in paths if p))


def _source(client: str, data: dict[str, Any]) -> str | None:
    source = _text(data.get("source"))
    if source == "new" or (source is None and client == "cursor"):
        return "startup"  # VS Code / Copilot's "new"; Cursor's sessionStart fires for new conversations only
    return source


def _cwd(data: dict[str, Any]) -> str:
    roots = data.get("workspace_roots")
    first_root = roots[0] if isinstance(roots, list) and roots else None
    return _text(data.get("cwd")) or _text(first_root) or os.getcwd()


def _time(value: object) -> str | None:
    """ISO 8601 as sent, or a Unix time (Copilot CLI sends milliseconds) made into one."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    seconds = value / 1000 if value > 100_000_000_000 else value
    if not 0 <= seconds < 253_402_300_800:  # before year 10000
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def _clip(context: str, cap: int) -> str:
    """The context within the client's cap, cut at a line end when one is near."""
    if len(context) <= cap:
        return context
    cut = context[:cap]
    line_end = cut.rfind("\n")
    return cut[:line_end] if line_end > cap // 2 else cut


def as_dict(value: object) -> dict[str, Any]:
    """A tool's input: an object, or a JSON object in a string (Cursor's MCP and Copilot CLI's toolArgs)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_text(data: dict[str, Any], *keys: str) -> str | None:
    return next((str(data[k]) for k in keys if _text(data.get(k))), None)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_OPENCODE_NAMES = {
    "event": "hook_event_name",
    "sessionID": "session_id",
    "directory": "cwd",
    "text": "last_assistant_message",
    "tool": "tool_name",
    "args": "tool_input",
}


def _from_opencode(data: dict[str, Any]) -> dict[str, Any]:
    """What the OpenCode plugin sends ({event, sessionID, directory, timestamp, and the hook's own fields:
    prompt; text; tool, args, metadata, output}) in the names the readers above take."""
    renamed = {name: data[key] for key, name in _OPENCODE_NAMES.items() if key in data}
    if "tool" not in data:
        return {**data, **renamed}
    metadata = as_dict(data.get("metadata"))
    response = {"exit_code": metadata.get("exit"), "output": data.get("output")}
    if metadata.get("error") or data.get("error"):
        response["error"] = metadata.get("error") or data.get("error")
    return {**data, **renamed, "tool_response": response}
