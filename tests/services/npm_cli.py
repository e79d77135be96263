"""What the suite's real coding-agent CLIs share (claude_code.py, codex_cli.py, gemini_cli.py, copilot_cli.py,
opencode.py): a pinned npm package installed once into <repo>/.cache/<name> under a lock, retried once from
scratch, else a test failure with the reason (never a skip); a private environment; a run with a timeout.
"""

from __future__ import annotations

import fcntl
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.services.node_service import cache_dir, npm_install

VERSION_SECONDS = 30.0
# What a CLI inherits from this process; everything else (the developer's API keys, the clients' and
# MCP_MEMORY_* settings) stays out.
INHERITED = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")


def install_dir(name: str, override: str) -> Path:
    """<repo>/.cache/<name>, or the folder the environment variable `override` names."""
    found = os.environ.get(override)
    return Path(found) if found else cache_dir(name)


@contextmanager
def install_lock(folder: Path) -> Iterator[None]:
    """Held while one test process installs into `folder`, so parallel processes install it once."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def install_pinned(package: str, folder: Path, entry: Path, problem: Callable[[], str | None]) -> None:
    """`npm install package` into `folder` (unless `entry` is there) and check it with `problem()`, which
    says what is wrong or None. A wrong install (interrupted, another version) is removed and installed
    once more; if still wrong, the test fails saying why."""
    with install_lock(folder):
        npm_install(package, folder, entry)
        if problem() is None:
            return
        shutil.rmtree(folder)
        npm_install(package, folder, entry)
        found = problem()
        if found is not None:
            pytest.fail(f"npm installed {package} into {folder}, but {found}")


def version_of(binary: Path, env: Mapping[str, str] | None = None) -> str:
    """What `binary --version` prints (stdout and stderr), or why it did not run."""
    try:
        found = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_SECONDS,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(binary.parent), **(env or {})},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(did not run: {e})"
    return (found.stdout + found.stderr).strip()


def platform_suffix(what: str) -> str:
    """npm's name for this platform in a native binary's package: linux-x64, darwin-arm64, ..."""
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if system is None or arch is None:
        pytest.fail(
            f"{what}'s tests run on Linux or macOS, x64 or arm64, not {platform.system()} {platform.machine()}"
        )
    return f"{system}-{arch}"


def private_env(home: Path, *layers: Mapping[str, str] | None) -> dict[str, str]:
    """PATH and the locale from this process, HOME and the XDG folders in `home`, then `layers` in order."""
    inherited = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env = {
        **inherited,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }
    for layer in layers:
        env.update(layer or {})
    return env


def run(
    command: Sequence[str],
    *,
    what: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `command` to its end with its output captured (and `stdin`, else none): the result and its
    seconds. Fails the test, naming `what` and its stderr, if it outlasts `timeout`."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            list(command),
            cwd=cwd,
            env=dict(env),
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{what} did not finish within {timeout:g}s; stderr: {e.stderr!r}")
    return done, time.monotonic() - started


@dataclass(frozen=True)
class CliRun:
    """What every client's run gives back; each client's result adds its own records."""

    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    requests: list[Any]  # what the stand-in model API received during this run (its RecordedRequests)

    def mentions(self, text: str) -> bool:
        """Whether any request of the run carried `text` to the model."""
        return any(r.contains(text) for r in self.requests)
