"""Running the server over stdio, SSE or streamable HTTP, with /health, /ready and /metrics on the HTTP
ones (and /metrics alone on a loopback port, when observability.metrics_port is set).

On the HTTP transports, when any way in is configured (static tokens, an identity provider), the MCP
endpoints sit behind the resource guard (`oauth/resource.py`) and the protected-resource metadata is
served beside them.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

import anyio
import uvicorn
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from mcp_memory import __version__
from mcp_memory.errors import ConfigError
from mcp_memory.mcp.auth import check_exposure
from mcp_memory.mcp.oauth.resource import Challenges, ResourceGuard, metadata_routes
from mcp_memory.mcp.oauth.tokens import TokenVerifier, build_verifier
from mcp_memory.mcp.observability import add_readiness_route
from mcp_memory.mcp.server import MemoryServer
from mcp_memory.mcp.telemetry import PATH, exposition, metrics_route
from mcp_memory.observability.tracing import open_tracing

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 256 * 1024  # request line and headers, at most
METRICS_HOST = "127.0.0.1"  # observability.metrics_port serves without a token: loopback only


async def serve(
    server: MemoryServer, transport: str, host: str, port: int, *, mounts: Sequence[BaseRoute] = ()
) -> None:
    """Serve MCP over `transport`; on SSE/HTTP also `mounts` (the explorer at /ui) beside it."""
    tracing = open_tracing(server.host.settings.observability.otlp_endpoint)
    server.call_metrics.tracing = tracing
    try:
        if transport == "stdio":
            await server.run_stdio_async()
        else:
            await _serve_network(server, transport, host, port, mounts)
    finally:
        if tracing is not None:
            tracing.close()  # sends the spans still batched


async def _serve_network(
    server: MemoryServer, transport: str, host: str, port: int, mounts: Sequence[BaseRoute]
) -> None:
    settings = server.host.settings
    check_exposure(settings, transport, host)  # no memories on a public address without auth
    add_readiness_route(server, server.host)  # GET /ready: each backend answers

    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]  # the SDK's is untyped
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    verifier = build_verifier(settings)  # before listening: a bad security setting fails at start
    if transport == "sse":
        app = server.sse_app(host=host, max_request_body_size=settings.security.max_request_bytes)
        where = f"http://{host}:{port}/sse"
        endpoints: tuple[str, ...] = ("/sse", "/messages")
    else:
        app = server.streamable_http_app(host=host, max_request_body_size=settings.security.max_request_bytes)
        where, endpoints = f"http://{host}:{port}/mcp", ("/mcp",)
    app.router.routes.extend([*metadata_routes(settings, endpoints), *mounts])
    observability = settings.observability
    if observability.metrics:
        challenges = Challenges(settings) if verifier is not None else None
        app.router.routes.append(metrics_route(server.host, verifier, challenges))
    async with anyio.create_task_group() as side:
        scraper = None
        if observability.metrics_port is not None:
            scraper = await _serve_metrics_port(side, server, observability.metrics_port)
        try:
            await serve_http(await _guarded(app, server, verifier, endpoints), host, port, where)
        finally:
            if scraper is not None:
                scraper.should_exit = True  # the main server stopped (a signal): so does this one


async def _guarded(
    app: ASGIApp, server: MemoryServer, verifier: TokenVerifier | None, endpoints: tuple[str, ...]
) -> ASGIApp:
    """The app behind the resource guard when any way in is configured (tokens, an identity provider)."""
    settings = server.host.settings
    if verifier is None:
        return app
    if settings.security.authorization_server:
        log.info(
            "accepting access tokens of %s issued for %s",
            settings.security.authorization_server,
            settings.security.resource_url,
        )
        await verifier.prefetch()  # a wrong issuer shows in the log now, not at the first sign-in
    return ResourceGuard(
        app,
        settings=settings,
        verifier=verifier,
        tools=server.tool_scopes,
        protected=endpoints,
        metrics=server.host.metrics,
    )


class _QuietServer(uvicorn.Server):
    """A uvicorn server beside the main one: the main one takes the signals, and stops this one."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _serve_metrics_port(tasks: TaskGroup, server: MemoryServer, port: int) -> uvicorn.Server:
    """/metrics alone, without a token, on 127.0.0.1:port (observability.metrics_port)."""
    host = server.host

    async def scrape(_: Request) -> Response:
        return await exposition(host)

    listener = listen_socket(METRICS_HOST, port)
    app = Starlette(routes=[Route(PATH, scrape, methods=["GET"])])
    scraper = _QuietServer(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def run() -> None:
        try:
            await scraper.serve(sockets=[listener])
        finally:
            listener.close()

    tasks.start_soon(run)
    log.info("metrics (no token) on http://%s:%d%s", METRICS_HOST, port, PATH)
    return scraper


async def serve_http(
    app: ASGIApp, host: str, port: int, where: str, on_listening: Callable[[], object] | None = None
) -> None:
    """Run an ASGI app with uvicorn on host:port until SIGTERM or Ctrl+C. `on_listening` runs once
    connections are accepted into the backlog (they are answered as soon as uvicorn starts)."""
    # Bound here rather than by uvicorn, which logs a busy port and exits 3 after we said "listening".
    listener = listen_socket(host, port)
    log.info("mcp-memory listening on %s", where)
    if on_listening is not None:
        on_listening()
    # h11 refuses a request head past 16 KiB by resetting the connection, or not, depending on how the
    # bytes arrive; up to this size the guard reads it and answers (an oversized token: 401).
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )
    try:
        with _sigterm_unwinds():
            await uvicorn.Server(config).serve(sockets=[listener])
    finally:
        listener.close()


def listen_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on connections of sockets that say
    # they are TCP. Without it a response's last small write (the end of the event stream) waited for
    # the client's delayed ACK, about 40 ms per call (bench/transport_latency.py).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(socket.SOMAXCONN)
    except OSError as e:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {e.strerror}; stop what uses that port or pass another --port"
        ) from e
    return sock


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """Make SIGTERM unwind the stack like Ctrl+C. uvicorn shuts down gracefully on SIGTERM and then
    re-raises the signal; under the default handler that kills the process before the CLI closes the
    memory service (SQLite file, backend clients), and it exits with 143 instead of 0."""
    if threading.current_thread() is not threading.main_thread():  # signals only work on the main thread
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
