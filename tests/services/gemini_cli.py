"""The real Gemini CLI for the suite: npm package @google/gemini-cli, run headless.

Installed once into <repo>/.cache/gemini-cli (or $GEMINI_CLI_DIR) by tests/services/npm_cli.py: under a
lock, retried once from scratch, else a test failure, never a skip. It runs on Node
(tests/services/node_service.py finds it).

`run_gemini(prompt, cwd=..., home=..., api=...)` runs `gemini --skip-trust --approval-mode yolo -p PROMPT
--output-format json` against the stand-in Gemini API (tests/services/gemini_api.py) with HOME set to the
test's own directory, so the user's real ~/.gemini is never read or written. `prepare_home(home)` writes
what a user's ~/.gemini/settings.json needs first: API-key auth and none of the CLI's own traffic (usage
statistics, telemetry, update checks). The run's result carries the stand-in's requests made during it
and the session's transcript lines (~/.gemini/tmp/<project>/chats/session-*.jsonl).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.services import npm_cli
from tests.services.gemini_api import GeminiAPI, RecordedRequest
from tests.services.node_service import node

VERSION = "0.61.0"
PACKAGE = f"@google/gemini-cli@{VERSION}"
RUN_SECONDS = 120.0
# ~/.gemini/settings.json: the API key from the environment, and no calls home.
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def gemini_script() -> Path:
    """The CLI's entry script (bundle/gemini.js), installed on first use."""
    install_dir = npm_cli.install_dir("gemini-cli", "GEMINI_CLI_DIR")
    package = install_dir / "node_modules" / "@google" / "gemini-cli"
    script = package / "bundle" / "gemini.js"

    def problem() -> str | None:
        try:
            installed = json.loads((package / "package.json").read_text()).get("version")
        except (OSError, ValueError) as e:
            installed = f"(no readable package.json: {e})"
        return None if installed == VERSION else f"it holds @google/gemini-cli {installed}, not {VERSION}"

    npm_cli.install_pinned(PACKAGE, install_dir, script, problem)
    return script


def prepare_home(home: Path) -> Path:
    """A user's ~/.gemini/settings.json before anything is installed: API-key auth, no calls home."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(SETTINGS, indent=2))
    return settings


@dataclass(frozen=True)
class GeminiRun(npm_cli.CliRun):
    output: dict[str, Any] | None  # stdout parsed (--output-format json), None if it is not JSON
    transcript: list[dict[str, Any]]  # the session's transcript lines

    @property
    def response(self) -> str | None:
        value = self.output.get("response") if self.output else None
        return value if isinstance(value, str) else None

    @property
    def session_id(self) -> str | None:
        value = self.output.get("session_id") if self.output else None
        return value if isinstance(value, str) else None

    @property
    def conversation(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_conversation]

    def describe(self) -> str:
        """For assertion messages."""
        return (
            f"gemini exited {self.exit_code} after {self.seconds:.1f}s\nstdout: {self.stdout[-1500:]}\n"
            f"stderr: {self.stderr[-2500:]}"
        )


def gemini_env(home: Path, api: GeminiAPI, env: Mapping[str, str] | None = None) -> dict[str, str]:
    model = {"GOOGLE_GEMINI_BASE_URL": api.base_url, "GEMINI_API_KEY": "test-key-not-a-key", "NO_COLOR": "1"}
    return npm_cli.private_env(home, model, env)


def run_gemini(
    prompt: str,
    *,
    cwd: Path,
    home: Path,
    api: GeminiAPI,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> GeminiRun:
    """`gemini -p PROMPT` in `cwd`, as a user whose home is `home`, running tools without asking."""
    command = [node("Gemini CLI"), str(gemini_script())]
    command += ["--skip-trust", "--approval-mode", "yolo", "--output-format", "json", "-p", prompt]
    before = len(api.requests)
    done, seconds = npm_cli.run(
        command, what=f"gemini -p {prompt!r}", cwd=cwd, env=gemini_env(home, api, env), timeout=timeout
    )
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = None
    output = output if isinstance(output, dict) else None
    session = output.get("session_id") if output else None
    return GeminiRun(
        exit_code=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr,
        output=output,
        seconds=seconds,
        requests=api.requests[before:],
        transcript=_transcript(home, session if isinstance(session, str) else None),
    )


def _transcript(home: Path, session: str | None) -> list[dict[str, Any]]:
    if not session:
        return []
    lines: list[dict[str, Any]] = []
    for path in (home / ".gemini" / "tmp").glob(f"*/chats/session-*-{session[:8]}*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if records and records[0].get("sessionId") == session:
            lines += records
    return lines
