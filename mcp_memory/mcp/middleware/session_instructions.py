"""The instructions of a session whose client says whether its hooks capture the conversation
(MCP_MEMORY_HOOKS__CAPTURE in the server entry `mcp-memory install` writes): `initialize` and
`server/discover` answer with the instructions for it, as that client's own process would have, whatever
the serving server's own setting (a resident server started by a hook, a team's memory server).

Two ways the client says it, both the `Mcp-Memory-Captured: true|false` header of relay/upstream.py:
- a stdio session relayed to the resident server sends it once, with the session's POST /relay; the
  session is served in that request's task, so mcp/relayed_sessions.py sets `captured_session` for it;
- on streamable HTTP (`mcp-memory serve --server URL`, remote/bridge.py) it comes with every request,
  and is read from the very request being answered (the SDK hands it to the chain as `ctx.request`). Not
  from a context variable set by ASGI middleware: a 2025 session's messages are handled in the session's
  own task, which holds the variables of whichever request started it (on a replica that adopted the
  session, mcp/shared_sessions.py, not even its initialize), never those of the request being answered.
  Read per request, a session's initialize and a stateless 2026 request are answered alike.
Without either, the server's own setting stands. Only the instructions change: nothing is allowed or
refused by it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from starlette.requests import Request

from mcp_memory.relay.upstream import CAPTURED_HEADER

# None outside a relayed session: the request's header, else the server's own setting, stands.
captured_session: ContextVar[bool | None] = ContextVar("captured_session", default=None)

_ANSWERS_WITH_INSTRUCTIONS = frozenset({"initialize", "server/discover"})


class SessionInstructions:
    """Server middleware: the session's instructions in its `initialize`/`server/discover` answer."""

    def __init__(self, instructions_for: Callable[[bool], str]) -> None:
        self._instructions_for = instructions_for

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in _ANSWERS_WITH_INSTRUCTIONS or not isinstance(result, dict):
            return result
        captured = captured_session.get()
        if captured is None:
            captured = said_by(ctx.request)
        if captured is None or "instructions" not in result:
            return result
        return {**result, "instructions": self._instructions_for(captured)}


def said_by(request: object) -> bool | None:
    """What an HTTP request's `Mcp-Memory-Captured` header says (None: not an HTTP request, or no header)."""
    if not isinstance(request, Request):
        return None
    value = request.headers.get(CAPTURED_HEADER)
    return None if value is None else value.strip().lower() == "true"
