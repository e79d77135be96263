"""The user's resident server as a relay reaches it: its socket, started when it is not running, and a
child server in its place when it cannot serve (mcp_memory/relay/__init__.py says when)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mcp_memory.hooks import daemon
from mcp_memory.hooks.spool import hooks_dir
from mcp_memory.relay.upstream import ChildServer, Refused, ResidentStream, Upstream, log

START_SECONDS = 30.0  # how long a relay waits for the resident server it started before serving itself
RESTART_SECONDS = 15.0  # a start that has not produced a listening server by then is tried again
POLL_SECONDS = 0.05


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
            os.kill(pid, 0)  # nobody's child (hooks/daemon.py starts it detached): init reaps it
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
