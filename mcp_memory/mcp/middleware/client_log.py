"""Log messages to 2025-protocol clients: `logging/setLevel` and `notifications/message`.

Clients on the handshake-era protocol (2024-11-05 to 2025-11-25) may ask for the server's log with
`logging/setLevel`; the server declares the `logging` capability for them, and from then on sends each
of that session's requests the messages at or above the level it set (the level is kept per connection,
so two sessions of one user choose their own; a session that never sets one gets nothing). A level the
protocol does not define is refused with -32602 Invalid params (the SDK validates the request before it
reaches the handler). The 2026-07-28 protocol deprecates client logging: for those clients nothing
changes (`logging/setLevel` stays "method not found", discovery does not list `logging`, nothing is sent).

What is sent is operational only, never memory text (not a turn, summary, fact or query), and nothing
of another session: each message rides the response stream of the request that caused it.
  debug    every tool call: {"event": "tool_call", "tool", "outcome", "ms"}
  info     a summarization ran: {"event": "summarized", "thread_id", counts and token totals}
  warning  a per-user limit refused a call, or turns wait for vectors in a long embedding backlog
  error    a backend (store, embedding or model provider) could not be reached
Warnings and errors carry the call's own error message, the text its tool result already gives this
client: it names the backend or limit and counts, never a secret (mcp_memory/errors.py). Thread ids and space names are the client's own
identifiers, from the request it just made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, get_args

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    DiscoverResult,
    EmptyResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    RequestParams,
    SetLevelRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_memory.errors import BackendUnavailableError, LimitExceededError, MemoryServerError
from mcp_memory.mcp.connections import connection_of
from mcp_memory.mcp.middleware.results import is_tool_error, structured_of
from mcp_memory.observability.metrics import current_call
from mcp_memory.service.vectors import VectorWriter

LOGGER_NAME = "mcp-memory"
LEVELS: Final[tuple[LoggingLevel, ...]] = get_args(LoggingLevel)  # least to most severe (RFC 5424)
_LEVEL_KEY = "mcp_memory.client_log_level"  # in the connection's state


def _state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    return connection_of(ctx.session).state


def _handshake_era(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS


class ClientLog:
    """The `logging/setLevel` handler and the server middleware that sends the messages."""

    def __init__(self, embedding_queue: Callable[[], VectorWriter | None]) -> None:
        self._embedding_queue = embedding_queue  # the open service's, None without one

    async def set_level(
        self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        _state(ctx)[_LEVEL_KEY] = params.level
        return EmptyResult()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "logging/setLevel" and _handshake_era(ctx):
            _check_level((ctx.params or {}).get("level"))
        if ctx.method != "tools/call" or ctx.request_id is None or not _handshake_era(ctx):
            return await call_next(ctx)
        level = _state(ctx).get(_LEVEL_KEY)
        if level not in LEVELS:  # this session never asked for the log
            return await call_next(ctx)
        started = time.perf_counter()
        result = await call_next(ctx)
        # The product error the call failed with, as the layers below noted it for the metrics middleware
        # around this one (observability/metrics.py): one note of each call's outcome.
        note = current_call()
        error = note.error if note is not None else None
        tool = str((ctx.params or {}).get("name"))[:100]  # a name the client sent; capped all the same
        arguments = (ctx.params or {}).get("arguments")
        thread_id = arguments.get("thread_id") if isinstance(arguments, dict) else None
        messages = self._messages(tool, result, error, (time.perf_counter() - started) * 1000, thread_id)
        for message_level, data in messages:
            if LEVELS.index(message_level) >= LEVELS.index(level):
                notification = LoggingMessageNotification(
                    params=LoggingMessageNotificationParams(
                        level=message_level, data=data, logger=LOGGER_NAME
                    )
                )
                # On the request's own stream (the spec's SHOULD), before its response.
                await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
        return result

    def _messages(
        self,
        tool: str,
        result: HandlerResult,
        error: MemoryServerError | None,
        ms: float,
        thread_id: Any = None,
    ) -> list[tuple[LoggingLevel, dict[str, Any]]]:
        failed = is_tool_error(result)
        found: list[tuple[LoggingLevel, dict[str, Any]]] = [
            (
                "debug",
                {
                    "event": "tool_call",
                    "tool": tool,
                    "outcome": "tool_error" if failed else "ok",
                    "ms": round(ms, 1),
                },
            )
        ]
        if isinstance(error, BackendUnavailableError):
            found.append(("error", {"event": "backend_unavailable", "tool": tool, "message": str(error)}))
        elif isinstance(error, LimitExceededError):
            found.append(("warning", {"event": "limit_refused", "tool": tool, "message": str(error)}))
        if failed:
            return found
        structured = structured_of(result)
        if tool == "summarize_thread" and structured.get("summarized_count"):
            found.append(("info", {"event": "summarized", **_pick(structured, _SUMMARY_COUNTS)}))
        elif tool == "add_turn" and structured.get("summarized") is True:
            counts = structured.get("thread") or {}  # add_turn's brief answer (views.py TurnAdded)
            found.append(
                (
                    "info",
                    {
                        "event": "summarized",
                        "thread_id": thread_id if isinstance(thread_id, str) else None,
                        "trigger": "threshold",
                        "message_count": counts.get("messages"),
                        "token_count": counts.get("tokens"),
                    },
                )
            )
        if tool == "add_turn":
            backlog = self._embedding_backlog()
            if backlog is not None:
                found.append(("warning", backlog))
        return found

    def _embedding_backlog(self) -> dict[str, Any] | None:
        """A warning when at least half the embedding queue is full: searches by meaning wait for it."""
        vectors = self._embedding_queue()
        if vectors is None or vectors.waiting < vectors.backlog // 2:
            return None
        return {"event": "embedding_backlog", "waiting": vectors.waiting, "backlog": vectors.backlog}


def _check_level(level: object) -> None:
    # The SDK refuses an unknown level with a bare "Invalid request parameters"; this names it.
    if level not in LEVELS:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"unknown log level {str(level)[:40]!r}: use one of {', '.join(LEVELS)}",
        )


_SUMMARY_COUNTS = ("thread_id", "summarized_count", "kept_count", "tokens_before", "tokens_after")


def _pick(values: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: values[key] for key in keys if key in values}


def install_client_log(
    lowlevel: Server[Any], embedding_queue: Callable[[], VectorWriter | None]
) -> ClientLog:
    """Serve `logging/setLevel` to 2025 clients and keep `logging` out of 2026 discovery, on the SDK's
    lowlevel server (MCPServer has no API for a method the 2026 revision removed); returns the
    middleware for the caller to place in the server's chain."""
    client_log = ClientLog(embedding_queue)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, client_log.set_level)
    discover = lowlevel.get_request_handler("server/discover")
    assert discover is not None, "the SDK serves server/discover"
    default_discover = discover.handler

    async def discover_without_logging(ctx: ServerRequestContext[Any, Any], params: RequestParams) -> Any:
        # Registering logging/setLevel makes the SDK list `logging` for every version; 2026 clients keep
        # the behaviour they had (client logging is deprecated there, and this server sends them none).
        found = await default_discover(ctx, params)
        if not isinstance(found, DiscoverResult):
            return found
        capabilities = found.capabilities.model_copy(update={"logging": None})
        return found.model_copy(update={"capabilities": capabilities})

    lowlevel.add_request_handler("server/discover", RequestParams, discover_without_logging)
    return client_log
