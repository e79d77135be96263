"""The connection a request arrived on, for state that must outlive one request of a 2025 session.

The SDK (2.3) hands lowlevel handlers and middleware a `ServerSession` built afresh for every request;
the per-client `Connection` it wraps (with its `state`, "per-connection scratch state; persists across
requests on this connection") has no public accessor from there. Its `Context.connection` is not built
by the runner. This is the one place that reaches it; the tests that keep a level or a subscription
across requests fail if the SDK moves it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection


def connection_of(session: Any) -> Connection:
    """The Connection behind a request's session proxy (ctx.session)."""
    connection = getattr(session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError("the MCP SDK's ServerSession no longer carries its Connection as _connection")
    return connection
