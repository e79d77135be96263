"""A memory server's outbox on this machine, and what the courier keeps beside it; standard library only,
since the hooks (a process per event) write it.

- `outbox/`: one file per captured event, in the spool's format and naming (hooks/spool.py: written whole,
  named by time, so listing the folder gives them oldest first); an event the server rejected is kept as
  `<name>.bad`, never retried;
- `courier.lock`: held (flock) by the running courier for its whole life: one courier per server;
- `acked/<session>.json`: the item keys the server acknowledged for a session, so a transcript read again
  at the next Stop sends only what is new (bounded: a key forgotten is merely sent again, and the
  server's derived ids store it once);
- `status.json`: what the courier last did, for `mcp-memory doctor` (places.status_file).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mcp_memory.hooks import daemon, spool
from mcp_memory.remote import places

LOCK_NAME = "courier.lock"
STARTED_NAME = "courier.started"
WAKE_NAME = "courier.wake"  # touched by a hook that finds the courier running: a retry soon, not after a whole backoff
START_BACKOFF_SECONDS = 5.0  # a courier started this recently is still starting (or failed: hooks.log)
# A token expiring within this is refreshed by the courier (and a session's start starts the courier for it).
REFRESH_AHEAD_SECONDS = 600.0
ACKED_KEYS_PER_SESSION = 20_000  # the newest kept
ACKED_SESSIONS = 300  # session files kept, the most recently written


def write(data_dir: Path, url: str, entry: dict[str, Any]) -> Path:
    """A captured event (hooks/spool.py `entry`, already redacted) into the server's outbox."""
    return spool.write(places.private(places.outbox_dir(data_dir, url)), entry)


def pending(data_dir: Path, url: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The waiting events, oldest first (a damaged file is set aside, never retried)."""
    return spool.pending(places.outbox_dir(data_dir, url))


def set_aside(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.replace(path, path.with_suffix(".bad"))


def waiting(data_dir: Path, url: str) -> tuple[int, float | None]:
    """How many events wait, and when the oldest was written (epoch seconds; its name says)."""
    try:
        names = sorted(n for n in os.listdir(places.outbox_dir(data_dir, url)) if n.endswith(spool.SUFFIX))
    except OSError:
        return 0, None
    if not names:
        return 0, None
    try:
        oldest = int(names[0].split("-", 1)[0]) / 1e9
    except ValueError:
        oldest = None
    return len(names), oldest


def set_aside_count(data_dir: Path, url: str) -> int:
    try:
        return sum(1 for n in os.listdir(places.outbox_dir(data_dir, url)) if n.endswith(".bad"))
    except OSError:
        return 0


# The courier's lock and start ---------------------------------------------------------------------


def lock_file(data_dir: Path, url: str) -> Path:
    return places.state_dir(data_dir, url) / LOCK_NAME


def courier_running(data_dir: Path, url: str) -> bool:
    """Whether a courier holds this server's lock (a probe that never waits)."""
    path = lock_file(data_dir, url)
    if not path.exists():
        return False
    with path.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    return False


def start_courier(data_dir: Path, url: str, *, now: bool = False) -> bool:
    """Start `python -m mcp_memory courier --server URL` in the background unless one runs (or was started
    a moment ago, unless `now`: after a sign-in, the one started then may have found none); whether this
    call started it. Never waits for it."""
    state = places.private(places.state_dir(data_dir, url))
    if courier_running(data_dir, url):
        with contextlib.suppress(OSError):  # it may be waiting out an outage: something new came, try now
            (state / WAKE_NAME).touch(mode=0o600)
        return False
    started = state / STARTED_NAME
    with contextlib.suppress(OSError):
        if not now and time.time() - started.stat().st_mtime < START_BACKOFF_SECONDS:
            return False
    started.touch(mode=0o600)
    log = spool.log_file(data_dir)
    spool.private_dir(log.parent)
    command = [sys.executable, "-m", "mcp_memory", "courier", "--server", places.normalized(url)]
    daemon.spawn(command, {**os.environ, "MCP_MEMORY_DATA_DIR": os.fspath(data_dir)}, log)
    return True


def woken_since(data_dir: Path, url: str, moment: float) -> bool:
    """Whether a hook asked the courier to try again (touched the wake file) after `moment` (epoch s)."""
    try:
        return (places.state_dir(data_dir, url) / WAKE_NAME).stat().st_mtime > moment
    except OSError:
        return False


def signed_in(data_dir: Path, url: str) -> int:
    """After a sign-in (`mcp-memory login`): the courier's "signed out" verdict is over, and what waits in
    the outbox is delivered now rather than at the next hook (the courier started). How many events wait."""
    if status(data_dir, url).get("state") == "signed out":
        record_status(data_dir, url, state="signed in again", next_try_at=None)
    count = waiting(data_dir, url)[0]
    if count:
        start_courier(data_dir, url, now=True)
    return count


def hold_lock(data_dir: Path, url: str) -> int | None:
    """The courier's lock, taken for good (its file descriptor), or None when another courier holds it."""
    path = lock_file(data_dir, url)
    places.private(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def release_lock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# Keys the server acknowledged, per session --------------------------------------------------------


def session_of(entry: dict[str, Any]) -> str:
    """The session an event belongs to, as the server's thread is named: project key and session id."""
    project = entry.get("project")
    key = project.get("key") if isinstance(project, dict) else None
    return f"{key or ''}\x00{entry.get('session_id') or ''}"


def _acked_file(data_dir: Path, url: str, session: str) -> Path:
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", session.rsplit("\x00", 1)[-1])[:60]
    digest = hashlib.sha256(session.encode()).hexdigest()[:10]
    return places.state_dir(data_dir, url) / "acked" / f"{readable}-{digest}.json"


def acked(data_dir: Path, url: str, session: str) -> set[str]:
    found = places.read_json(_acked_file(data_dir, url, session))
    keys = found.get("keys") if found else None
    return {k for k in keys if isinstance(k, str)} if isinstance(keys, list) else set()


def acknowledge(data_dir: Path, url: str, session: str, keys: Iterable[str]) -> None:
    """Record `keys` as stored by the server; the session keeps its newest ACKED_KEYS_PER_SESSION, and
    only the ACKED_SESSIONS sessions written last keep a file."""
    path = _acked_file(data_dir, url, session)
    found = places.read_json(path)
    known = found.get("keys") if found else None
    listed = [k for k in known if isinstance(k, str)] if isinstance(known, list) else []
    have = set(listed)
    listed += [k for k in dict.fromkeys(keys) if k not in have]
    places.write_json(path, {"keys": listed[-ACKED_KEYS_PER_SESSION:]})
    _trim_sessions(path.parent)


def _trim_sessions(folder: Path) -> None:
    try:
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for stale in files[:-ACKED_SESSIONS]:
        stale.unlink(missing_ok=True)


# The courier's status ------------------------------------------------------------------------------


def status(data_dir: Path, url: str) -> dict[str, Any]:
    """status.json as the courier last wrote it ({} before its first run)."""
    return places.read_json(places.status_file(data_dir, url)) or {}


def record_status(data_dir: Path, url: str, **changes: Any) -> dict[str, Any]:
    """status.json updated with `changes` and the outbox as it is now: written whole."""
    count, oldest = waiting(data_dir, url)
    current = {**status(data_dir, url), **changes, "outbox": count, "oldest_waiting_at": oldest}
    current["updated_at"] = time.time()
    with contextlib.suppress(OSError):
        places.write_json(places.status_file(data_dir, url), current)
    return current


def dumps_size(value: Any) -> int:
    """The bytes `value` takes as JSON (what a batch adds to its request)."""
    return len(json.dumps(value, ensure_ascii=False).encode())
