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
from mcp_types import CallToolResult
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_memory.errors import PermissionDeniedError
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.mcp.observability import Probe, readiness
from mcp_memory.observability.metrics import (
    ERROR,
    LLM_CALLS,
    OK,
    OTHER,
    RATE_LIMITED,
    REFUSED,
    Figures,
    Metrics,
    end_call,
    start_call,
)
from mcp_memory.observability.tracing import Tracing
from mcp_memory.security.oauth.bearer import Challenges, bearer_token
from mcp_memory.security.oauth.issuer import InvalidToken, IssuerUnavailable
from mcp_memory.security.oauth.tokens import TokenVerifier
from mcp_memory.security.principals import ADMIN, METRICS
from mcp_memory.service.figures import figures_of

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
                    if note.outcome == OK and _is_tool_error(result):
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


def _is_tool_error(result: HandlerResult) -> bool:
    if isinstance(result, CallToolResult):
        return result.is_error is True
    return isinstance(result, dict) and result.get("isError") is True


async def current_figures(host: ServiceHost) -> Figures:
    """The gauges read at a scrape: the open service's figures and each backend's probe, now."""
    try:
        service = host.service
    except RuntimeError:  # not open (starting or stopping): nothing to read, nothing ready
        return Figures()
    figures = figures_of(service)
    working, long_term = (
        service.settings.working.resolved_backend,
        service.settings.long_term.resolved_backend,
    )
    probes: dict[str, Probe] = {
        f"working/{working}": lambda: service.stores.working.list_threads(_PROBE_USER),
        f"long_term/{long_term}": lambda: service.stores.long_term.list_threads(_PROBE_USER),
    }
    _, report = await readiness(probes)
    for key, answer in report.items():
        store, _, backend = key.partition("/")
        figures.ready[(store, backend)] = answer == "ok"
    return figures


def metrics_route(host: ServiceHost, verifier: TokenVerifier | None, challenges: Challenges | None) -> Route:
    """GET /metrics: the Prometheus text format; with a verifier, only for a metrics or admin token."""

    async def scrape(request: Request) -> Response:
        if verifier is not None and challenges is not None:
            refused = await _refusal(request, verifier, challenges, host.metrics)
            if refused is not None:
                return refused
        return await exposition(host, request)

    return Route(PATH, scrape, methods=["GET"])


async def exposition(host: ServiceHost, request: Request) -> Response:
    figures = await current_figures(host)
    body, content_type = host.metrics.exposition(figures, request.headers.get("accept", ""))
    return Response(body, headers={"Content-Type": content_type})


async def _refusal(
    request: Request, verifier: TokenVerifier, challenges: Challenges, metrics: Metrics
) -> Response | None:
    token = bearer_token(request.scope["headers"])
    if token is None:
        return challenges.missing()
    try:
        access = await verifier.verify(token)
    except (InvalidToken, PermissionDeniedError) as e:
        log.info("refused a bearer token on %s: %s", PATH, e)
        return challenges.invalid(str(e))
    except IssuerUnavailable as e:
        log.warning("cannot verify tokens: %s", e)
        return JSONResponse(
            {
                "error": "temporarily_unavailable",
                "error_description": "the identity provider cannot be reached",
            },
            status_code=503,
            headers={"Retry-After": "5"},
        )
    if {METRICS, ADMIN} & set(access.scopes):
        return None
    metrics.refused("scope")
    reason = f"{PATH} needs the metrics (or admin) scope"
    header = challenges.header((METRICS,), "insufficient_scope", reason)
    return JSONResponse(
        {"error": "insufficient_scope", "error_description": reason},
        status_code=403,
        headers={"WWW-Authenticate": header, "Cache-Control": "no-store"},
    )
