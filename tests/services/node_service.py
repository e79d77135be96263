"""What the suite's Node servers share: an npm package installed once into <repo>/.cache, a process whose
output says where it listens, and a stop that always ends it. Used by cosmos_server.py (the local
Cosmos-protocol server) and oidc_server.py (the authorization server). Failures are test failures
with the tool's own output, never skips.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HANG_SECONDS

INSTALL_SECONDS = 300.0
START_SECONDS = HANG_SECONDS  # a bound against a hang, not a speed test


def cache_dir(name: str) -> Path:
    return Path(__file__).resolve().parents[2] / ".cache" / name


def node(what: str) -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail(f"{what} needs Node.js (node) on PATH")
    return found


def npm_install(package: str, install_dir: Path, entry: Path) -> Path:
    """`npm install package` into install_dir unless `entry` (a file of the package) is there already."""
    if entry.exists():
        return entry
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"the tests need Node.js and npm on PATH to install {package}")
    install_dir.mkdir(parents=True, exist_ok=True)
    command = [
        npm,
        "install",
        "--prefix",
        str(install_dir),
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        package,
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"npm install {package} into {install_dir} took longer than {INSTALL_SECONDS:g}s")
    if result.returncode != 0 or not entry.exists():
        pytest.fail(f"npm install {package} into {install_dir} failed:\n{result.stderr[-2000:]}")
    return entry


def wait_for_line(process: subprocess.Popen[str], ready: re.Pattern[str], what: str) -> re.Match[str]:
    """Read the process's output until a line matches `ready`, then keep draining it in the background so
    a chatty server never blocks on a full pipe. Fails the test (and kills it) if that does not come."""
    found: list[re.Match[str]] = []
    output: list[str] = []
    seen = threading.Event()

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if not seen.is_set():
                output.append(line)
                match = ready.search(line)
                if match:
                    found.append(match)
                    seen.set()
        seen.set()  # the process ended

    threading.Thread(target=drain, daemon=True).start()
    if not seen.wait(START_SECONDS) or not found:
        process.kill()
        pytest.fail(
            f"{what} did not start within {START_SECONDS:g}s (exit code {process.poll()}):\n"
            + "".join(output)[-2000:]
        )
    return found[0]


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL after a grace period."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
