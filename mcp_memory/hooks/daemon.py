"""The resident server the hooks talk to: found by its Unix socket, started on demand, asked over HTTP.

It is `mcp-memory serve --socket PATH` (the same code as any `serve`, with the hooks' routes beside
/mcp), one per data directory: it serves every client of the user and exits when idle
(hooks.idle_exit_seconds). The socket lives in the data directory, which is the user's alone; a data
directory whose path is too long for a socket address gets a socket in a private directory under the
system's temporary directory instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_memory.hooks.spool import hooks_dir, private_dir

SOCKET_NAME = "server.sock"
# A server started this recently is still loading (or failed to start: its log says why); no other
# start is tried until then, so a broken store does not cost a start per event.
START_BACKOFF_SECONDS = 5.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
LOG_ROTATE_BYTES = 5_000_000  # a resident server's log kept, at its start


def socket_path(data_dir: Path) -> Path:
    path = hooks_dir(data_dir) / SOCKET_NAME
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    import tempfile  # rarely needed: not on every hook's start

    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"mcp-memory-{os.getuid()}" / f"{digest}.sock"


class Unreachable(Exception):
    """The resident server is not running, or did not answer in time."""


def ask(data_dir: Path, route: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """POST `body` as JSON to the resident server's `route` (e.g. /hooks/recall); its JSON answer. Plain
    HTTP/1.1 over the socket, one request per connection: http.client's import alone costs a hook 30 ms."""
    data = json.dumps(body).encode()
    head = (
        f"POST {route} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode()
    deadline = time.monotonic() + timeout
    chunks = []
    try:
        with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as sock:
            sock.settimeout(timeout)
            sock.connect(os.fspath(socket_path(data_dir)))
            sock.sendall(head + data)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                if _complete(b"".join(chunks)):
                    break  # not until the server closes: it may first run the work it answered for
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
    except OSError as e:
        raise Unreachable(str(e) or type(e).__name__) from e
    status, payload = _response(b"".join(chunks))
    if status != 200:
        raise Unreachable(f"HTTP {status}: {payload[:200]!r}")
    try:
        answer = json.loads(payload)
    except ValueError as e:
        raise Unreachable("the answer is not JSON") from e
    return answer if isinstance(answer, dict) else {}


def notify(data_dir: Path, route: str, timeout: float) -> None:
    """POST an empty body to `route` without waiting for the answer: the server acts on the request
    (and looks at the spool every few seconds anyway, should this one be lost)."""
    head = f"POST {route} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    try:
        with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as sock:
            sock.settimeout(timeout)
            sock.connect(os.fspath(socket_path(data_dir)))
            sock.sendall(head.encode())
    except OSError as e:
        raise Unreachable(str(e) or type(e).__name__) from e


def _complete(raw: bytes) -> bool:
    """The whole response is in: its head, and as many body bytes as Content-Length says."""
    head, found, body = raw.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return len(body) >= int(value.strip())
            except ValueError:
                return False
    return False


def _response(raw: bytes) -> tuple[int, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return 0, b""
    if any(line.lower() == b"transfer-encoding: chunked" for line in lines[1:]):
        body = _unchunked(body)
    return status, body


def _unchunked(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def running(data_dir: Path) -> bool:
    path = socket_path(data_dir)
    if not path.exists():
        return False
    with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as sock:
        sock.settimeout(0.2)
        try:
            sock.connect(os.fspath(path))
        except OSError:
            return False
    return True


def start(data_dir: Path, log_file: Path) -> bool:
    """Start the resident server in the background unless it runs or another hook is starting it;
    whether this call started it. The hook does not wait for it."""
    private_dir(hooks_dir(data_dir))
    lock_path = hooks_dir(data_dir) / "start.lock"
    with open(os.open(lock_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another hook is starting it right now
        if running(data_dir) or _started_lately(data_dir):
            return False
        path = socket_path(data_dir)
        starting_file(data_dir).touch(mode=0o600)  # removed by the server once it listens
        _rotate(log_file)
        private_dir(path.parent)
        command = [sys.executable, "-m", "mcp_memory", "serve", "--socket", os.fspath(path)]
        pid = spawn(command, {**os.environ, "MCP_MEMORY_DATA_DIR": os.fspath(data_dir)}, log_file)
        if pid is not None:
            with contextlib.suppress(OSError):  # whoever waits for it can tell a start that failed (relay/)
                starting_file(data_dir).write_text(str(pid))
        return True


def spawn(command: list[str], env: dict[str, str], log_file: Path) -> int | None:
    """Start `command` in the background, nobody's descendant (see _detached), its stderr appended to
    `log_file`; its process id (None if it could not be told). The caller does not wait for it."""
    import subprocess  # only the hook that starts a process pays for it

    with open(os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        return _detached(
            lambda: (
                subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,  # outlives the hook, and the client's signals to it
                    env=env,
                    close_fds=True,
                ).pid
            )
        )


def _detached(launch: Callable[[], int]) -> int | None:
    """Run `launch` in a child that exits at once, so what it starts is nobody's descendant: a client that
    kills its whole process tree when it exits (GitHub Copilot CLI kills the MCP server's children) does
    not take the resident server with it. The pid `launch` returned (None if the child died first)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the go-between: start the server, say its pid, leave
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, str(launch()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    os.waitpid(child, 0)
    with os.fdopen(read_end, "rb") as answer:
        said = answer.read()
    return int(said) if said.isdigit() else None


def _rotate(log_file: Path) -> None:
    """Start a new log once it passes LOG_ROTATE_BYTES (the relayed sessions' requests are logged there)."""
    with contextlib.suppress(OSError):
        if log_file.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(log_file, log_file.with_suffix(".log.1"))


def starting_pid(data_dir: Path) -> int | None:
    """The process id of the resident server being started (None once it listens, or when unknown)."""
    try:
        return int(starting_file(data_dir).read_text().strip())
    except (OSError, ValueError):
        return None


def starting_file(data_dir: Path) -> Path:
    return hooks_dir(data_dir) / "starting"


def _started_lately(data_dir: Path) -> bool:
    try:
        return time.time() - starting_file(data_dir).stat().st_mtime < START_BACKOFF_SECONDS
    except OSError:
        return False
