"""`mcp-memory serve` over stdio, as a client starts it per session: a relay to the user's resident server.

The resident server (`mcp-memory serve --socket`, the one the hooks start: hooks/daemon.py) holds the
model and the indexes once for every client of the user; each client's `mcp-memory` is a small
standard-library process that carries the client's JSON-RPC lines to it (relay/session.py) over its
Unix socket (relay/upstream.py, mcp/relayed_sessions.py), starting it when it is not running.

It serves in its own process instead (the server's code as before), saying why on stderr, when:
- asked to: `mcp-memory serve --in-process`, or MCP_MEMORY_IN_PROCESS=1;
- the platform has no Unix sockets (Windows);
- the resident server runs with other settings (relay/settings.py) or is too old to relay;
- the data directory cannot hold the resident server's socket.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from mcp_memory.hooks import daemon
from mcp_memory.hooks.spool import hooks_dir
from mcp_memory.relay import settings
from mcp_memory.relay.handshakes import Handshakes, build_id
from mcp_memory.relay.session import Relay
from mcp_memory.relay.upstream import (
    CAPTURED_HEADER,
    SETTINGS_HEADER,
    ChildServer,
    Refused,
    ResidentStream,
    Upstream,
)

START_SECONDS = 30.0  # how long a relay waits for the resident server it started before serving itself
RESTART_SECONDS = 15.0  # a start that has not produced a listening server by then is tried again
POLL_SECONDS = 0.05


def log(text: str) -> None:
    print(f"mcp-memory: {text}", file=sys.stderr, flush=True)


def serve_relayed() -> int | None:
    """Relay this stdio session to the resident server: the exit code once the session ended; None
    (having said why on stderr) when the caller must serve it in this process instead."""
    values = settings.current()
    if settings.in_process_requested(values):
        log(f"serving in this process ({settings.IN_PROCESS_VARIABLE} is set)")
        return None
    if not hasattr(socket, "AF_UNIX"):
        log("serving in this process: this platform has no Unix sockets for the resident server")
        return None
    fingerprint = settings.fingerprint(values)
    captured = settings.captured(values)
    root = settings.data_dir(values)
    resident = Resident(
        root, {SETTINGS_HEADER: fingerprint, CAPTURED_HEADER: "true" if captured else "false"}
    )
    try:
        upstream: Upstream | None = ResidentStream.open(resident.socket, resident.headers)
    except Refused as e:
        log(f"serving in this process: {e}")
        return None
    except OSError:
        upstream = None
        try:
            resident.start()
        except OSError as e:
            log(f"serving in this process: the resident server cannot be started in {root}: {e}")
            return None
    handshakes = Handshakes(hooks_dir(root), f"{fingerprint}/{int(captured)}/{build_id()}")
    return Relay(sys.stdout.buffer, resident.connect, upstream, handshakes, log).run(sys.stdin.buffer)


class Resident:
    """The user's resident server, as a relay reaches it (started when it is not running)."""

    def __init__(self, data_dir: Path, headers: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.socket = daemon.socket_path(data_dir)
        self.headers = headers
        self.refused = False
        self._started_at = 0.0

    def start(self) -> None:
        self._started_at = time.monotonic()
        daemon.start(self.data_dir, hooks_dir(self.data_dir) / "hooks.log")

    def connect(self) -> Upstream:
        """A new session on the resident server, started when needed; a child server in this relay's place
        when it refuses, cannot be started or does not listen within START_SECONDS."""
        deadline = time.monotonic() + START_SECONDS
        while not self.refused:
            try:
                return ResidentStream.open(self.socket, self.headers)
            except Refused as e:
                self.refused = True
                log(f"serving in a child process: {e}")
            except OSError:
                if self._start_failed():  # the child server prints why, as this process would have
                    break
                if time.monotonic() > deadline:
                    log(
                        f"serving in a child process: the resident server did not listen within {START_SECONDS:g} s "
                        f"(its log: {hooks_dir(self.data_dir) / 'hooks.log'})"
                    )
                    break
                if time.monotonic() - self._started_at > RESTART_SECONDS:
                    try:
                        self.start()
                    except OSError as e:
                        log(f"serving in a child process: the resident server cannot be started: {e}")
                        break
                time.sleep(POLL_SECONDS)
        return ChildServer()

    def _start_failed(self) -> bool:
        """The resident server this relay (or a hook) started has exited without listening."""
        pid = daemon.starting_pid(self.data_dir)
        if pid is None:
            return False
        try:
            exited, _ = os.waitpid(pid, os.WNOHANG)  # this relay's own child
            return exited == pid
        except ChildProcessError:  # another process's child
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False
            return False
