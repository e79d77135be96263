"""Running the server over stdio, SSE or streamable HTTP, with /health, /ready and /metrics on the HTTP
ones (and /metrics alone on a loopback port, when observability.metrics_port is set).

On the HTTP transports, when any way in is configured (static tokens, an identity provider), the MCP
endpoints sit behind the resource guard (`oauth_guard.py`) and the protected-resource metadata is
served beside them. A network server also answers the hooks of its users' machines (`team_hooks.py`),
behind the same guard. On streamable HTTP, requests then take their turns (`admission.py`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory import __version__
from mcp_memory.errors import ConfigError
from mcp_memory.hooks.daemon import starting_file
from mcp_memory.mcp.hook_routes import Activity, HookEndpoints
from mcp_memory.mcp.middleware.admission import Admission
from mcp_memory.mcp.middleware.answered import AnsweredBodies
from mcp_memory.mcp.middleware.oauth import ResourceGuard, metadata_routes
from mcp_memory.mcp.relayed_sessions import RelayedSessions
from mcp_memory.mcp.routes import PATH, add_readiness_route, exposition, metrics_route
from mcp_memory.mcp.server import MemoryServer
from mcp_memory.mcp.shared_sessions import SharedSessions
from mcp_memory.mcp.team_hooks import HOOK_SCOPES, TeamHooks
from mcp_memory.observability.tracing import open_tracing
from mcp_memory.private_files import make_dirs
from mcp_memory.security.exposure import check_exposure
from mcp_memory.security.oauth.bearer import Challenges
from mcp_memory.security.oauth.tokens import TokenVerifier, build_verifier

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 256 * 1024  # request line and headers, at most
METRICS_HOST = "127.0.0.1"  # observability.metrics_port serves without a token: loopback only
# On SIGTERM the resident server stops waiting for its open relayed sessions (mcp/relayed_sessions.py) after
# this long: they last as long as their clients do.
RESIDENT_SHUTDOWN_SECONDS = 3


@dataclass(frozen=True)
class Resident:
    """The hooks' resident server: streamable HTTP on a Unix socket, the hooks' routes and the relayed
    stdio sessions beside /mcp, and an exit once idle with no session open (mcp_memory/hooks/daemon.py
    and mcp_memory/relay/ start it)."""

    socket: Path
    endpoints: HookEndpoints
    idle_seconds: int
    relayed: RelayedSessions

    def started(self) -> None:
        """Listening: the hooks may start another server once this one is gone (hooks/daemon.py)."""
        starting_file(self.endpoints.host.settings.data_dir).unlink(missing_ok=True)


async def serve(
    server: MemoryServer,
    transport: str,
    host: str,
    port: int,
    *,
    mounts: Sequence[BaseRoute] = (),
    resident: Resident | None = None,
) -> None:
    """Serve MCP over `transport`; on SSE/HTTP also `mounts` (the explorer at /ui) beside it; with
    `resident`, on its Unix socket instead of host:port."""
    tracing = open_tracing(server.host.settings.observability.otlp_endpoint)
    server.call_metrics.tracing = tracing
    try:
        if transport == "stdio":
            await server.run_stdio_async()
        else:
            await _serve_network(server, transport, host, port, mounts, resident)
    finally:
        if tracing is not None:
            tracing.close()  # sends the spans still batched


async def _serve_network(
    server: MemoryServer,
    transport: str,
    host: str,
    port: int,
    mounts: Sequence[BaseRoute],
    resident: Resident | None = None,
) -> None:
    settings = server.host.settings
    check_exposure(settings, transport, host)  # no memories on a public address without auth
    add_readiness_route(server, server.host)  # GET /ready: each backend answers

    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]  # the SDK's is untyped
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    verifier = build_verifier(settings)  # before listening: a bad security setting fails at start
    if transport == "sse":
        app = server.sse_app(host=host, max_request_body_size=settings.request_body_limit)
        where = f"http://{host}:{port}/sse"
        endpoints: tuple[str, ...] = ("/sse", "/messages")
    else:
        app = server.streamable_http_app(host=host, max_request_body_size=settings.request_body_limit)
        where, endpoints = f"http://{host}:{port}/mcp", ("/mcp",)
    hooks: dict[str, str] = {}
    if resident is None:  # a memory server: the hooks of its users' machines (on the socket: mounts has them)
        hooks = HOOK_SCOPES
        mounts = [*mounts, *TeamHooks.of(server.host).routes()]
    app.router.routes.extend([*metadata_routes(settings, endpoints), *mounts])
    observability = settings.observability
    if observability.metrics:
        challenges = Challenges(settings) if verifier is not None else None
        app.router.routes.append(metrics_route(server.host, verifier, challenges))
    taking_turns: ASGIApp = app
    if transport == "http":  # SSE answers each POST before its work is done: nothing to hold there
        # A body that is not one well-formed JSON-RPC message: answered 400 with its JSON-RPC error
        # (on SSE and stdio the session's read stream answers it: mcp/middleware/answered.py).
        answered = AnsweredBodies(app, endpoint="/mcp", max_body=settings.request_body_limit)
        taking_turns = Admission(
            SharedSessions(answered, server),  # with Redis, any replica serves any session
            settings=settings.admission,
            tools=server.tool_scopes,
            endpoint="/mcp",
            max_body=settings.request_body_limit,
            metrics=server.host.metrics,
            routes=hooks,
        )
    served = await _guarded(taking_turns, server, verifier, endpoints, hooks)
    if resident is not None:
        await serve_resident(served, resident)
        return
    if observability.metrics_port is None or not observability.metrics:
        await serve_http(served, host, port, where)
        return
    # One uvicorn server on both sockets; a request is answered by the app of the address it came in on.
    side = listen_socket(METRICS_HOST, observability.metrics_port)
    try:
        log.info("metrics (no token) on http://%s:%d%s", METRICS_HOST, observability.metrics_port, PATH)
        by_address = _ByAddress(served, _metrics_only(server), (METRICS_HOST, observability.metrics_port))
        await serve_http(by_address, host, port, where, also=[side])
    finally:
        side.close()


async def _guarded(
    app: ASGIApp,
    server: MemoryServer,
    verifier: TokenVerifier | None,
    endpoints: tuple[str, ...],
    routes: dict[str, str],
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
        routes=routes,
        metrics=server.host.metrics,
    )


def _metrics_only(server: MemoryServer) -> ASGIApp:
    """/metrics alone, without a token (observability.metrics_port, on 127.0.0.1 only)."""
    host = server.host

    async def scrape(request: Request) -> Response:
        return await exposition(host, request)

    return Starlette(routes=[Route(PATH, scrape, methods=["GET"])])


class _ByAddress:
    """ASGI: requests that came in on the local `address` (host, port) go to `other`; the rest, and the
    lifespan, to `main`. The host counts too: the main socket may have the same port on another
    address, and must never lose its guard."""

    def __init__(self, main: ASGIApp, other: ASGIApp, address: tuple[str, int]) -> None:
        self.main, self.other, self.address = main, other, address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        local = scope.get("server") if scope["type"] in ("http", "websocket") else None
        app = self.other if local is not None and tuple(local) == self.address else self.main
        await app(scope, receive, send)


async def serve_http(
    app: ASGIApp,
    host: str,
    port: int,
    where: str,
    on_listening: Callable[[], object] | None = None,
    *,
    also: Sequence[socket.socket] = (),
) -> None:
    """Run an ASGI app with uvicorn on host:port (and the listening sockets `also`) until SIGTERM or
    Ctrl+C. `on_listening` runs once connections are accepted into the backlog (they are answered as
    soon as uvicorn starts)."""
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
            await uvicorn.Server(config).serve(sockets=[listener, *also])
    finally:
        listener.close()


async def serve_resident(app: ASGIApp, resident: Resident) -> None:
    """Serve on the resident's Unix socket until idle for its time (or SIGTERM). One per socket: a second
    one started meanwhile finds the lock held and leaves at once."""
    path = resident.socket
    make_dirs(path.parent)  # 0700, and so are the missing folders above it
    path.with_suffix(".lock").touch(mode=0o600)  # empty, and private as every file of the data dir
    with path.with_suffix(".lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log.info("another resident server serves %s", path)
            return
        path.unlink(missing_ok=True)  # a dead server's socket: the lock says nobody serves it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)  # the socket is the user's alone
        try:
            listener.bind(os.fspath(path))
        finally:
            os.umask(mask)
        listener.listen(socket.SOMAXCONN)
        resident.started()
        log.info("mcp-memory listening on %s (exits after %d s idle)", path, resident.idle_seconds)
        config = uvicorn.Config(
            Activity(app, resident.endpoints),
            log_level="warning",
            lifespan="on",
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            timeout_graceful_shutdown=RESIDENT_SHUTDOWN_SECONDS,
        )
        uvicorn_server = uvicorn.Server(config)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_exit_when_idle, uvicorn_server, resident)
                # What was spooled while no server ran, then whatever a hook's note did not announce.
                tasks.start_soon(resident.endpoints.watch_spool)
                with _sigterm_unwinds():
                    await uvicorn_server.serve(sockets=[listener])
                tasks.cancel_scope.cancel()
        finally:
            listener.close()
            path.unlink(missing_ok=True)


async def _exit_when_idle(server: uvicorn.Server, resident: Resident) -> None:
    step = min(5.0, resident.idle_seconds / 4)
    while True:
        await anyio.sleep(step)
        idle = time.monotonic() - resident.endpoints.last_request
        if idle >= resident.idle_seconds and not resident.endpoints.busy() and not resident.relayed.open:
            log.info("idle for %d s: the resident server exits", int(idle))
            server.should_exit = True
            return


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
