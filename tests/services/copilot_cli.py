"""The real GitHub Copilot CLI for the suite: npm package @github/copilot, run headless (`copilot -p`).

Installed once into <repo>/.cache/copilot-cli (or $COPILOT_CLI_DIR), under a lock so parallel test processes
install it once. npm puts the platform's native binary in its own package (@github/copilot-linux-x64, ...);
we run that binary directly (the package's npm-loader.js only finds and starts it).

`run_copilot(prompt, cwd=..., home=..., api=...)` runs `copilot -p PROMPT --allow-all-tools -s` offline
(COPILOT_OFFLINE: no GitHub sign-in, telemetry or update) against the stand-in Chat Completions API
(tests/services/chat_completions.py) as its bring-your-own-key provider (COPILOT_PROVIDER_BASE_URL), with
HOME in the test's own directory so the user's real ~/.copilot is never read or written. The run's result
carries the stand-in's requests made during it and the session's log (~/.copilot/session-state/<session>/
events.jsonl), which records every hook's run.
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

VERSION = "1.0.102"
PACKAGE = f"@github/copilot@{VERSION}"
RUN_SECONDS = 120.0


def copilot_binary() -> Path:
    """The native `copilot` binary, installed on first use."""
    install_dir = npm_cli.install_dir("copilot-cli", "COPILOT_CLI_DIR")
    binary = (
        install_dir
        / "node_modules"
        / "@github"
        / f"copilot-{npm_cli.platform_suffix('Copilot CLI')}"
        / "copilot"
    )

    def problem() -> str | None:
        version = npm_cli.version_of(binary, {"COPILOT_OFFLINE": "true"})
        return None if VERSION in version else f"{binary} --version says {version!r}"

    npm_cli.install_pinned(PACKAGE, install_dir, binary, problem)
    return binary


@dataclass(frozen=True)
class CopilotRun(npm_cli.CliRun):
    log: list[dict[str, Any]]  # the session's events.jsonl

    @property
    def conversation(self) -> list[RecordedRequest]:
        return [r for r in self.requests if is_conversation(r)]

    def hooks(self) -> list[dict[str, Any]]:
        """The log's hook.end events: {hookType, success, ...}."""
        return [
            e["data"] for e in self.log if e.get("type") == "hook.end" and isinstance(e.get("data"), dict)
        ]

    def describe(self) -> str:
        return (
            f"copilot exited {self.exit_code} after {self.seconds:.1f}s\nstdout: {self.stdout[-1500:]}\n"
            f"stderr: {self.stderr[-2500:]}\nhooks: {self.hooks()}"
        )


def copilot_env(home: Path, api: ChatCompletionsAPI, env: Mapping[str, str] | None = None) -> dict[str, str]:
    model = {
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": api.base_url,
        "COPILOT_PROVIDER_API_KEY": "test-not-a-key",
        "COPILOT_MODEL": MODEL,
    }
    return npm_cli.private_env(home, model, env)


def run_copilot(
    prompt: str,
    *,
    cwd: Path,
    home: Path,
    api: ChatCompletionsAPI,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> CopilotRun:
    """`copilot -p PROMPT --allow-all-tools -s` in `cwd`, as a user whose home is `home`."""
    binary = copilot_binary()
    before = len(api.requests)
    sessions = home / ".copilot" / "session-state"
    known = set(sessions.iterdir()) if sessions.is_dir() else set()
    done, seconds = npm_cli.run(
        [str(binary), "-p", prompt, "--allow-all-tools", "-s", "--disable-client-telemetry"],
        what=f"copilot -p {prompt!r}",
        cwd=cwd,
        env=copilot_env(home, api, env),
        timeout=timeout,
    )
    log: list[dict[str, Any]] = []
    for folder in (set(sessions.iterdir()) if sessions.is_dir() else set()) - known:
        events = folder / "events.jsonl"
        if events.is_file():
            log += [
                json.loads(line) for line in events.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
    return CopilotRun(done.returncode, done.stdout, done.stderr, seconds, api.requests[before:], log)
