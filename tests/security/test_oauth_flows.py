"""Signing in end to end: the MCP SDK's own OAuth clients against a real authorization server.

The authorization server is the certified Node `oidc-provider` (tests/services/oidc_server.py), with
dynamic client registration, PKCE, resource indicators and JWT access tokens; the resource server is
the real `mcp-memory serve` process. A client starts with no token, meets the 401, reads the
protected-resource metadata, discovers the authorization server, registers, runs authorization code
+ PKCE with a scripted login and consent, and then calls tools. Nothing here mints a token by hand.
Two users signed in this way see only their own memories through tools, resources, completions and
subscriptions (the explorer: tests/browser/test_explorer_signin.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import anyio
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp_types import ResourceTemplateReference

from tests.security.bearer import UNMETERED, bearer_client, challenge, post_tool_call
from tests.security.test_notification_isolation import (
    EVENT_SECONDS,
    MARKER,
    THREAD,
    Heard,
    http_client,
    listen_2026,
    subscribe_2025,
)
from tests.services.mcp_client import call
from tests.services.oidc_server import (
    OidcServer,
    ScriptedUser,
    client_credentials_client,
    client_credentials_token,
)
from tests.services.server_process import READ_TIMEOUT_SECONDS, NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

CALLBACK = "http://127.0.0.1:9/callback"  # never opened: the scripted user hands the code over


class Storage:
    """The SDK's TokenStorage, in memory: one client's registration and tokens."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def start_oauth_server(
    start_server: ServerStarter,
    tmp_path: Path,
    oidc: OidcServer,
    transport: Literal["http", "sse"] = "http",
    **extra: str,
) -> NetworkServer:
    path = "/sse" if transport == "sse" else "/mcp"
    env = {
        "MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER": oidc.issuer,
        "MCP_MEMORY_SECURITY__RESOURCE_URL": "http://127.0.0.1:{port}" + path,
        **UNMETERED,
        **extra,
    }
    return start_server(transport, tmp_path / "data", env)


def user_provider(server: NetworkServer, user: ScriptedUser, storage: Storage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        redirect_uris=[CALLBACK],  # type: ignore[list-item]  # pydantic parses the URL
        client_name="mcp-memory tests",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(server.url, metadata, storage, user.redirect_handler, user.callback_handler)


@asynccontextmanager
async def signed_in(
    server: NetworkServer, provider: OAuthClientProvider, mode: str = "auto"
) -> AsyncIterator[Client]:
    """An MCP client over the server's transport whose HTTP requests go through `provider`.
    `mode="legacy"`: the 2025 initialize handshake, as clients of the 2025 revisions connect."""
    if server.transport == "sse":
        transport = sse_client(server.url, auth=provider)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS, mode=mode) as client:
            yield client
        return
    async with (
        create_mcp_http_client(auth=provider) as http,
        Client(
            streamable_http_client(server.url, http_client=http),
            read_timeout_seconds=READ_TIMEOUT_SECONDS,
            mode=mode,
        ) as client,
    ):
        yield client


@pytest.mark.parametrize(
    ("transport", "mode"), [("http", "auto"), ("http", "legacy"), ("sse", "auto"), ("sse", "legacy")]
)
async def test_a_client_with_no_token_signs_in_unaided_and_uses_its_memory(
    start_server: ServerStarter,
    tmp_path: Path,
    oidc_server: OidcServer,
    transport: Literal["http", "sse"],
    mode: str,
) -> None:
    # "legacy": the 2025 initialize handshake, as clients of the 2025 revisions connect.
    server = start_oauth_server(start_server, tmp_path, oidc_server, transport)
    alice, storage = ScriptedUser(oidc_server, "alice"), Storage()
    async with signed_in(server, user_provider(server, alice, storage), mode) as client:
        added = await call(
            client, "add_turn", thread_id="trip", role="user", content="We fly to Lisbon in May"
        )
        found = await call(client, "search_memory", query="Lisbon", mode="text")
        assert [(r["id"], r["content"]) for r in found["results"]] == [
            (added["id"], "We fly to Lisbon in May")
        ]
    assert alice.logins == 1
    assert storage.client is not None, "registered dynamically"
    assert storage.tokens is not None and set(storage.tokens.scope.split()) >= {"read", "write"}
    assert "refused a bearer token" not in server.stderr(), "no token was refused on the way"


async def test_an_expired_access_token_is_refreshed_without_a_new_login(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer
) -> None:
    server = start_oauth_server(start_server, tmp_path, oidc_server)
    alice, storage = ScriptedUser(oidc_server, "alice"), Storage()
    provider = user_provider(server, alice, storage)
    async with signed_in(server, provider) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="before the refresh")
        first = storage.tokens
        assert first is not None and first.refresh_token, "the authorization server issued a refresh token"
        provider.context.token_expiry_time = time.time() - 1  # as if the hour had passed
        found = await call(client, "search_memory", query="refresh", mode="text")
        assert len(found["results"]) == 1
    assert storage.tokens is not None and storage.tokens.access_token != first.access_token
    assert alice.logins == 1


async def test_a_read_only_grant_steps_up_to_write_after_a_403(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer
) -> None:
    server = start_oauth_server(start_server, tmp_path, oidc_server)
    # The first consent grants read only; the second (the step-up) grants what is asked.
    reader, storage = ScriptedUser(oidc_server, "carol", grant_scopes="read"), Storage()
    async with signed_in(server, user_provider(server, reader, storage)) as client:
        assert (await call(client, "search_memory", query="anything"))["results"] == []
        assert reader.logins == 1 and storage.tokens is not None
        assert "write" not in storage.tokens.scope.split()
        reader.grant_scopes = None
        added = await call(client, "add_turn", thread_id="t", role="user", content="written after step-up")
        working = await call(client, "get_working_memory", thread_id="t")
        assert [(m["id"], m["content"]) for m in working["messages"]] == [
            (added["id"], "written after step-up")
        ]
    assert reader.logins == 2
    assert storage.tokens is not None and {"read", "write"} <= set(storage.tokens.scope.split())
    assert "no write scope" in server.stderr()  # the 403 that started it


async def test_a_service_client_signs_in_with_client_credentials(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer
) -> None:
    server = start_oauth_server(start_server, tmp_path, oidc_server)
    client_id, secret = await client_credentials_client(oidc_server)
    provider = ClientCredentialsOAuthProvider(
        server.url, Storage(), client_id, secret, scope="read write", issuer=oidc_server.issuer
    )
    async with signed_in(server, provider) as client:
        await call(client, "add_turn", thread_id="nightly", role="user", content="imported by the job")
        found = await call(client, "search_memory", query="imported", mode="text")
        assert [r["content"] for r in found["results"]] == ["imported by the job"]


async def test_two_signed_in_users_see_only_their_own_memories(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer
) -> None:
    server = start_oauth_server(start_server, tmp_path, oidc_server)
    alice, bob = ScriptedUser(oidc_server, "alice"), ScriptedUser(oidc_server, "bob")
    async with signed_in(server, user_provider(server, alice, Storage())) as client:
        await call(client, "add_turn", thread_id="alice-plans", role="user", content="alice's surprise party")
    async with signed_in(server, user_provider(server, bob, Storage())) as client:
        await call(client, "add_turn", thread_id="bob-notes", role="user", content="bob's notes")
        assert (await call(client, "search_memory", query="surprise party", mode="text"))["results"] == []
        assert [m["thread_id"] for m in (await call(client, "list_memories"))["memories"]] == ["bob-notes"]
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert not any("alice" in uri for uri in listed)
        template = ResourceTemplateReference(uri="memory://threads/{thread_id}")
        offered = (await client.complete(template, {"name": "thread_id", "value": ""})).completion
        assert offered.values == ["bob-notes"]
        threads = (await client.read_resource("memory://threads")).contents[0]
        assert "alice" not in getattr(threads, "text", "")
    async with signed_in(server, user_provider(server, alice, Storage())) as client:
        found = await call(client, "search_memory", query="surprise party", mode="text")
        assert [r["content"] for r in found["results"]] == ["alice's surprise party"]


async def test_signed_in_users_hear_only_their_own_changes(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer
) -> None:
    # Both users subscribe to the same thread id on both subscription paths (2025 and 2026) with the
    # access tokens the identity provider issued them; each hears its own writes, never the other's.
    server = start_oauth_server(start_server, tmp_path, oidc_server)
    tokens = {}
    for login in ("alice", "bob"):
        storage = Storage()
        async with signed_in(
            server, user_provider(server, ScriptedUser(oidc_server, login), storage)
        ) as client:
            await call(client, "search_memory", query="warm-up")
        assert storage.tokens is not None
        tokens[login] = storage.tokens.access_token
    heard = {(login, path): Heard() for login in tokens for path in ("2025", "2026")}
    writes = {"alice": 3, "bob": 2}
    async with anyio.create_task_group() as tg:
        for (login, path), session in heard.items():
            await tg.start(subscribe_2025 if path == "2025" else listen_2026, server, tokens[login], session)
        for login, token in tokens.items():
            async with http_client(server, token) as writer:
                await call(writer, "add_turn", thread_id=MARKER, role="user", content="ready?")
                with anyio.fail_after(EVENT_SECONDS):
                    for path in ("2025", "2026"):
                        await heard[(login, path)].wait_for_markers(1)
        for login, count in writes.items():
            async with http_client(server, tokens[login]) as writer:
                for i in range(count):
                    await call(writer, "add_turn", thread_id=THREAD, role="user", content=f"{login} {i}")
                await call(writer, "add_turn", thread_id=MARKER, role="user", content="done")
        with anyio.fail_after(EVENT_SECONDS):
            for session in heard.values():
                await session.wait_for_markers(2)
        tg.cancel_scope.cancel()
    told = {key: session.count(THREAD) for key, session in heard.items()}
    assert told == {(login, path): writes[login] for login, path in heard}


async def test_an_opaque_token_is_introspected_at_the_authorization_server(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer
) -> None:
    # The resource server's own credentials at the authorization server, for RFC 7662 introspection.
    resource_id, resource_secret = await client_credentials_client(oidc_server, "mcp-memory resource server")
    server = start_oauth_server(
        start_server,
        tmp_path,
        oidc_server,
        MCP_MEMORY_SECURITY__INTROSPECTION_CLIENT_ID=resource_id,
        MCP_MEMORY_SECURITY__INTROSPECTION_CLIENT_SECRET=resource_secret,
    )
    job_id, job_secret = await client_credentials_client(oidc_server, "opaque import job")
    token = await client_credentials_token(oidc_server, job_id, job_secret, server.url, "read write")
    assert token.count(".") != 2, "an opaque token, not a JWT"
    async with bearer_client(server, token) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="through introspection")
        found = await call(client, "search_memory", query="introspection", mode="text")
        assert [r["content"] for r in found["results"]] == ["through introspection"]
    refused = await post_tool_call(server.url, token[:-4] + "abcd", "add_turn", {"thread_id": "t"})
    assert refused.status_code == 401 and challenge(refused)["error"] == "invalid_token"
    elsewhere = await client_credentials_token(
        oidc_server, job_id, job_secret, "http://127.0.0.1:9/another-resource", "read write"
    )
    refused = await post_tool_call(server.url, elsewhere, "add_turn", {"thread_id": "t"})
    assert refused.status_code == 401, "a token for another resource is refused"
