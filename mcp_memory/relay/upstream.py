"""Where a relay sends its client's lines: the resident server's POST /relay over its Unix socket (one
HTTP/1.1 request whose chunked body is the client's stdin and whose chunked answer is the server's
stdout), or, when that cannot be, a `mcp-memory serve --in-process` child (relay/session.py says when).

Both carry JSON-RPC lines unchanged: the resident server reads them with the SDK's own stdio reader
(mcp/relayed_sessions.py), so a relayed session is answered exactly as an in-process one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, Protocol

PATH = "/relay"
SETTINGS_HEADER = "Mcp-Memory-Settings"  # the relay's settings fingerprint (relay/settings.py)
CAPTURED_HEADER = "Mcp-Memory-Captured"  # "true": the client's hooks capture its conversation
CONNECT_TIMEOUT = 2.0
ANSWER_TIMEOUT = 10.0  # for the response head; the body then streams for the whole session


def log(text: str) -> None:
    """One line for the client's stderr (where an in-process server's messages went)."""
    print(f"mcp-memory: {text}", file=sys.stderr, flush=True)


class Upstream(Protocol):
    # None: the session may move to another server when this one goes away; a code: this server's end
    # is the session's end, with that exit code (a child serving in the relay's place).
    def exit_code(self) -> int | None: ...

    def send(self, line: bytes) -> None: ...  # raises OSError once it is gone

    def lines(self) -> Iterator[bytes]: ...  # the server's lines until it ends (or is gone)

    def end_input(self) -> None: ...  # the client closed stdin

    def close(self) -> None: ...


class Refused(Exception):
    """The resident server answered, but will not serve this session (its settings differ, or it is an
    older one without the route)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class ResidentStream:
    """One relayed session on the resident server: POST /relay, both bodies chunked."""

    def __init__(self, sock: socket.socket, reader: BinaryIO) -> None:
        self._sock = sock
        self._reader = reader
        self._send_lock = threading.Lock()

    @classmethod
    def open(cls, socket_path: Path, headers: Mapping[str, str]) -> ResidentStream:
        """Connect and start the session; OSError when nobody listens, Refused when it says no."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(os.fspath(socket_path))
            extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
            sock.sendall(
                f"POST {PATH} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/jsonl\r\n"
                f"Transfer-Encoding: chunked\r\n{extra}\r\n".encode()
            )
            sock.settimeout(ANSWER_TIMEOUT)
            reader = sock.makefile("rb")
            status, length = _head(reader)
            if status != 200:
                body = reader.read(length) if length else b""
                raise Refused(status, body.decode(errors="replace")[:300] or f"HTTP {status}")
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        return cls(sock, reader)

    def exit_code(self) -> int | None:
        return None

    def send(self, line: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(b"%x\r\n%s\r\n" % (len(line), line))

    def lines(self) -> Iterator[bytes]:
        pending = b""
        try:
            while True:
                size_line = self._reader.readline()
                if not size_line:
                    return
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return
                pending += self._reader.read(size)
                self._reader.read(2)  # the chunk's CRLF
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    yield line + b"\n"
        except (OSError, ValueError):
            return  # gone: the caller sees the end

    def end_input(self) -> None:
        with contextlib.suppress(OSError), self._send_lock:
            self._sock.sendall(b"0\r\n\r\n")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()


class ChildServer:
    """`mcp-memory serve --in-process` as a child: the fallback once the client has been answered from
    the relay (its stderr is the client's, as an in-process server's would be)."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "mcp_memory", "serve", "--in-process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin, self._stdout = self._process.stdin, self._process.stdout
        self._send_lock = threading.Lock()

    def exit_code(self) -> int | None:
        try:
            return self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait()

    def send(self, line: bytes) -> None:
        with self._send_lock:
            self._stdin.write(line)
            self._stdin.flush()

    def lines(self) -> Iterator[bytes]:
        try:
            yield from iter(self._stdout.readline, b"")
        except OSError:
            return

    def end_input(self) -> None:
        with contextlib.suppress(OSError), self._send_lock:
            self._stdin.close()

    def close(self) -> None:
        self.end_input()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()


def _head(reader: BinaryIO) -> tuple[int, int]:
    """The response's status and Content-Length (0 when absent)."""
    status_line = reader.readline()
    try:
        status = int(status_line.split()[1])
    except (IndexError, ValueError):
        raise OSError(f"not an HTTP answer: {status_line[:80]!r}") from None
    length = 0
    while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            with contextlib.suppress(ValueError):
                length = int(value.strip())
    return status, length
