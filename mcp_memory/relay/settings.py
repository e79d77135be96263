"""What a relay must know of the settings, read as config/settings.py reads them (the environment's
MCP_MEMORY_* variables over the MCP_MEMORY_* lines of ./.env, names in any case) but with the standard
library only: pydantic alone costs a relay more than its whole start.

- `fingerprint`: the settings a server is built from, and mcp-memory's version. A relay uses the resident
  server only when their fingerprints are equal: another user id, tool profile, backend, model... is
  another server (and one left running by an older version is not asked to serve a newer relay).
- Left out of it, because they do not make another server: the data directory (it names the resident
  server: its socket is in it), MCP_MEMORY_HOOKS__CAPTURE (it only changes the instructions, and the
  relay sends it with its session: mcp/middleware/session_instructions.py) and MCP_MEMORY_IN_PROCESS.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from mcp_memory import __version__

PREFIX = "MCP_MEMORY_"
IN_PROCESS_VARIABLE = "MCP_MEMORY_IN_PROCESS"  # the in_process setting: serve stdio in this process
CAPTURE_VARIABLE = "MCP_MEMORY_HOOKS__CAPTURE"
DATA_DIR_VARIABLE = "MCP_MEMORY_DATA_DIR"
SESSION_ONLY = frozenset({CAPTURE_VARIABLE, DATA_DIR_VARIABLE, IN_PROCESS_VARIABLE})
OUTSIDE_PREFIX = ("MEMORY_FILE_PATH",)  # read by config/settings.py too (the reference server's setting)
TRUE_WORDS = frozenset({"1", "true", "t", "yes", "y", "on"})  # what pydantic reads as True


def effective(environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """The MCP_MEMORY_* settings (upper-cased names) and MEMORY_FILE_PATH this process's Settings() reads."""
    values = _dotenv(cwd / ".env")
    for name, value in environ.items():
        upper = name.upper()
        if upper.startswith(PREFIX) or upper in OUTSIDE_PREFIX:
            values[upper] = value
    return values


def fingerprint(values: Mapping[str, str]) -> str:
    """One string for the settings a server is built from (the module docstring says what is left out)."""
    digest = hashlib.sha256(__version__.encode())
    for name in sorted(values):
        if name not in SESSION_ONLY:
            digest.update(b"\0" + name.encode() + b"=" + values[name].encode(errors="surrogateescape"))
    return digest.hexdigest()[:32]


def captured(values: Mapping[str, str]) -> bool:
    return values.get(CAPTURE_VARIABLE, "").strip().lower() in TRUE_WORDS


def in_process_requested(values: Mapping[str, str]) -> bool:
    return values.get(IN_PROCESS_VARIABLE, "").strip().lower() in TRUE_WORDS


def data_dir(values: Mapping[str, str]) -> Path:
    configured = values.get(DATA_DIR_VARIABLE)
    if configured:
        return Path(configured)
    import platformdirs  # as config/settings.py finds the default

    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


def _dotenv(path: Path) -> dict[str, str]:
    """The MCP_MEMORY_* lines of a .env file (KEY=VALUE, optional `export`, quotes, # comments)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        name, found, value = line.partition("=")
        name, value = name.strip().upper(), value.strip()
        if not found or not (name.startswith(PREFIX) or name in OUTSIDE_PREFIX):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[name] = value
    return values


def current() -> dict[str, str]:
    return effective(os.environ, Path.cwd())
