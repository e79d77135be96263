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
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.services.chat_completions import MODEL, ChatCompletionsAPI, is_conversation
from tests.services.claude_code import _install_lock
from tests.services.model_api import RecordedRequest
from tests.services.node_service import cache_dir, npm_install

VERSION = "1.0.102"
PACKAGE = f"@github/copilot@{VERSION}"
RUN_SECONDS = 120.0
_VERSION_SECONDS = 30.0
_INHERITED = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")


def _install_dir() -> Path:
    override = os.environ.get("COPILOT_CLI_DIR")
    return Path(override) if override else cache_dir("copilot-cli")


def _platform_package() -> str:
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if system is None or arch is None:
        pytest.fail(f"Copilot CLI's tests run on Linux or macOS, x64 or arm64, not {platform.system()}")
    return f"copilot-{system}-{arch}"


def copilot_binary() -> Path:
    """The native `copilot` binary, installed on first use."""
    install_dir = _install_dir()
    binary = install_dir / "node_modules" / "@github" / _platform_package() / "copilot"
    with _install_lock(install_dir):
        npm_install(PACKAGE, install_dir, binary)
        version = _version(binary)
        if VERSION not in version:
            shutil.rmtree(install_dir)
            npm_install(PACKAGE, install_dir, binary)
            version = _version(binary)
        if VERSION not in version:
            pytest.fail(
                f"npm installed {PACKAGE} into {install_dir}, but {binary} --version says {version!r}"
            )
    return binary


def _version(binary: Path) -> str:
    try:
        found = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=_VERSION_SECONDS,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(binary.parent), "COPILOT_OFFLINE": "true"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(did not run: {e})"
    return (found.stdout + found.stderr).strip()


@dataclass(frozen=True)
class CopilotRun:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    requests: list[RecordedRequest]  # what the stand-in received during this run
    log: list[dict[str, Any]]  # the session's events.jsonl

    @property
    def conversation(self) -> list[RecordedRequest]:
        return [r for r in self.requests if is_conversation(r)]

    def mentions(self, text: str) -> bool:
        return any(r.contains(text) for r in self.requests)

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
    inherited = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    return {
        **inherited,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": api.base_url,
        "COPILOT_PROVIDER_API_KEY": "test-not-a-key",
        "COPILOT_MODEL": MODEL,
        **(env or {}),
    }


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
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(binary), "-p", prompt, "--allow-all-tools", "-s", "--disable-client-telemetry"],
            cwd=cwd,
            env=copilot_env(home, api, env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"copilot -p {prompt!r} did not finish within {timeout:g}s; stderr: {e.stderr!r}")
    seconds = time.monotonic() - started
    log: list[dict[str, Any]] = []
    for folder in (set(sessions.iterdir()) if sessions.is_dir() else set()) - known:
        events = folder / "events.jsonl"
        if events.is_file():
            log += [
                json.loads(line) for line in events.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
    return CopilotRun(done.returncode, done.stdout, done.stderr, seconds, api.requests[before:], log)
