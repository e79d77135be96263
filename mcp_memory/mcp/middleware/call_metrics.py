"""The server's metrics and traces on the MCP surface: every request counted, timed and (with
OpenTelemetry configured) traced, and GET /metrics on the HTTP transports.

Who may scrape: on a server without tokens, anyone who reaches it (as /health). With tokens, a bearer
token with the `metrics` or `admin` scope: none is a 401 with the MCP endpoint's challenge, a token
without either scope a 403 `insufficient_scope` naming `metrics` (RFC 6750 section 3.1).
`observability.metrics_port` also serves /metrics alone, without a token, on 127.0.0.1 of that port,
for a Prometheus beside the server.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.uri_template import UriTemplate

from mcp_memory.mcp.middleware.results import is_tool_error
from mcp_memory.observability.metrics import (
    ERROR,
    LLM_CALLS,
    OK,
    OTHER,
    RATE_LIMITED,
    REFUSED,
    Metrics,
    end_call,
    start_call,
)
from mcp_memory.observability.tracing import Tracing

log = logging.getLogger(__name__)

PATH = "/metrics"
_PROBE_USER = "__readiness_probe__"
# Requests other than tool calls, resource reads and prompts, labelled by method when they are MCP's.
METHODS = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "server/discover",
    }
)
_KINDS = {"tools/call": "tool", "resources/read": "resource", "prompts/get": "prompt"}


class CallMetrics:
    """Server middleware (outermost): each request's kind, name, outcome and duration, and its span."""

    def __init__(self, server: MCPServer[Any], metrics: Metrics) -> None:
        self._server = server
        self._metrics = metrics
        self._names_known = False
        self._resources: dict[str, str] = {}  # uri -> name
        self._templates: list[tuple[UriTemplate, str]] = []
        self.tracing: Tracing | None = None  # set by serve() when traces are configured

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing answered, nothing to time
            return await call_next(ctx)
        if not self._names_known:
            await self._learn_names()
        kind, name, mode = self._what(ctx)
        note, token = start_call()
        started = time.perf_counter()
        try:
            with self._span(kind, name) as span:
                try:
                    result = await call_next(ctx)
                    if note.outcome == OK and is_tool_error(result):
                        note.outcome = ERROR
                    return result
                except BaseException:
                    if note.outcome == OK:
                        note.outcome = ERROR
                    raise
                finally:
                    if span is not None and self.tracing is not None:
                        self.tracing.finish(span, note.outcome)
        finally:
            end_call(token)
            self._metrics.call_done(kind, name, note.outcome, time.perf_counter() - started, mode)
            if note.outcome == REFUSED:
                self._metrics.refused("scope")
            elif note.outcome == RATE_LIMITED:
                self._metrics.refused("requests")
            elif note.limit is not None and note.limit != LLM_CALLS:  # the LLM budget counts its own
                self._metrics.refused(note.limit)
            if note.backend is not None:
                self._metrics.backend_failed(note.backend)

    @contextmanager
    def _span(self, kind: str, name: str) -> Iterator[Any]:
        if self.tracing is None:
            yield None
            return
        with self.tracing.span(f"{kind} {name}", {"mcp.kind": kind, "mcp.name": name}) as span:
            yield span

    def _what(self, ctx: ServerRequestContext[Any, Any]) -> tuple[str, str, str | None]:
        """(kind, name, search mode): only names the server registered; anything else is "other"."""
        params = ctx.params or {}
        kind = _KINDS.get(ctx.method)
        if kind is None:
            return "method", ctx.method if ctx.method in METHODS else OTHER, None
        if kind == "resource":
            return kind, self._resource_name(str(params.get("uri", ""))), None
        name = self._metrics.label_of(kind, str(params.get("name", "")))
        mode = None
        if name == "search_memory":
            arguments = params.get("arguments") or {}
            mode = str(arguments.get("mode", "hybrid")) if isinstance(arguments, dict) else "hybrid"
        return kind, name, mode

    def _resource_name(self, uri: str) -> str:
        if uri in self._resources:
            return self._resources[uri]
        for template, name in self._templates:
            if template.match(uri) is not None:
                return name
        return OTHER

    async def _learn_names(self) -> None:
        # Read once, at the first request: every tool, resource and prompt is registered by then.
        resources = await self._server.list_resources()
        templates = await self._server.list_resource_templates()
        self._resources = {str(r.uri): r.name for r in resources}
        self._templates = [(UriTemplate.parse(t.uri_template), t.name) for t in templates]
        self._metrics.register_names(
            [t.name for t in await self._server.list_tools()],
            [*self._resources.values(), *(name for _, name in self._templates)],
            [p.name for p in await self._server.list_prompts()],
        )
        self._names_known = True
