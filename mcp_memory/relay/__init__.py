"""`mcp-memory serve` over stdio, as a client starts it per session: a relay to the user's resident server.

The resident server (`mcp-memory serve --socket`, the one the hooks start: hooks/daemon.py) holds the
model and the indexes once for every client of the user; each client's `mcp-memory` is a small
standard-library process that carries the client's JSON-RPC lines to it (relay/session.py) over its
Unix socket (relay/upstream.py, mcp/relayed_sessions.py), starting it when it is not running
(relay/resident.py), answering a session's opening from a kept answer meanwhile (relay/handshakes.py).

It serves in its own process instead (the server's code as before), saying why on stderr, when:
- asked to: `mcp-memory serve --in-process`, or MCP_MEMORY_IN_PROCESS=1;
- the platform has no Unix sockets (Windows);
- the resident server runs with other settings (relay/settings.py) or is too old to relay;
- the data directory cannot hold the resident server's socket.
"""

from __future__ import annotations

import socket
import sys

from mcp_memory.relay import settings
from mcp_memory.relay.upstream import log


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
    # Only where there are Unix sockets: the resident server's modules need POSIX (fcntl).
    from mcp_memory.hooks.spool import hooks_dir
    from mcp_memory.relay.handshakes import Handshakes, build_id
    from mcp_memory.relay.resident import Resident
    from mcp_memory.relay.session import Relay
    from mcp_memory.relay.upstream import CAPTURED_HEADER, SETTINGS_HEADER, Refused, ResidentStream, Upstream

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
