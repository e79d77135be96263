"""The authorization server the OAuth tests sign in with (tests/services/oidc_server.py: the certified
`oidc-provider`), tested on its own: it is a real, working OAuth 2.1 / OpenID Connect server, and it takes
exactly what the MCP SDK's OAuth client sends. The tests also show how to use it.

Covered: metadata at both well-known paths (RFC 8414 and OpenID Connect discovery), dynamic client
registration, authorization code + PKCE (S256) with a resource indicator (RFC 8707) giving an RS256 JWT
access token (RFC 9068) checked against the published keys, refresh, a read-only grant, client
credentials, an unknown resource refused, a new signing key at every start; and the SDK's own
`OAuthClientProvider` signing in, refreshing and stepping up from read to write against it, with a
stand-in for the resource server that challenges and checks tokens as a real one does.
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import jwt
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import PKCEParameters, check_registration_usable
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    create_client_registration_request,
    handle_registration_response,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata, OAuthToken

from tests.services.oidc_server import (
    OidcServer,
    ScriptedUser,
    client_credentials_client,
    client_credentials_token,
    local_oidc_server,
)

pytestmark = pytest.mark.anyio

ORIGIN = "http://127.0.0.1:9999"
RESOURCE = f"{ORIGIN}/mcp"  # nothing listens there: the tokens only name it
CALLBACK = "http://127.0.0.1:9/callback"  # never opened: the scripted user hands the redirect over


async def discovery(server: OidcServer) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.get(f"{server.issuer}/.well-known/openid-configuration")
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


async def post_token(
    server: OidcServer, data: dict[str, str], auth: tuple[str, str] | None = None
) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30, auth=auth) as http:
        return await http.post(f"{server.issuer}/token", data=data)


async def verify(server: OidcServer, token: str, resource: str = RESOURCE) -> dict[str, Any]:
    """The access token's claims, as a resource server checks them: signature by a published key
    (RS256 only), audience, issuer, expiry."""
    keys = jwt.PyJWKClient((await discovery(server))["jwks_uri"])
    key = await anyio.to_thread.run_sync(keys.get_signing_key_from_jwt, token)
    claims: dict[str, Any] = jwt.decode(
        token, key.key, algorithms=["RS256"], audience=resource, issuer=server.issuer
    )
    return claims


async def register_public_client(server: OidcServer, scope: str | None = None) -> OAuthClientInformationFull:
    """Dynamic registration exactly as the SDK does it: its request builder and its response parser."""
    metadata = OAuthMetadata.model_validate(await discovery(server))
    client = OAuthClientMetadata(
        redirect_uris=[CALLBACK],  # pydantic parses the URL
        client_name="oidc fixture tests",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=scope,
    )
    request = create_client_registration_request(metadata, client, server.issuer)
    async with httpx2.AsyncClient(timeout=30) as http:
        registered = await handle_registration_response(await http.send(request))
    check_registration_usable(registered)
    return registered


async def sign_in(
    server: OidcServer,
    client_id: str,
    login: str,
    scope: str = "openid offline_access read write",
    grant_scopes: str | None = None,
) -> dict[str, Any]:
    """Authorization code + PKCE S256 for RESOURCE, with a scripted login and consent: the token response."""
    pkce, state = PKCEParameters.generate(), secrets.token_urlsafe(16)
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": scope,
        "prompt": "consent",  # offline_access is dropped without it (the SDK sends it too)
    }
    callback = await server.authorize(f"{server.issuer}/auth?{urlencode(query)}", login, grant_scopes)
    assert callback.startswith(CALLBACK + "?"), callback
    answer = parse_qs(urlsplit(callback).query)
    assert answer["state"] == [state]
    assert answer["iss"] == [server.issuer], "RFC 9207: the response names its issuer"
    token = await post_token(
        server,
        {
            "grant_type": "authorization_code",
            "code": answer["code"][0],
            "redirect_uri": CALLBACK,
            "client_id": client_id,
            "code_verifier": pkce.code_verifier,
            "resource": RESOURCE,
        },
    )
    assert token.status_code == 200, token.text
    tokens: dict[str, Any] = token.json()
    return tokens


async def test_the_metadata_is_at_both_well_known_paths_and_the_sdk_accepts_it(
    oidc_server: OidcServer,
) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        # The SDK asks the RFC 8414 path first, then OpenID Connect discovery; both are served, the same.
        urls = build_oauth_authorization_server_metadata_discovery_urls(oidc_server.issuer, RESOURCE)
        assert urls[0] == f"{oidc_server.issuer}/.well-known/oauth-authorization-server"
        documents = [(await http.get(url)).json() for url in urls]
    assert documents[0] == documents[1] == await discovery(oidc_server)
    metadata = OAuthMetadata.model_validate(documents[0])
    validate_metadata_issuer(metadata, oidc_server.issuer)  # the SDK's exact string comparison
    assert str(metadata.issuer) == oidc_server.issuer and not oidc_server.issuer.endswith("/")
    assert set(metadata.scopes_supported or []) == {"openid", "offline_access", "read", "write", "admin"}
    assert metadata.code_challenge_methods_supported == ["S256"]
    assert {"authorization_code", "refresh_token", "client_credentials"} <= set(
        metadata.grant_types_supported or []
    )
    assert "none" in (metadata.token_endpoint_auth_methods_supported or [])
    assert metadata.registration_endpoint is not None
    assert metadata.authorization_response_iss_parameter_supported is True


async def test_a_public_client_registers_dynamically_as_the_sdk_does(oidc_server: OidcServer) -> None:
    registered = await register_public_client(oidc_server, scope="read offline_access")
    assert registered.client_id and registered.client_secret is None
    assert registered.token_endpoint_auth_method == "none"
    assert [str(uri) for uri in registered.redirect_uris or []] == [CALLBACK]
    assert registered.grant_types == ["authorization_code", "refresh_token"]
    # The registered scope of a client that signs users in is dropped, so it caps nothing (step-up).
    assert registered.scope is None


async def test_authorization_code_with_pkce_gives_an_rs256_jwt_access_token_for_the_resource(
    oidc_server: OidcServer,
) -> None:
    client = await register_public_client(oidc_server)
    tokens = await sign_in(oidc_server, client.client_id, "alice")
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] <= 600
    assert tokens["refresh_token"] and tokens["id_token"]
    assert set(tokens["scope"].split()) >= {"read", "write"}
    OAuthToken.model_validate(tokens)  # the SDK's parser
    header = jwt.get_unverified_header(tokens["access_token"])
    assert header["alg"] == "RS256" and header["typ"] == "at+jwt"
    claims = await verify(oidc_server, tokens["access_token"])
    assert claims["sub"] == "alice"
    assert claims["aud"] == RESOURCE and claims["iss"] == oidc_server.issuer
    assert claims["client_id"] == client.client_id
    assert set(claims["scope"].split()) == {"read", "write"}, "the resource's scopes, no openid"
    assert claims["exp"] - claims["iat"] == 600 and claims["jti"]


async def test_a_refresh_token_gets_a_new_jwt_without_a_login(oidc_server: OidcServer) -> None:
    client = await register_public_client(oidc_server)
    first = await sign_in(oidc_server, client.client_id, "alice")
    refreshed = await post_token(
        oidc_server,
        {
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": client.client_id,
            "resource": RESOURCE,
        },
    )
    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()
    assert second["access_token"] != first["access_token"]
    before, after = (
        await verify(oidc_server, first["access_token"]),
        await verify(oidc_server, second["access_token"]),
    )
    assert after["sub"] == "alice" and after["jti"] != before["jti"]
    assert set(after["scope"].split()) == {"read", "write"}


async def test_a_read_only_consent_gives_a_read_only_token(oidc_server: OidcServer) -> None:
    client = await register_public_client(oidc_server)
    tokens = await sign_in(oidc_server, client.client_id, "carol", grant_scopes="read")
    assert (await verify(oidc_server, tokens["access_token"]))["scope"] == "read"


async def test_pkce_is_required_and_checked(oidc_server: OidcServer) -> None:
    client = await register_public_client(oidc_server)
    query = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": CALLBACK,
        "scope": "read",
    }
    query |= {"state": "s", "resource": RESOURCE}
    refused = await oidc_server.authorize(f"{oidc_server.issuer}/auth?{urlencode(query)}", "alice")
    assert parse_qs(urlsplit(refused).query)["error"] == ["invalid_request"], "no code_challenge, no code"

    pkce = PKCEParameters.generate()
    query |= {"code_challenge": pkce.code_challenge, "code_challenge_method": "S256"}
    callback = await oidc_server.authorize(f"{oidc_server.issuer}/auth?{urlencode(query)}", "alice")
    code = parse_qs(urlsplit(callback).query)["code"][0]
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK}
    exchange |= {"client_id": client.client_id, "resource": RESOURCE}
    wrong = await post_token(
        oidc_server, exchange | {"code_verifier": PKCEParameters.generate().code_verifier}
    )
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"


async def test_client_credentials_give_a_jwt_for_the_resource_whose_subject_is_the_client(
    oidc_server: OidcServer,
) -> None:
    client_id, secret = await client_credentials_client(oidc_server)
    token = await client_credentials_token(oidc_server, client_id, secret, RESOURCE, "read write")
    claims = await verify(oidc_server, token)
    assert claims["sub"] == claims["client_id"] == client_id
    assert set(claims["scope"].split()) == {"read", "write"} and claims["aud"] == RESOURCE

    # client_secret_post as well; and the registered scope is the ceiling of a service client.
    client_id, secret = await client_credentials_client(
        oidc_server, scope="read", auth_method="client_secret_post"
    )
    grant = {"grant_type": "client_credentials", "resource": RESOURCE, "client_id": client_id}
    grant |= {"client_secret": secret}
    reader = await post_token(oidc_server, grant | {"scope": "read"})
    assert reader.status_code == 200, reader.text
    assert (await verify(oidc_server, reader.json()["access_token"]))["scope"] == "read"
    beyond = await post_token(oidc_server, grant | {"scope": "read write"})
    assert beyond.status_code == 400 and beyond.json()["error"] == "invalid_scope"


async def test_a_resource_it_does_not_know_is_refused(oidc_server: OidcServer) -> None:
    client_id, secret = await client_credentials_client(oidc_server)
    grant = {
        "grant_type": "client_credentials",
        "resource": "https://memory.example.test/mcp",
        "scope": "read",
    }
    refused = await post_token(oidc_server, grant, auth=(client_id, secret))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target"


async def test_every_start_has_a_new_signing_key_and_env_names_more_resources(
    oidc_server: OidcServer,
) -> None:
    elsewhere = "https://memory.example.test/mcp"
    with local_oidc_server(OIDC_RESOURCES=elsewhere) as other:
        assert other.issuer != oidc_server.issuer
        async with httpx2.AsyncClient(timeout=30) as http:
            kids = [
                (await http.get(f"{s.issuer}/jwks")).json()["keys"][0]["kid"] for s in (oidc_server, other)
            ]
        assert kids[0] != kids[1]
        client_id, secret = await client_credentials_client(other)
        token = await client_credentials_token(other, client_id, secret, elsewhere, "read")
        assert (await verify(other, token, resource=elsewhere))["aud"] == elsewhere


class Storage:
    """The SDK's TokenStorage, in memory."""

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


class StandInResource(httpx2.AsyncBaseTransport):
    """The resource server's part, inside the client's transport: protected-resource metadata (RFC 9728),
    a 401 challenge for "read" without a token, a 403 insufficient_scope for "write" on POST, and tokens
    checked as `verify` does; the answer is the token's claims. Every other request goes to the
    authorization server over the network and is recorded in `sent`."""

    def __init__(self, server: OidcServer) -> None:
        self.server = server
        self.network = httpx2.AsyncHTTPTransport()
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not str(request.url).startswith(ORIGIN):
            self.sent.append(f"{request.method} {request.url.path}")
            return await self.network.handle_async_request(request)
        if request.url.path.startswith("/.well-known/oauth-protected-resource"):
            prm = {"resource": RESOURCE, "authorization_servers": [self.server.issuer]}
            return httpx2.Response(200, json=prm | {"scopes_supported": ["read", "write"]})
        challenge = f'Bearer resource_metadata="{ORIGIN}/.well-known/oauth-protected-resource/mcp"'
        bearer = request.headers.get("authorization", "")
        if not bearer.startswith("Bearer "):
            return httpx2.Response(401, headers={"WWW-Authenticate": f'{challenge}, scope="read"'})
        try:
            claims = await verify(self.server, bearer.removeprefix("Bearer "))
        except jwt.PyJWTError:
            return httpx2.Response(401, headers={"WWW-Authenticate": f'{challenge}, error="invalid_token"'})
        needed = "write" if request.method == "POST" else "read"
        if needed not in claims["scope"].split():
            refusal = f'{challenge}, error="insufficient_scope", scope="{needed}"'
            return httpx2.Response(403, headers={"WWW-Authenticate": refusal})
        return httpx2.Response(200, json=claims)

    async def aclose(self) -> None:
        await self.network.aclose()


async def test_the_sdk_oauth_client_signs_in_refreshes_and_steps_up_against_it(
    oidc_server: OidcServer,
) -> None:
    user, storage, resource = ScriptedUser(oidc_server, "dana"), Storage(), StandInResource(oidc_server)
    metadata = OAuthClientMetadata(
        redirect_uris=[CALLBACK],  # pydantic parses the URL
        client_name="oidc fixture tests",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    provider = OAuthClientProvider(RESOURCE, metadata, storage, user.redirect_handler, user.callback_handler)
    async with httpx2.AsyncClient(transport=resource, auth=provider, timeout=30) as http:
        read = await http.get(RESOURCE)
        assert read.status_code == 200, read.text
        assert read.json()["sub"] == "dana" and read.json()["scope"] == "read"
        assert storage.tokens is not None and storage.tokens.refresh_token, "offline_access was asked for"
        first = storage.tokens.access_token

        provider.context.token_expiry_time = time.time() - 1  # as if the ten minutes had passed
        again = await http.get(RESOURCE)
        assert again.status_code == 200 and storage.tokens.access_token != first
        assert user.logins == 1, "refreshed, not signed in again"

        # Write needs a step-up: the same registered client asks for read and write, and gets them.
        wrote = await http.post(RESOURCE)
        assert wrote.status_code == 200, wrote.text
        assert set(wrote.json()["scope"].split()) == {"read", "write"} and user.logins == 2
    assert resource.sent == [
        "GET /.well-known/oauth-authorization-server",
        "POST /reg",
        "POST /token",  # the code
        "POST /token",  # the refresh
        "POST /token",  # the code of the step-up
    ]
