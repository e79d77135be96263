"""Operations: a request id on every log line, one structured line per request, and readiness.

What is logged at INFO: the method, the tool or resource name, the principal, the outcome and the
duration. Never arguments, memory text, or tokens (the SDK's verifier never sees a token we log,
and the principal is its configured name). DEBUG adds argument names, still not their values.
"""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.mcp.middleware.results import is_tool_error
from mcp_memory.security.principals import current_principal

log = logging.getLogger("mcp_memory.requests")

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("mcp_memory_request_id", default="-")
READINESS_TIMEOUT_SECONDS = 5.0
_PROBE_USER = "__readiness_probe__"


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every record, as `request_id`, for the formatter."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"


def add_request_ids_to_logs() -> None:
    """Make every handler of the root logger show the request id (call after logging is configured)."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(RequestIdFilter())
        handler.setFormatter(logging.Formatter(LOG_FORMAT))


def _target(ctx: ServerRequestContext[Any, Any]) -> str:
    params = ctx.params or {}
    for key in ("name", "uri"):
        value = params.get(key)
        if isinstance(value, str):
            # A resource URI names a thread or memory id, not contents; cap it all the same.
            return value[:200]
    return ""


class RequestLog:
    """Server middleware: a fresh request id, then one `key=value` line when the request ends."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing to answer, nothing to time
            return await call_next(ctx)
        rid = f"req-{uuid.uuid4().hex[:12]}"
        token = request_id.set(rid)
        started = time.perf_counter()
        outcome = "error"
        try:
            principal = current_principal(self._settings).name
        except MemoryServerError:
            principal = "(none)"
        try:
            if log.isEnabledFor(logging.DEBUG):
                names = sorted(((ctx.params or {}).get("arguments") or {}).keys())
                log.debug("start method=%s target=%s arguments=%s", ctx.method, _target(ctx), names)
            result = await call_next(ctx)
            outcome = "tool_error" if is_tool_error(result) else "ok"
            return result
        finally:
            log.info(
                "method=%s target=%s principal=%s outcome=%s ms=%.1f",
                ctx.method,
                _target(ctx),
                principal,
                outcome,
                (time.perf_counter() - started) * 1000,
            )
            request_id.reset(token)
