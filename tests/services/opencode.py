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

VERSION = "1.18.33"
PACKAGE = f"opencode-ai@{VERSION}"
RUN_SECONDS = 120.0
_VERSION_SECONDS = 30.0
_INHERITED = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")


def _install_dir() -> Path:
    override = os.environ.get("OPENCODE_DIR")
    return Path(override) if override else cache_dir("opencode")


def _platform_package() -> str:
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if system is None or arch is None:
        pytest.fail(
            f"OpenCode's tests run on Linux or macOS, x64 or arm64, not {platform.system()} {platform.machine()}"
        )
    return f"opencode-{system}-{arch}"


def opencode_binary() -> Path:
    """The native `opencode` binary, installed on first use."""
    install_dir = _install_dir()
    binary = install_dir / "node_modules" / _platform_package() / "bin" / "opencode"
    with _install_lock(install_dir):
        npm_install(PACKAGE, install_dir, binary)
        version = _version(binary)
        if version != VERSION:
            shutil.rmtree(install_dir)
            npm_install(PACKAGE, install_dir, binary)
            version = _version(binary)
        if version != VERSION:
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
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(binary.parent)},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(did not run: {e})"
    return (found.stdout + found.stderr).strip()


@dataclass(frozen=True)
class OpenCodeRun:
    exit_code: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]  # stdout's JSON lines (--format json)
    seconds: float
    requests: list[RecordedRequest]  # what the stand-in received during this run

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

    def mentions(self, text: str) -> bool:
        return any(r.contains(text) for r in self.requests)

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
    inherited = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    config = home / "stand-in.opencode.json"
    config.write_text(json.dumps(provider_config(api)), encoding="utf-8")
    return {
        **inherited,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG": str(config),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        **(env or {}),
    }


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
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(binary), "run", "--format", "json", "--print-logs", "--log-level", "WARN"],
            cwd=cwd,
            env=opencode_env(home, api, env),
            input=prompt,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"opencode run {prompt!r} did not finish within {timeout:g}s; stderr: {e.stderr!r}")
    seconds = time.monotonic() - started
    events: list[dict[str, Any]] = []
    for line in done.stdout.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            events.append(parsed)
    return OpenCodeRun(done.returncode, done.stdout, done.stderr, events, seconds, api.requests[before:])
