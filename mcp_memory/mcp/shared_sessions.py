"""Any replica serves any 2025-protocol session, so a plain round-robin load balancer works.

The SDK (2.3) keeps a streamable HTTP session (the `Mcp-Session-Id` of the initialize handshake) in the
memory of the process that created it; another replica answers `404 Session not found`. With Redis
configured (the working-memory settings), this keeps what a session is made of where every replica
finds it (storage/redis/sessions.py): its owner (the credential that opened it), protocol version, client
info and capabilities, and its resource subscriptions, expiring after the SDK's idle timeout and re-armed
by every request.

- `remember` (server middleware): a successful `initialize` records the new session.
- `SharedSessions` (ASGI, in front of /mcp): a request naming a session this process does not hold, that
  Redis knows and whose owner is the request's credential, adopts it: a transport with that id and a
  connection already initialized from the record, then the SDK serves the request as its own. The
  owner check is the SDK's: another credential gets its `404 Session not found`. A DELETE the SDK
  accepted leaves a tombstone, so the replicas still holding the session drop it at their next request
  for it (404 on every replica). A session Redis lost (a flush, a new server) is written back by the
  replica holding it.
- A POST carrying the client's answer to a request this process did not send (sampling, elicitation) is
  passed on to the replica that sent it (mcp/client_answers.py).
- A message the server sends outside a request (background sampling) while the session's stream (GET) is
  open on another replica is passed on to that replica (mcp/client_streams.py).

2026-protocol requests are stateless and pass straight through; so does everything while Redis does not
answer (each process then serves the sessions it holds, as without Redis). The session manager's
private registry (`_server_instances`, `_session_owners`, `_discard_session`) is the one place this
reaches into the SDK; tests/integration/test_shared_sessions.py fails if it moves.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import anyio
from anyio.abc import TaskStatus
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    AuthorizationContext,
    authorization_context,
)
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import ResourceUpdated
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import InitializeRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_memory.errors import BackendUnavailableError, MemoryServerError
from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.client_answers import ClientAnswers, spread_request_ids
from mcp_memory.mcp.client_streams import ClientStreams
from mcp_memory.mcp.connections import connection_of
from mcp_memory.mcp.host import SessionStore
from mcp_memory.models import UserEvent
from mcp_memory.security.principals import Principal, principal_of

log = logging.getLogger(__name__)

NO_IDLE_TIMEOUT_MS = 24 * 3600 * 1000  # sessions the SDK never reaps still leave Redis after a day idle


class SessionState(BaseModel):
    """What a replica needs to serve a session it did not open."""

    # The SDK's AuthorizationContext, as a plain dict: pydantic reads typing.TypedDict on 3.12+ only.
    owner: dict[str, str | None] | None
    protocol_version: str
    client_params: dict[str, Any]


class SharedSessions:
    def __init__(self, app: ASGIApp, server: MemoryServer, endpoint: str = "/mcp") -> None:
        self.app, self._server, self._endpoint = app, server, endpoint
        self._adopting = anyio.Lock()
        self._held: dict[str, tuple[str, Connection]] = {}  # this process's sessions: state, connection
        # What each held session's record said when this process last brought it up to date (its state
        # and subscriptions): a request finding the same is served without parsing or restoring again.
        self._seen: dict[str, tuple[str, frozenset[str], dict[str, str | None] | None]] = {}
        server.middleware.append(self.remember)
        self._listening: dict[str, Principal] = {}  # sessions whose GET stream is open on this process
        server.bus.legacy.persist = self._persist_subscription
        server.bus.legacy.refresh = self._refresh_subscriptions
        self._answers = ClientAnswers(server.host, self._locate)
        self._streams = ClientStreams(server.host, self._connection_held, self._listening.__contains__)

    @property
    def _store(self) -> SessionStore | None:
        return self._server.host.session_store

    @property
    def _manager(self) -> StreamableHTTPSessionManager:
        return self._server.session_manager

    @property
    def _ttl_ms(self) -> int:
        idle = self._manager.session_idle_timeout
        return NO_IDLE_TIMEOUT_MS if idle is None else int(idle * 1000)

    async def remember(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: record a session once its initialize succeeded, before the client has its id."""
        result = await call_next(ctx)
        store = self._store
        if ctx.method != "initialize" or store is None or not isinstance(result, dict):
            return result
        connection = connection_of(ctx.session)
        if connection.session_id is None:  # stateless: nothing to share
            return result
        request = ctx.request if isinstance(ctx.request, Request) else None
        state = SessionState(
            owner=_owner(request.scope if request is not None else {}),
            protocol_version=str(result.get("protocolVersion")),
            client_params=dict(ctx.params or {}),
        ).model_dump_json()
        for gone in [held for held in self._held if held not in self._manager._server_instances]:
            del self._held[gone]  # sessions the SDK reaped once idle
            self._seen.pop(gone, None)
        self._held[connection.session_id] = (state, connection)
        spread_request_ids(connection)
        self._streams.install(connection)
        try:
            await store.save(connection.session_id, state, self._ttl_ms)
        except BackendUnavailableError as e:  # the session works here; other replicas will not find it
            log.warning("session %s kept by this process only: %s", connection.session_id[:16], e)
        return result

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        store = self._store
        session_id = _header(scope, MCP_SESSION_ID_HEADER)
        version = _header(scope, MCP_PROTOCOL_VERSION_HEADER)
        if (
            scope["type"] != "http"
            or scope["path"] != self._endpoint
            or store is None
            or session_id is None
            or (version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS)  # 2026: stateless
        ):
            await self.app(scope, receive, send)
            return
        try:
            state, ended, uris = await store.touch(session_id, self._ttl_ms)
        except BackendUnavailableError as e:
            log.warning("serving session %s from this process only: %s", session_id[:16], e)
            await self.app(scope, receive, send)
            return
        if ended:
            await self._drop(session_id)
        elif state is not None:
            await self._hold(session_id, state, uris, scope)
        elif session_id in self._held and session_id in self._manager._server_instances:
            await self._write_back(store, session_id)
        principal = self._principal(scope)
        if scope["method"] == "GET" and principal is not None:  # a stream keeps its session alive
            self._listening[session_id] = principal
            try:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self._keep_alive, store, session_id)
                    status = await _served(self.app, scope, receive, send)
                    tasks.cancel_scope.cancel()
            finally:
                self._listening.pop(session_id, None)
        elif scope["method"] == "POST":  # perhaps the client's answer to another replica's request
            receive, answer = await self._answers.unclaimed(session_id, receive)
            status = await _served(self.app, scope, receive, send)
            if answer is not None and status == 202:  # the SDK accepted it (the session's owner posted it)
                await self._answers.relay(answer)
        else:
            status = await _served(self.app, scope, receive, send)
        if scope["method"] == "DELETE" and status is not None and status < 400:
            self._held.pop(session_id, None)
            self._seen.pop(session_id, None)
            try:
                await store.end(session_id, self._ttl_ms)
            except BackendUnavailableError as e:
                log.warning("session %s ended here only: %s", session_id[:16], e)

    async def _keep_alive(self, store: SessionStore, session_id: str) -> None:
        """Re-arm the session's expiry while its stream is open: a client that only listens for longer
        than the idle timeout must still find its session on every replica."""
        while True:
            await anyio.sleep(self._ttl_ms / 1000 / 3)
            try:
                await store.touch(session_id, self._ttl_ms)
            except BackendUnavailableError as e:  # the next period tries again
                log.warning("session %s not refreshed: %s", session_id[:16], e)

    async def _hold(self, session_id: str, state: str, uris: frozenset[str], scope: Scope) -> None:
        """Adopt the session unless this process holds it or the credential is not its owner; either way,
        bring its subscriptions up to date on this process's connection."""
        owner = _owner(scope)
        if (
            self._seen.get(session_id) == (state, uris, owner)
            and session_id in self._manager._server_instances
        ):
            return  # held, its owner asking, nothing changed since the last request
        recorded = SessionState.model_validate_json(state)
        if recorded.owner != owner:
            return  # the SDK answers 404, as for a session it never heard of
        async with self._adopting:
            if session_id not in self._manager._server_instances:
                self._held[session_id] = (state, await self._adopt(session_id, recorded))
        held, principal = self._held.get(session_id), self._principal(scope)
        if held is not None and principal is not None:
            self._server.bus.legacy.restore(principal, held[1], uris)
            self._seen[session_id] = (state, uris, owner)

    def _principal(self, scope: Scope) -> Principal | None:
        """Who the request's credential stands for; None for one naming no user (the tools refuse it)."""
        user = scope.get("user")
        token = user.access_token if isinstance(user, AuthenticatedUser) else None
        try:
            return principal_of(token, self._server.config)
        except MemoryServerError:
            return None

    async def _refresh_subscriptions(self, envelope: UserEvent) -> None:
        """Before an event reaches the 2025 sessions: the subscriptions of those listening here, as
        recorded, so one made through another replica since this one last served the session counts."""
        store = self._store
        if store is None or not isinstance(envelope.event, ResourceUpdated):
            return
        for session_id, principal in list(self._listening.items()):
            held = self._held.get(session_id)
            if held is None or not self._server.bus.hears(principal, envelope):
                continue
            try:
                _, ended, uris = await store.touch(session_id, self._ttl_ms)
            except BackendUnavailableError as e:  # the subscriptions this replica knows still hold
                log.warning("subscriptions of session %s not refreshed: %s", session_id[:16], e)
                continue
            if not ended:
                self._server.bus.legacy.restore(principal, held[1], uris)

    async def _adopt(self, session_id: str, recorded: SessionState) -> Connection:
        """A transport with the session's id, served by a connection that is already initialized (as the
        SDK's manager serves one it created, without a new handshake with the client)."""
        manager = self._manager
        transport = StreamableHTTPServerTransport(
            mcp_session_id=session_id,
            is_json_response_enabled=manager.json_response,
            event_store=manager.event_store,
            security_settings=manager.security_settings,
            retry_interval=manager.retry_interval,
            idle_timeout=manager.session_idle_timeout,
        )
        manager._server_instances[session_id] = transport
        if recorded.owner is not None:
            manager._session_owners[session_id] = cast(AuthorizationContext, recorded.owner)

        async def run_server(*, task_status: TaskStatus[Connection]) -> None:
            async with transport.connect() as (read_stream, write_stream):
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read_stream,
                    self._streams.wrap(session_id, write_stream),
                    inline_methods=frozenset({"initialize"}),
                )
                connection = Connection.for_loop(
                    dispatcher, session_id=session_id, protocol_version_hint=recorded.protocol_version
                )
                connection.client_params = InitializeRequestParams.model_validate(recorded.client_params)
                spread_request_ids(connection)
                self._streams.install(connection)
                connection.initialized.set()
                task_status.started(connection)
                try:
                    with transport.idle_scope or anyio.CancelScope():
                        await serve_connection(
                            manager.app,
                            dispatcher,
                            connection=connection,
                            lifespan_state=manager._lifespan_state,
                        )
                except Exception:  # as the SDK's own session task: a crashed session is logged, then dropped
                    log.exception("adopted session %s crashed", session_id[:16])
                finally:
                    self._held.pop(session_id, None)
                    await manager._discard_session(session_id, transport)

        task_group = manager._task_group
        assert task_group is not None, "the session manager is running"
        connection: Connection = await task_group.start(run_server)
        log.info("serving session %s opened on another replica", session_id[:16])
        return connection

    def _locate(self, session_id: str) -> tuple[Connection, StreamableHTTPServerTransport] | None:
        """The session's connection and transport, when this process serves it."""
        held, transport = self._held.get(session_id), self._manager._server_instances.get(session_id)
        return None if held is None or transport is None else (held[1], transport)

    def _connection_held(self, session_id: str) -> Connection | None:
        held = self._locate(session_id)
        return None if held is None else held[0]

    async def _drop(self, session_id: str) -> None:
        """The client deleted the session through another replica."""
        self._held.pop(session_id, None)
        self._seen.pop(session_id, None)
        transport = self._manager._server_instances.get(session_id)
        if transport is not None:
            await self._manager._discard_session(session_id, transport)

    async def _write_back(self, store: SessionStore, session_id: str) -> None:
        state, _ = self._held[session_id]
        try:
            await store.save(session_id, state, self._ttl_ms)
        except BackendUnavailableError as e:
            log.warning("session %s not written back: %s", session_id[:16], e)

    async def _persist_subscription(self, session_id: str, uri: str, subscribed: bool) -> None:
        store = self._store
        if store is None:
            return
        try:
            if subscribed:
                await store.subscribe(session_id, uri, self._ttl_ms)
            else:
                await store.unsubscribe(session_id, uri)
        except BackendUnavailableError as e:  # the subscription holds on this replica
            log.warning("subscription of session %s kept by this process only: %s", session_id[:16], e)


def _owner(scope: Scope | dict[str, Any]) -> dict[str, str | None] | None:
    """The credential a request presents, as the SDK compares it with a session's owner."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    owner = authorization_context(user)
    return {"client_id": owner["client_id"], "issuer": owner["issuer"], "subject": owner["subject"]}


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == wanted), None)


async def _served(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> int | None:
    """Run `app` for the request; the HTTP status it answered with (None if it answered nothing)."""
    status: int | None = None

    async def watch(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    await app(scope, receive, watch)
    return status
