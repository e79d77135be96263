"""The real Claude Code CLI for the suite: npm package @anthropic-ai/claude-code, run headless.

Installed once into <repo>/.cache/claude-code (or $CLAUDE_CODE_DIR), under a lock so parallel test
processes install it once. The package's postinstall puts the native binary at bin/claude.exe (no Node is
needed to run it); a failed or interrupted install is retried once from scratch, then fails the test with
npm's output: never a skip.

`run_claude(prompt, cwd=..., home=..., api=...)` runs `claude -p PROMPT --output-format json` against the
stand-in Messages API (tests/services/messages_api.py) with HOME set to the test's own directory, so the
user's real ~/.claude is never read or written, and with Claude Code's own traffic (telemetry, updates,
error reports) switched off. Nothing needs seeding in HOME for -p: no onboarding or trust dialog runs
headless, and hooks in ~/.claude/settings.json (user scope) or <cwd>/.claude/settings.json (project
scope) both fire. The run's result carries the stand-in's requests made during it and the session's
transcript (~/.claude/projects/<cwd>/<session>.jsonl), which records every hook's output, exit code
and duration.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.services import npm_cli
from tests.services.messages_api import MessagesAPI, RecordedRequest

VERSION = "2.1.332"
PACKAGE = f"@anthropic-ai/claude-code@{VERSION}"
RUN_SECONDS = 120.0

# Claude Code's calls home, none of which a test may make (the Messages API is the stand-in).
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
}


def claude_binary() -> Path:
    """The native `claude` binary, installed on first use."""
    install_dir = npm_cli.install_dir("claude-code", "CLAUDE_CODE_DIR")
    binary = install_dir / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"

    def problem() -> str | None:
        # An interrupted install (or one with scripts disabled) leaves the package's placeholder there.
        version = npm_cli.version_of(binary, QUIET)
        if VERSION in version:
            return None
        return (
            f"{binary} --version says {version!r}; the package's postinstall (node install.cjs) must run to "
            "put the native binary in place"
        )

    npm_cli.install_pinned(PACKAGE, install_dir, binary, problem)
    return binary


@dataclass(frozen=True)
class HookRun:
    """One hook's run, as the transcript records it."""

    event: str  # SessionStart, UserPromptSubmit, Stop, ...
    command: str
    exit_code: int | None
    duration_ms: int | None
    kind: str  # the transcript's attachment type: hook_success, hook_non_blocking_error, ...; "stop_hook"


@dataclass(frozen=True)
class ClaudeRun(npm_cli.CliRun):
    output: dict[str, Any] | None  # stdout parsed (--output-format json), None if it is not JSON
    transcript: list[dict[str, Any]]  # the session's transcript lines

    @property
    def conversation(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_conversation]

    def injected(self, event: str) -> str:
        """What the hooks of `event` added to the conversation (additionalContext, or plain stdout on
        SessionStart / UserPromptSubmit), as the transcript records it; "" when nothing."""
        parts: list[str] = []
        for attachment in self._attachments():
            if attachment.get("hookEvent") != event:
                continue
            if attachment.get("type") == "hook_additional_context":
                parts.extend(str(c) for c in attachment.get("content") or [])
            elif attachment.get("type") == "hook_success" and attachment.get("content"):
                parts.append(str(attachment["content"]))
        return "\n".join(parts)

    def hooks(self) -> list[HookRun]:
        runs: list[HookRun] = []
        for attachment in self._attachments():
            if "command" in attachment and attachment.get("type", "").startswith("hook_"):
                runs.append(
                    HookRun(
                        event=str(attachment.get("hookEvent")),
                        command=str(attachment["command"]),
                        exit_code=attachment.get("exitCode"),
                        duration_ms=attachment.get("durationMs"),
                        kind=str(attachment["type"]),
                    )
                )
        for line in self.transcript:
            if line.get("subtype") == "stop_hook_summary":
                failed = set(line.get("failedHookErrorIndexes") or [])
                for i, info in enumerate(line.get("hookInfos") or []):
                    runs.append(
                        HookRun(
                            event="Stop",
                            command=str(info.get("command")),
                            exit_code=1 if i in failed else 0,
                            duration_ms=info.get("durationMs"),
                            kind="stop_hook",
                        )
                    )
        return runs

    def hook_errors(self) -> list[str]:
        """Errors the hooks reported, as the transcript words them."""
        errors = [
            json.dumps(a)
            for a in self._attachments()
            if "error" in a.get("type", "") or a.get("exitCode") not in (None, 0)
        ]
        for line in self.transcript:
            if line.get("subtype") == "stop_hook_summary":
                errors.extend(str(e) for e in line.get("hookErrors") or [])
        return errors

    def _attachments(self) -> Iterator[dict[str, Any]]:
        for line in self.transcript:
            attachment = line.get("attachment")
            if isinstance(attachment, dict):
                yield attachment

    def describe(self) -> str:
        """For assertion messages."""
        return (
            f"claude exited {self.exit_code} after {self.seconds:.1f}s\nstdout: {self.stdout[-1500:]}\n"
            f"stderr: {self.stderr[-1500:]}\nhook errors: {self.hook_errors()}"
        )


def claude_env(home: Path, api: MessagesAPI, env: Mapping[str, str] | None = None) -> dict[str, str]:
    model = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"}
    return npm_cli.private_env(home, model, QUIET, env)


def run_claude(
    prompt: str,
    *,
    cwd: Path,
    home: Path,
    api: MessagesAPI,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> ClaudeRun:
    """`claude -p PROMPT --output-format json` in `cwd`, as a user whose home is `home`."""
    binary = claude_binary()
    before = len(api.requests)
    done, seconds = npm_cli.run(
        [str(binary), "-p", prompt, "--output-format", "json"],
        what=f"claude -p {prompt!r}",
        cwd=cwd,
        env=claude_env(home, api, env),
        timeout=timeout,
    )
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = None
    return ClaudeRun(
        exit_code=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr,
        output=output if isinstance(output, dict) else None,
        seconds=seconds,
        requests=api.requests[before:],
        transcript=_transcript(home, output),
    )


def _transcript(home: Path, output: Any) -> list[dict[str, Any]]:
    session = output.get("session_id") if isinstance(output, dict) else None
    if not session:
        return []
    lines: list[dict[str, Any]] = []
    for path in (home / ".claude" / "projects").glob(f"*/{session}.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                lines.append(json.loads(line))
    return lines
