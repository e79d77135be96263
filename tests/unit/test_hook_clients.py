"""Each client's hook payloads, as its documentation shows them, read into one HookEvent; and what each prints."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.hooks.clients import CAP_CHARS, EVENTS, can_inject, parse, render, render_nothing
from mcp_memory.hooks.events import CLIENTS, KINDS, HookEvent

PAYLOADS = Path(__file__).parent / "hook_payloads"


def _fixture(client: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PAYLOADS / f"{client}.json").read_text())
    return loaded


def _cases() -> list[Any]:
    cases = []
    for client in CLIENTS:
        for number, case in enumerate(_fixture(client)["cases"]):
            name = (
                case.get("event")
                or case["payload"].get("hook_event_name")
                or case["payload"].get("hookEventName")
                or case["payload"].get("event")
            )
            cases.append(pytest.param(client, case, id=f"{client}-{number}-{name}"))
    return cases


@pytest.mark.parametrize(("client", "case"), _cases())
def test_every_documented_payload_parses_to_its_kind_and_fields(client: str, case: dict[str, Any]) -> None:
    event = parse(client, case["payload"], case.get("event"))
    expected = dict(case["expect"])
    expected_tool = expected.pop("tool", "absent")
    for field, value in expected.items():
        assert getattr(event, field) == value, field
    if expected_tool is None:
        assert event.tool is None
    elif expected_tool != "absent":
        assert event.tool is not None
        tool = event.tool._asdict() | {"paths": list(event.tool.paths)}
        assert {field: tool[field] for field in expected_tool} == expected_tool
    assert event.client == client
    assert event.raw == case["payload"]
    assert event.cwd  # the payload's, a workspace root, or the current directory


@pytest.mark.parametrize("client", CLIENTS)
def test_the_fixtures_cover_every_event_the_installer_hooks(client: str) -> None:
    seen = set()
    for case in _fixture(client)["cases"]:
        payload = case["payload"]
        seen.add(
            case.get("event")
            or payload.get("hook_event_name")
            or payload.get("hookEventName")
            or payload.get("event")  # OpenCode's plugin
        )
    assert set(EVENTS[client]) - seen == set()
    assert _fixture(client)["_source"].count("https://") >= 1


def test_every_client_of_the_event_model_has_an_adapter() -> None:
    assert set(EVENTS) == set(CLIENTS) == set(CAP_CHARS)
    assert all(kind != "other" for events in EVENTS.values() for kind in events.values())


def test_the_hook_commands_event_name_wins_over_the_payloads() -> None:
    event = parse("claude-code", {"hook_event_name": "Stop", "prompt": "hello"}, event="UserPromptSubmit")
    assert (event.event, event.kind, event.prompt) == ("UserPromptSubmit", "prompt", "hello")


def test_a_background_tasks_notification_fired_as_a_prompt_is_neither_a_prompt_nor_recalled() -> None:
    # As Claude Code 2.1.332 fires UserPromptSubmit for it (tests/e2e/test_claude_code_background_task.py).
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    event = parse("claude-code", {"session_id": "s", "prompt": note}, event="UserPromptSubmit")
    assert event.kind == "other"
    typed = parse(
        "claude-code", {"session_id": "s", "prompt": "what did <task-notification> say?"}, "UserPromptSubmit"
    )
    assert typed.kind == "prompt"


def test_an_unknown_client_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown client"):
        parse("emacs", {"hook_event_name": "SessionStart"})


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("payload", [None, [], ["SessionStart"], "SessionStart", 42, 1.5, b"{}", True])
def test_a_payload_that_is_not_an_object_is_other(client: str, payload: object) -> None:
    event = parse(client, payload, next(iter(EVENTS[client])))
    assert event.kind == "other"
    assert (event.session_id, event.cwd, event.raw, event.tool) == ("", os.getcwd(), {}, None)


ODD_VALUES: list[object] = [
    None, True, 0, -1, 10**30, 1e308, float("nan"), float("inf"), "", "x", "\x00\n", "{", "{not json",
    [], [None], [1, "a"], {}, {"message": 3}, {"a": {"b": [1]}}, "Exit code 1", "*** Add File: \n",
]  # fmt: skip
ODD_KEYS = [
    "hook_event_name", "hookEventName", "session_id", "sessionId", "conversation_id", "cwd", "workspace_roots",
    "transcript_path", "transcriptPath", "timestamp", "source", "prompt", "last_assistant_message",
    "prompt_response", "text", "result", "compact_summary", "tool_name", "toolName", "tool_input", "toolArgs",
    "tool_response", "tool_output", "toolResult", "tool_result", "output", "error", "error_message",
    "is_interrupt", "command", "file_path",
]  # fmt: skip


@pytest.mark.parametrize("client", CLIENTS)
def test_odd_field_types_never_raise(client: str) -> None:
    rng = random.Random(46)
    names = [*EVENTS[client], "PreToolUse", "afterFileEdit", "afterShellExecution", "postToolUseFailure", ""]
    for _ in range(3000):
        payload = {key: rng.choice(ODD_VALUES) for key in rng.sample(ODD_KEYS, rng.randint(0, len(ODD_KEYS)))}
        for key in ("tool_input", "toolArgs", "tool_response", "toolResult"):
            if rng.random() < 0.3:
                payload[key] = {k: rng.choice(ODD_VALUES) for k in rng.sample(ODD_KEYS, 5)}
        event = parse(client, payload, rng.choice([None, *names]))
        assert event.kind in KINDS
        assert isinstance(event.session_id, str) and isinstance(event.cwd, str)
        if event.tool is not None:
            assert all(isinstance(path, str) and "\n" not in path for path in event.tool.paths)
            assert len(event.tool.excerpt) <= 300
        render(event, "recalled")  # and writing the answer never raises either
        render_nothing(event)


CONTENT = "SECRET_FILE_BODY = 'x'\n" * 450  # about 10 KB


@pytest.mark.parametrize(
    ("client", "event", "payload", "path"),
    [
        ("claude-code", None, {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": "/p/big.py", "content": CONTENT}, "tool_response": {"type": "create", "filePath": "/p/big.py", "content": CONTENT, "structuredPatch": [], "originalFile": None}}, "/p/big.py"),
        ("claude-code", None, {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": "/p/big.py", "old_string": CONTENT, "new_string": CONTENT}, "tool_response": {"filePath": "/p/big.py", "originalFile": CONTENT}}, "/p/big.py"),
        ("gemini", None, {"hook_event_name": "AfterTool", "tool_name": "write_file", "tool_input": {"file_path": "/p/big.py", "content": CONTENT}, "tool_response": {"llmContent": CONTENT, "returnDisplay": CONTENT}}, "/p/big.py"),
        ("cursor", None, {"hook_event_name": "afterFileEdit", "file_path": "/p/big.py", "edits": [{"old_string": "", "new_string": CONTENT}]}, "/p/big.py"),
        ("codex", None, {"hook_event_name": "PostToolUse", "tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n*** Add File: /p/big.py\n" + "".join("+" + line + "\n" for line in CONTENT.splitlines()) + "*** End Patch\n"}, "tool_response": "Success."}, "/p/big.py"),
        ("vscode", None, {"hookEventName": "PostToolUse", "tool_name": "create_file", "tool_input": {"filePath": "/p/big.py", "content": CONTENT}, "tool_response": CONTENT}, "/p/big.py"),
        ("vscode", "postToolUse", {"toolName": "create", "toolArgs": json.dumps({"path": "/p/big.py", "file_text": CONTENT}), "toolResult": {"resultType": "success", "textResultForLlm": CONTENT}}, "/p/big.py"),
    ],
)  # fmt: skip
def test_a_large_write_yields_only_its_path(
    client: str, event: str | None, payload: dict[str, Any], path: str
) -> None:
    tool = parse(client, payload, event).tool
    assert tool is not None
    assert (tool.paths, tool.command, tool.exit_code, tool.failed, tool.excerpt) == (
        (path,),
        None,
        None,
        False,
        "",
    )
    assert "SECRET_FILE_BODY" not in repr(tool)


@pytest.mark.parametrize(
    ("client", "payload"),
    [
        ("claude-code", {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": "make"}, "error": "Exit code 2\n" + "e" * 20_000}),
        ("codex", {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_response": "Exit code: 2\nOutput:\n" + ("error line\n" * 5_000)}),
        ("gemini", {"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "tool_input": {"command": "make"}, "tool_response": {"llmContent": "Output: " + ("error line\n" * 5_000) + "Exit Code: 2"}}),
    ],
)  # fmt: skip
def test_a_failing_commands_long_output_leaves_a_short_excerpt(client: str, payload: dict[str, Any]) -> None:
    tool = parse(client, payload).tool
    assert tool is not None
    assert (tool.command, tool.exit_code, tool.failed) == ("make", 2, True)
    assert 0 < len(tool.excerpt) <= 300
    assert "Exit" not in tool.excerpt and "Output:" not in tool.excerpt


def test_a_read_files_content_never_passes_for_an_error() -> None:
    content = "Exit code 1\nTraceback: this is a log file the agent read\n"
    payload = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/p/log.txt"},
    }
    tool = parse(
        "claude-code", payload | {"tool_response": {"type": "text", "file": {"content": content}}}
    ).tool
    assert tool is not None
    assert (tool.paths, tool.exit_code, tool.failed, tool.excerpt) == ((), None, False, "")


# Each client's events that inject context, and the JSON that carries it.
INJECTING = [
    ("claude-code", "SessionStart", {"source": "startup"}),
    ("claude-code", "UserPromptSubmit", {"prompt": "why?"}),
    ("codex", "SessionStart", {"source": "startup"}),
    ("codex", "UserPromptSubmit", {"prompt": "why?"}),
    ("gemini", "SessionStart", {"source": "startup"}),
    ("gemini", "BeforeAgent", {"prompt": "why?"}),
    ("vscode", "SessionStart", {"source": "new"}),
    ("cursor", "sessionStart", {"session_id": "c-1"}),
    ("opencode", "session.created", {"sessionID": "ses_1"}),
    ("opencode", "chat.message", {"prompt": "why?"}),
]
CONTEXT = "<recalled-memory>\nDecided: retries capped at 30 s (2 days ago, this project) — «naïve» ok\n</recalled-memory>"


def _context_in(client: str, event_name: str, output: str) -> str:
    answer = json.loads(output)
    if client == "cursor":
        assert answer["continue"] is True
        context: str = answer["additional_context"]
        return context
    assert answer["hookSpecificOutput"]["hookEventName"] == event_name
    context = answer["hookSpecificOutput"]["additionalContext"]
    return context


@pytest.mark.parametrize(("client", "event_name", "fields"), INJECTING)
def test_render_injects_the_context_as_the_client_reads_it(
    client: str, event_name: str, fields: dict[str, Any]
) -> None:
    event = parse(client, {"hook_event_name": event_name, **fields})
    assert _context_in(client, event_name, render(event, CONTEXT)) == CONTEXT


@pytest.mark.parametrize(("client", "event_name", "fields"), INJECTING)
def test_render_keeps_the_context_within_the_clients_cap(
    client: str, event_name: str, fields: dict[str, Any]
) -> None:
    event = parse(client, {"hook_event_name": event_name, **fields})
    long_context = "a recalled line of memory, repeated\n" * 2_000
    context = _context_in(client, event_name, render(event, long_context))
    assert 0 < len(context) <= CAP_CHARS[client]
    assert long_context.startswith(context)


def _all_events() -> list[Any]:
    extra = {
        "cursor": ["beforeShellExecution", "beforeReadFile", "preToolUse", "afterFileEdit"],
        "vscode": ["sessionStart", "agentStop"],
    }
    names = {
        client: [*EVENTS[client], "PreToolUse", "Notification", *extra.get(client, [])] for client in CLIENTS
    }
    return [pytest.param(client, name, id=f"{client}-{name}") for client in CLIENTS for name in names[client]]


@pytest.mark.parametrize(("client", "event_name"), _all_events())
def test_render_nothing_is_a_neutral_answer_the_client_accepts(client: str, event_name: str) -> None:
    event = parse(client, {"hook_event_name": event_name}, event_name)
    nothing = render_nothing(event)
    if client in ("claude-code", "codex", "opencode"):
        assert (
            nothing == ""
        )  # no output: go on, and leave every permission to the user (OpenCode: add nothing)
        return
    answer = json.loads(nothing)  # Cursor, Gemini, VS Code / Copilot: JSON only on stdout
    assert isinstance(answer, dict)
    assert answer.get("continue", True) is True
    assert answer.get("permission", "allow") == "allow"
    assert "decision" not in answer


@pytest.mark.parametrize(("client", "event_name"), _all_events())
def test_render_on_an_event_that_cannot_inject_is_the_neutral_answer(client: str, event_name: str) -> None:
    event = parse(client, {"hook_event_name": event_name}, event_name)
    if (client, event_name) in {(c, n) for c, n, _ in INJECTING} or (client, event_name) == (
        "vscode",
        "sessionStart",
    ):
        return
    assert render(event, CONTEXT) == render_nothing(event)
    assert "recalled" not in render(event, CONTEXT)


def test_cursor_answers_before_submit_prompt_and_before_read_file_without_blocking() -> None:
    prompt = parse("cursor", {"hook_event_name": "beforeSubmitPrompt", "prompt": "hi"})
    assert prompt.kind == "prompt"
    assert json.loads(render(prompt, CONTEXT)) == {"continue": True}  # it can allow or block, not add context
    assert json.loads(render_nothing(parse("cursor", {}, "beforeReadFile"))) == {"permission": "allow"}
    assert (
        json.loads(render_nothing(parse("cursor", {}, "beforeShellExecution"))) == {}
    )  # no decision: the user's


@pytest.mark.parametrize("client", CLIENTS)
def test_empty_context_is_the_neutral_answer(client: str) -> None:
    event = parse(client, {"hook_event_name": next(iter(EVENTS[client]))})
    assert render(event, "  \n") == render_nothing(event)


def test_a_hand_built_event_of_an_unknown_client_renders_nothing() -> None:
    event = HookEvent(client="emacs", event="SessionStart", kind="session_start", session_id="s", cwd="/")
    assert (render(event, CONTEXT), render_nothing(event)) == ("", "")


def test_the_module_imports_the_standard_library_only() -> None:
    code = "import sys, mcp_memory.hooks.clients; print(sorted(m for m in sys.modules if m.split('.')[0] in {'mcp_memory', 'pydantic', 'mcp', 'anyio', 'httpx'}))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(found.replace("'", '"')) == [
        "mcp_memory",
        "mcp_memory.hooks",
        "mcp_memory.hooks.clients",
        "mcp_memory.hooks.events",
    ]  # Gemini's transcript reader (hooks/gemini.py) only when a Gemini event needs it


def test_claude_code_hooks_run_by_vs_code_or_cursor_still_parse() -> None:
    # VS Code runs ~/.claude/settings.json hooks by default with its own payloads; Cursor can too
    # (https://code.visualstudio.com/docs/agent-customization/hooks, https://cursor.com/docs/reference/third-party-hooks).
    vscode = {
        "sessionId": "v-1",
        "hookEventName": "PostToolUse",
        "cwd": "/w",
        "tool_name": "create_file",
        "tool_input": {"filePath": "/w/a.ts", "content": "x"},
    }
    cursor = {
        "conversation_id": "c-1",
        "hook_event_name": "beforeSubmitPrompt",
        "workspace_roots": ["/c"],
        "prompt": "hi",
    }
    by_vscode, by_cursor = parse("claude-code", vscode), parse("claude-code", cursor, "UserPromptSubmit")
    assert (by_vscode.session_id, by_vscode.kind, by_vscode.tool and by_vscode.tool.paths) == (
        "v-1",
        "tool",
        ("/w/a.ts",),
    )
    assert (by_cursor.session_id, by_cursor.cwd, by_cursor.prompt) == ("c-1", "/c", "hi")


def test_only_copilot_cli_drops_every_hooks_output() -> None:
    assert [client for client in CLIENTS if not can_inject(client)] == ["copilot"]
