"""The instructions of a relayed session: a client's `mcp-memory serve` says whether its hooks capture
the conversation (MCP_MEMORY_HOOKS__CAPTURE in the server entry `mcp-memory install` writes), and the
resident server serving it may have been started without that setting (by a hook). The relay sends it
with the session (mcp/relayed_sessions.py sets `captured_session`), and `initialize` and
`server/discover` answer with the instructions for it, as that client's own process would have."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

# None outside a relayed session: the server's own setting stands.
captured_session: ContextVar[bool | None] = ContextVar("captured_session", default=None)

_ANSWERS_WITH_INSTRUCTIONS = frozenset({"initialize", "server/discover"})


class SessionInstructions:
    """Server middleware: the relayed session's instructions in its `initialize`/`server/discover` answer."""

    def __init__(self, instructions_for: Callable[[bool], str]) -> None:
        self._instructions_for = instructions_for

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        captured = captured_session.get()
        if captured is None or ctx.method not in _ANSWERS_WITH_INSTRUCTIONS or not isinstance(result, dict):
            return result
        if "instructions" not in result:
            return result
        return {**result, "instructions": self._instructions_for(captured)}
