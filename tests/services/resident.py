"""The hooks' resident servers a test started (`mcp-memory serve --socket`, started on demand by a hook):
found by the data dir in their environment and stopped, so no test leaves one running; stop_resident_servers
also ends the MCP servers, every process naming the data dir."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def resident_pids(data_dir: Path, marker_arg: bytes = b"--socket") -> list[int]:
    found = []
    marker = f"MCP_MEMORY_DATA_DIR={data_dir}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if marker_arg in cmdline.split(b"\0") and marker in environ.split(b"\0"):
            found.append(int(pid))
    return found


def stop_resident(data_dir: Path, grace: float = 10.0, marker_arg: bytes = b"--socket") -> None:
    """SIGTERM, then SIGKILL after `grace` seconds, every resident server of this data dir (with
    marker_arg=b"courier": every courier the team-mode hooks started for it)."""
    pids = resident_pids(data_dir, marker_arg)
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        time.sleep(0.1)
        pids = [pid for pid in pids if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def stop_resident_servers(data_dir: Path) -> None:
    """End every process this test's memory started (the hooks' resident server, MCP servers): those whose
    command line or environment names the test's own data dir. By pid, never by name."""
    needle = str(data_dir).encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes() or needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:  # gone already, or not ours to read
            continue
    for pid in found:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in found):
        time.sleep(0.05)
    for pid in found:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    except OSError:
        return False
    return state != "Z"
