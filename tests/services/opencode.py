"""The real OpenCode CLI for the suite: npm package opencode-ai, run headless (`opencode run`).

Installed once into <repo>/.cache/opencode (or $OPENCODE_DIR), under a lock so parallel test processes
install it once. npm puts the platform's native binary in its own package (opencode-linux-x64, ...); we run
that binary directly, so the package's postinstall (which only copies it to bin/opencode.exe) need not run.
A failed or interrupted install is retried once from scratch, then fails the test with npm's output.

`run_opencode(prompt, cwd=..., home=..., api=...)` sends the prompt on stdin (`opencode run` takes it there
verbatim; words on the command line are joined and those with blanks quoted) with `--format json`, against
the stand-in Chat Completions API (tests/services/chat_completions.py), configured as a custom
OpenAI-compatible provider in the run's own config file (OPENCODE_CONFIG), with HOME and the XDG folders
in the test's home so the user's real ~/.config/opencode is never read or written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.services import npm_cli
from tests.services.chat_completions import MODEL, ChatCompletionsAPI, is_conversation
from tests.services.model_api import RecordedRequest

VERSION = "1.18.33"
PACKAGE = f"opencode-ai@{VERSION}"
RUN_SECONDS = 120.0


def opencode_binary() -> Path:
    """The native `opencode` binary, installed on first use."""
    install_dir = npm_cli.install_dir("opencode", "OPENCODE_DIR")
    binary = (
        install_dir / "node_modules" / f"opencode-{npm_cli.platform_suffix('OpenCode')}" / "bin" / "opencode"
    )

    def problem() -> str | None:
        version = npm_cli.version_of(binary)
        return None if version == VERSION else f"{binary} --version says {version!r}"

    npm_cli.install_pinned(PACKAGE, install_dir, binary, problem)
    return binary


@dataclass(frozen=True)
class OpenCodeRun(npm_cli.CliRun):
    events: list[dict[str, Any]]  # stdout's JSON lines (--format json)

    @property
    def reply(self) -> str:
        """The text the agent answered with (the text parts of its last message)."""
        texts = [e for e in self.events if e.get("type") == "text"]
        last = texts[-1]["part"].get("messageID") if texts else None
        return "".join(e["part"].get("text", "") for e in texts if e["part"].get("messageID") == last)

    @property
    def session_id(self) -> str | None:
        return next((str(e["sessionID"]) for e in self.events if e.get("sessionID")), None)

    @property
    def conversation(self) -> list[RecordedRequest]:
        return [r for r in self.requests if is_conversation(r)]

    def system_prompt(self, request: RecordedRequest) -> str:
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        return "\n".join(
            str(m.get("content")) for m in messages or [] if isinstance(m, dict) and m.get("role") == "system"
        )

    def describe(self) -> str:
        return (
            f"opencode exited {self.exit_code} after {self.seconds:.1f}s\nstdout: {self.stdout[-1500:]}\n"
            f"stderr: {self.stderr[-2500:]}"
        )


def provider_config(api: ChatCompletionsAPI) -> dict[str, Any]:
    """OpenCode's config for the stand-in: a custom OpenAI-compatible provider, nothing shared or updated."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "standin": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Stand-in",
                "options": {"baseURL": api.base_url, "apiKey": "test-not-a-key"},
                "models": {MODEL: {"name": "Stand-in"}},
            }
        },
        "model": f"standin/{MODEL}",
        "small_model": f"standin/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
    }


def opencode_env(home: Path, api: ChatCompletionsAPI, env: Mapping[str, str] | None = None) -> dict[str, str]:
    config = home / "stand-in.opencode.json"
    config.write_text(json.dumps(provider_config(api)), encoding="utf-8")
    own = {
        "OPENCODE_CONFIG": str(config),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
    }
    return npm_cli.private_env(home, own, env)


def run_opencode(
    prompt: str,
    *,
    cwd: Path,
    home: Path,
    api: ChatCompletionsAPI,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> OpenCodeRun:
    """`opencode run --format json` in `cwd` with `prompt` on stdin, as a user whose home is `home`."""
    binary = opencode_binary()
    before = len(api.requests)
    done, seconds = npm_cli.run(
        [str(binary), "run", "--format", "json", "--print-logs", "--log-level", "WARN"],
        what=f"opencode run {prompt!r}",
        cwd=cwd,
        env=opencode_env(home, api, env),
        timeout=timeout,
        stdin=prompt,
    )
    events: list[dict[str, Any]] = []
    for line in done.stdout.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            events.append(parsed)
    return OpenCodeRun(done.returncode, done.stdout, done.stderr, seconds, api.requests[before:], events)
