"""Events written to disk before anything else, so nothing is lost while the store is busy or down.

A hook writes its event here (one small JSON file, written whole then renamed into place) and returns;
the resident server stores what the spool holds and deletes each file once stored. A file the server
cannot store yet stays for the next attempt. Text is redacted (mcp_memory/redaction/, its fast
patterns) before it reaches the disk, and the directory is the user's alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_memory.hooks.events import HookEvent
from mcp_memory.hooks.projects import Project
from mcp_memory.private_files import make_dirs

SUFFIX = ".json"
LOG_LIMIT = 1_000_000  # bytes of hooks.log kept
STALE_SECONDS = 600  # a file claimed this long ago by a server that died is taken again


def hooks_dir(data_dir: Path) -> Path:
    return data_dir / "hooks"


def spool_dir(data_dir: Path) -> Path:
    return hooks_dir(data_dir) / "spool"


def log_file(data_dir: Path) -> Path:
    return hooks_dir(data_dir) / "hooks.log"


def log(data_dir: Path, line: str) -> None:
    """One line in <data dir>/hooks/hooks.log (the hooks' and the courier's problems; doctor points at it)."""
    try:
        path = log_file(data_dir)
        private_dir(path.parent)
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_suffix(".log.1"))
        with open(
            os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a", encoding="utf-8"
        ) as handle:
            handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line.rstrip()}\n")
    except OSError:
        pass


def private_dir(path: Path) -> Path:
    """The directory, made if missing, readable by this user only (and so is the hooks directory above
    it: the spool, the log, the socket live there)."""
    make_dirs(path)  # 0700, and so are the missing folders above it (the data dir)
    for directory in (path.parent, path) if path.parent.name == "hooks" else (path,):
        if directory.stat().st_mode & 0o077:
            directory.chmod(0o700)
    return path


def entry(event: HookEvent, project: Project) -> dict[str, Any]:
    """What the spool keeps of an event: never the raw payload (it may hold a whole file), and its text
    redacted before it reaches the disk (the patterns only: detect-secrets runs when it is stored).
    `mcp-memory eval` builds its Codex entries with it too, so they get the keys the hooks gave them."""
    from mcp_memory.redaction import redact_fast  # compiling its patterns: only when there is text

    tool = None
    if event.tool is not None:
        tool = event.tool._asdict()
        tool["command"] = redact_fast(tool["command"]).text if tool["command"] else None
        tool["excerpt"] = redact_fast(tool["excerpt"]).text
    return {
        "client": event.client,
        "event": event.event,
        "kind": event.kind,
        "session_id": event.session_id,
        "cwd": event.cwd,
        "transcript_path": event.transcript_path,
        "prompt": redact_fast(event.prompt).text if event.prompt else None,
        "reply": redact_fast(event.reply).text if event.reply else None,
        "tool": tool,
        "time": event.time,
        "project": project.as_dict(),
        "spooled_at": time.time(),
    }


def write(directory: Path, entry: dict[str, Any]) -> Path:
    """The entry, as one file in the spool; named by time so the server stores them in order."""
    private_dir(directory)
    name = f"{time.time_ns():020d}-{os.urandom(4).hex()}"
    entry = {"id": name, **entry}
    temporary = directory / f".{name}.tmp"
    with temporary.open("w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        json.dump(entry, handle, ensure_ascii=False)
    final = directory / f"{name}{SUFFIX}"
    os.replace(temporary, final)
    return final


def pending(directory: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The spooled entries, oldest first (a damaged file is set aside as .bad, never retried)."""
    try:
        names = sorted(p for p in os.listdir(directory) if p.endswith(SUFFIX))
    except OSError:
        return
    for name in names:
        path = directory / name
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue  # stored by another server meanwhile
        except (OSError, ValueError):
            _set_aside(path)
            continue
        if isinstance(entry, dict):
            yield path, entry
        else:
            _set_aside(path)


def done(path: Path) -> None:
    path.unlink(missing_ok=True)


def count(directory: Path) -> int:
    try:
        return sum(1 for p in os.listdir(directory) if p.endswith(SUFFIX))
    except OSError:
        return 0


def _set_aside(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.replace(path, path.with_suffix(".bad"))
