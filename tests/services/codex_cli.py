"""The real Codex CLI for the suite: npm package @openai/codex, pinned, run headless (`codex exec`).

Installed once into <repo>/.cache/codex (or $CODEX_CLI_DIR) under a lock, so parallel test processes
install it once (tests/services/npm_cli.py). The package carries Codex's native binary in a platform
package (@openai/codex-<platform>, vendor/<target>/bin/codex); no Node is needed to run it. A failed
install, or one without the native binary, is retried once from scratch, then fails the test: never a skip.

`run_codex(prompt, cwd=..., home=..., api=...)` runs `codex exec PROMPT` against the stand-in Responses API
(tests/services/responses_api.py), configured only by `-c` flags (a custom model provider "stand-in" whose
base_url is the stand-in's and whose key comes from an environment variable), with HOME set to the
test's own directory (so ~/.codex is the test's), the sandbox off (`danger-full-access`: the tests run
commands in their own temporary repositories) and nothing inherited but PATH and the locale. Codex says on
stderr which hooks it ran ("hook: SessionStart", "hook: SessionStart Completed"); the run's result
carries those lines and the stand-in's requests made during it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.services import npm_cli
from tests.services.responses_api import RecordedRequest, ResponsesAPI

VERSION = "0.171.0"
PACKAGE = f"@openai/codex@{VERSION}"
MODEL = "gpt-5.5"  # a model Codex knows: its tools include apply_patch
RUN_SECONDS = 120.0
_KEY_VARIABLE = "STAND_IN_API_KEY"
_HOOK_LINE = re.compile(r"^hook: (\w+)(?: (\w+))?$", re.M)


def _native_binary(install_dir: Path) -> Path | None:
    found = sorted((install_dir / "node_modules" / "@openai").glob("codex-*/vendor/*/bin/codex"))
    return found[0] if found else None


def codex_binary() -> Path:
    """The native `codex` binary of the pinned release, installed on first use."""
    install_dir = npm_cli.install_dir("codex", "CODEX_CLI_DIR")
    launcher = install_dir / "node_modules" / "@openai" / "codex" / "package.json"

    def problem() -> str | None:  # an interrupted install, or another version
        binary = _native_binary(install_dir)
        if binary is not None and VERSION in npm_cli.version_of(binary):
            return None
        return (
            f"no native codex {VERSION} binary is there (found {binary}); npm must install the package's "
            "optional platform dependency"
        )

    npm_cli.install_pinned(PACKAGE, install_dir, launcher, problem)
    binary = _native_binary(install_dir)
    assert binary is not None  # install_pinned checked it
    return binary


@dataclass(frozen=True)
class CodexRun(npm_cli.CliRun):
    """stdout is the final message; stderr Codex's log of the session: the prompt, the hooks it ran, the
    commands."""

    @property
    def turns(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_turn]

    def hooks(self) -> list[tuple[str, str]]:
        """(event, outcome) of every hook Codex ran: outcome Completed, Failed, ... ("" while started)."""
        return [(m.group(1), m.group(2) or "") for m in _HOOK_LINE.finditer(self.stderr)]

    def describe(self) -> str:
        """For assertion messages."""
        return (
            f"codex exec exited {self.exit_code} after {self.seconds:.1f}s\nstdout: {self.stdout[-1500:]}\n"
            f"stderr: {self.stderr[-3000:]}"
        )


def codex_args(api: ResponsesAPI, model: str = MODEL) -> list[str]:
    provider = (
        f'{{ name = "stand-in", base_url = "{api.base_url}", wire_api = "responses", '
        f'env_key = "{_KEY_VARIABLE}" }}'
    )
    return [
        "-c",
        'model_provider="stand-in"',
        "-c",
        f"model_providers.stand-in={provider}",
        "-c",
        f'model="{model}"',
    ]


def run_codex(
    prompt: str,
    *,
    cwd: Path,
    home: Path,
    api: ResponsesAPI,
    env: Mapping[str, str] | None = None,
    timeout: float = RUN_SECONDS,
) -> CodexRun:
    """`codex exec PROMPT` in `cwd`, as a user whose home is `home`."""
    binary = codex_binary()
    command = [
        str(binary),
        "exec",
        "--skip-git-repo-check",
        "-s",
        "danger-full-access",
        *codex_args(api),
        prompt,
    ]
    before = len(api.requests)
    done, seconds = npm_cli.run(
        command,
        what=f"codex exec {prompt!r}",
        cwd=cwd,
        env=npm_cli.private_env(home, {_KEY_VARIABLE: "sk-test-not-a-key"}, env),
        timeout=timeout,
    )
    return CodexRun(
        exit_code=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr,
        seconds=seconds,
        requests=api.requests[before:],
    )
