"""The server's HTTP routes beside MCP: GET /metrics (Prometheus) and GET /ready (readiness).

Who may scrape: on a server without tokens, anyone who reaches it (as /health). With tokens, a bearer
token with the `metrics` or `admin` scope: none is a 401 with the MCP endpoint's challenge, a token
without either scope a 403 `insufficient_scope` naming `metrics` (RFC 6750 section 3.1).
`observability.metrics_port` also serves /metrics alone, without a token, on 127.0.0.1 of that port,
for a Prometheus beside the server. /ready answers 200 when every backend answers, 503 otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_memory.errors import MemoryServerError, PermissionDeniedError
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.observability.metrics import Figures, Metrics
from mcp_memory.security.oauth.bearer import Challenges, bearer_token
from mcp_memory.security.oauth.issuer import InvalidToken, IssuerUnavailable
from mcp_memory.security.oauth.tokens import TokenVerifier
from mcp_memory.security.principals import ADMIN, METRICS
from mcp_memory.service.figures import figures_of

log = logging.getLogger(__name__)

PATH = "/metrics"
READINESS_TIMEOUT_SECONDS = 5.0
_PROBE_USER = "__readiness_probe__"


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
        f"working memory ({settings.working.resolved_backend})": lambda: service.probe_working(_PROBE_USER),
        f"long term ({settings.long_term.resolved_backend})": lambda: service.probe_long_term(_PROBE_USER),
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
        f"working/{working}": lambda: service.probe_working(_PROBE_USER),
        f"long_term/{long_term}": lambda: service.probe_long_term(_PROBE_USER),
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
