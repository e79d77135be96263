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
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.mcp.host import ServiceHost
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
            outcome = "tool_error" if _is_tool_error(result) else "ok"
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


def _is_tool_error(result: HandlerResult) -> bool:
    if isinstance(result, CallToolResult):
        return result.is_error is True
    return isinstance(result, dict) and result.get("isError") is True


Probe = Callable[[], Awaitable[object]]


async def readiness(probes: dict[str, Probe]) -> tuple[bool, dict[str, str]]:
    """Run each backend's probe with a timeout; (all ready, {backend: "ok" or the problem})."""
    report: dict[str, str] = {}

    async def run(name: str, probe: Probe) -> None:
        try:
            with anyio.fail_after(READINESS_TIMEOUT_SECONDS):
                await probe()
            report[name] = "ok"
        except TimeoutError:
            report[name] = f"no answer within {READINESS_TIMEOUT_SECONDS:g}s"
        except MemoryServerError as e:
            report[name] = str(e)

    async with anyio.create_task_group() as group:
        for name, probe in probes.items():
            group.start_soon(run, name, probe)
    return all(v == "ok" for v in report.values()), report


def service_probes(host: ServiceHost) -> dict[str, Probe]:
    """A cheap read on each configured store (a user that owns nothing), through the open service."""
    service = host.service
    settings = host.settings
    return {
        f"working memory ({settings.working.resolved_backend})": lambda: service.stores.working.list_threads(
            _PROBE_USER
        ),
        f"long term ({settings.long_term.resolved_backend})": lambda: service.stores.long_term.list_threads(
            _PROBE_USER
        ),
    }


def add_readiness_route(server: MCPServer[Any], host: ServiceHost, path: str = "/ready") -> None:
    """GET /ready: 200 when every backend answers, 503 with the failing ones otherwise."""

    @server.custom_route(path, methods=["GET"])  # type: ignore[untyped-decorator]  # the SDK's is untyped
    async def ready(_: Request) -> JSONResponse:
        try:
            probes = service_probes(host)
        except RuntimeError:  # the service is not open (starting or stopping)
            return JSONResponse({"status": "starting", "backends": {}}, status_code=503)
        ok, report = await readiness(probes)
        return JSONResponse(
            {"status": "ready" if ok else "unavailable", "backends": report}, status_code=200 if ok else 503
        )
