"""The one HTTP helper (security/http.py): an injected client carries every request to the identity
provider (discovery, keys, introspection, the explorer's code exchange), and a failure to get an answer
maps to the same errors as before, with the same words."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import pytest
from starlette.requests import Request

from mcp_memory.config import SecuritySettings, Settings
from mcp_memory.security.http import Http, Unreachable
from mcp_memory.security.oauth.issuer import Issuer, IssuerUnavailable, fetch_json
from mcp_memory.security.oauth.tokens import IntrospectionVerifier, build_verifier
from mcp_memory.ui import signin
from mcp_memory.ui.guard import Guard, Refused
from tests.services.local_issuer import LocalIssuer

pytestmark = pytest.mark.anyio

RESOURCE = "https://memory.example.com/mcp"
BASE = "https://idp.example.com"

Handler = Callable[[httpx2.Request], Awaitable[httpx2.Response]]


def mocked(handler: Handler, seen: list[httpx2.Request] | None = None) -> httpx2.AsyncClient:
    async def recording(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(request)
        return await handler(request)

    return httpx2.AsyncClient(transport=httpx2.MockTransport(recording))


def settings_for(tmp_path: Path, **security: object) -> Settings:
    return Settings(
        user_id="tester",
        data_dir=tmp_path,
        security=SecuritySettings(authorization_server=BASE, resource_url=RESOURCE, **security),
    )


def the_issuer() -> tuple[LocalIssuer, Handler]:
    issuer = LocalIssuer()
    issuer.base = BASE

    async def answer(request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx2.Response(
                200, json=issuer.metadata() | {"introspection_endpoint": f"{BASE}/introspect"}
            )
        if path == "/jwks":
            return httpx2.Response(200, json={"keys": [k.jwk for k in issuer.keys]})
        if path == "/token":
            form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
            if form.get("code") != "the-code" or form.get("code_verifier") != "the-verifier":
                return httpx2.Response(400, json={"error": "invalid_grant"})
            return httpx2.Response(200, json={"access_token": issuer.mint(issuer.claims(RESOURCE))})
        if path == "/introspect":
            form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
            active = form.get("token") == "opaque-good"
            return httpx2.Response(200, json={"active": active, "sub": "bob", "scope": "read", "iss": BASE})
        return httpx2.Response(404)

    return issuer, answer


async def test_an_injected_client_carries_discovery_keys_and_introspection(tmp_path: Path) -> None:
    issuer, answer = the_issuer()
    seen: list[httpx2.Request] = []
    async with mocked(answer, seen) as client:
        verifier = build_verifier(settings_for(tmp_path, introspection_client_id="memory"), http=Http(client))
        assert verifier is not None and verifier.jwt is not None
        token = issuer.mint(issuer.claims(RESOURCE))
        assert (await verifier.verify(token)).subject == "ann"
        assert (await verifier.verify("opaque-good")).subject == "bob"
    assert [(r.method, r.url.path) for r in seen] == [
        ("GET", "/.well-known/oauth-authorization-server"),  # RFC 8414 first: 404 here
        ("GET", "/.well-known/openid-configuration"),
        ("GET", "/jwks"),
        ("POST", "/introspect"),
    ]
    assert seen[0].headers["accept"] == "application/json"
    assert seen[-1].headers["authorization"].startswith("Basic ")


async def test_a_connection_failure_is_issuer_unavailable_naming_the_url() -> None:
    async def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    async with mocked(refuse) as client:
        with pytest.raises(IssuerUnavailable) as failed:
            await fetch_json(Http(client), f"{BASE}/jwks")
    assert str(failed.value) == f"the identity provider did not answer at {BASE}/jwks: connection refused"
    assert isinstance(failed.value.__cause__, httpx2.ConnectError)


async def test_no_answer_in_time_is_unreachable_and_issuer_unavailable() -> None:
    async def stall(request: httpx2.Request) -> httpx2.Response:
        await anyio.sleep(5)
        return httpx2.Response(200, json={})

    async with mocked(stall) as client:
        with pytest.raises(Unreachable) as failed:
            await Http(client, seconds=0.05).get(f"{BASE}/slow")
        assert isinstance(failed.value.cause, TimeoutError)
        with pytest.raises(IssuerUnavailable, match=f"did not answer at {BASE}/slow"):
            await fetch_json(Http(client, seconds=0.05), f"{BASE}/slow")


async def test_a_redirect_is_not_followed_and_an_answer_not_json_is_refused() -> None:
    async def redirect_or_text(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/moved":
            return httpx2.Response(302, headers={"Location": f"{BASE}/elsewhere"})
        return httpx2.Response(200, text="<html>")

    async with mocked(redirect_or_text) as client:
        with pytest.raises(IssuerUnavailable, match=f"answered 302 at {BASE}/moved$"):
            await fetch_json(Http(client), f"{BASE}/moved")
        with pytest.raises(IssuerUnavailable, match="is not JSON"):
            await fetch_json(Http(client), f"{BASE}/page")


async def test_an_introspection_endpoint_that_does_not_answer_is_issuer_unavailable(tmp_path: Path) -> None:
    async def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    settings = settings_for(
        tmp_path, introspection_client_id="memory", introspection_endpoint=f"{BASE}/introspect"
    )
    async with mocked(refuse) as client:
        verifier = IntrospectionVerifier(settings, Issuer(settings.security, http=Http(client)))
        with pytest.raises(IssuerUnavailable) as failed:
            await verifier.verify("opaque")
    assert str(failed.value) == "the introspection endpoint did not answer: connection refused"


async def test_without_a_client_each_request_opens_its_own() -> None:
    http = Http()
    assert http.client is None
    with pytest.raises(Unreachable):  # nothing listens on port 9 of the loopback address
        await http.get("http://127.0.0.1:9/", headers={"Accept": "application/json"})


def callback_request() -> Request:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": "/auth/callback",
        "root_path": "/ui",
        "headers": [],
        "query_string": b"",
    }
    return Request(scope)


async def test_the_explorer_exchanges_its_code_on_the_same_client(tmp_path: Path) -> None:
    _, answer = the_issuer()
    seen: list[httpx2.Request] = []
    settings = settings_for(tmp_path, explorer_client_id="explorer")
    async with mocked(answer, seen) as client:
        explorer: Any = SimpleNamespace(guard=Guard(settings, build_verifier(settings, http=Http(client))))
        token = await signin._exchange(explorer, callback_request(), "the-code", "the-verifier")
        principal = await explorer.guard.token_principal(token)
    assert principal is not None and principal.user_id == "ann"
    [exchange] = [r for r in seen if r.url.path == "/token"]
    assert exchange.method == "POST"
    assert "redirect_uri=https%3A%2F%2Fmemory.example.com%2Fui%2Fauth%2Fcallback" in exchange.content.decode()


async def test_a_token_endpoint_that_does_not_answer_is_a_502_saying_so(tmp_path: Path) -> None:
    _, answer = the_issuer()

    async def token_endpoint_down(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/token":
            raise httpx2.ConnectError("connection refused", request=request)
        return await answer(request)

    settings = settings_for(tmp_path, explorer_client_id="explorer")
    async with mocked(token_endpoint_down) as client:
        explorer: Any = SimpleNamespace(guard=Guard(settings, build_verifier(settings, http=Http(client))))
        with pytest.raises(Refused) as refused:
            await signin._exchange(explorer, callback_request(), "the-code", "the-verifier")
    assert refused.value.status == 502
    assert str(refused.value) == "the identity provider's token endpoint did not answer: connection refused"
