"""A real OAuth 2.1 / OpenID Connect authorization server for the suite: the certified npm package
`oidc-provider`, configured by tests/services/oidc/provider.mjs (dynamic registration, PKCE, refresh
tokens, client credentials, resource indicators giving RS256 JWT access tokens, a scriptable login).

Installed once into <repo>/.cache/oidc-provider (or $OIDC_PROVIDER_DIR) with npm, started once per
session on 127.0.0.1 at a port it picks, stopped at the end. It warns that it wants Node 22 and works
on Node 20. A failure to install or start it fails the tests that need it; it is never a skip.
Its own tests, which also show how to use it: tests/security/test_oidc_server.py.

`OidcServer.authorize` is a person at the browser: from an authorization URL it signs in and consents
over HTTP (the same forms Chromium fills in the browser tests) and returns the callback URL with the
code and state. `ScriptedUser` adapts it to the MCP SDK's OAuth client (redirect and callback handlers).
`OidcServer.approve_device` is the same person approving a device sign-in (RFC 8628) from its
verification URL. `client_credentials_client` registers a service client for the client-credentials grant.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import pytest
from mcp.shared.auth import AuthorizationCodeResult

from tests.services.node_service import cache_dir, node, npm_install, stop, wait_for_line

PACKAGE = "oidc-provider@9.13.3"
SCRIPT = Path(__file__).parent / "oidc" / "provider.mjs"
_READY = re.compile(r"OIDC ready at (http://[\d.]+:\d+)")


@dataclass(frozen=True)
class OidcServer:
    issuer: str  # http://127.0.0.1:PORT, no trailing slash, as in its metadata
    process: subprocess.Popen[str] | None = None

    async def authorize(self, authorization_url: str, login: str, grant_scopes: str | None = None) -> str:
        """Follow this server's pages from `authorization_url` to the client's redirect URI (returned, with
        its code, state and iss), signing in as `login` and consenting on the way. `grant_scopes` ("read",
        say) grants only those of the resource scopes asked for; None grants all of them."""
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as http:  # keeps the cookies
            location, page = await self._walk(http, authorization_url, login, grant_scopes)
        assert page is None, f"the sign-in ended at {location}, not at the client: {page:.500}"
        return location

    async def approve_device(
        self, verification_url: str, login: str, grant_scopes: str | None = None
    ) -> None:
        """A person approving a device sign-in (RFC 8628): opens `verification_url` (the
        verification_uri_complete, with its user code), confirms the code, signs in as `login` and
        consents, until the page that says the device is signed in."""
        async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as http:
            page = await http.get(verification_url)
            for _ in range(
                3
            ):  # the code's page posts itself (a script a browser runs), then the confirmation
                assert page.status_code == 200, f"{page.url}: {page.status_code} {page.text[:500]}"
                form = re.search(r'<form [^>]*action="([^"]+)"', page.text)
                fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.text))
                assert form and "xsrf" in fields, f"no form to submit at {page.url}: {page.text[:500]}"
                page = await http.post(urljoin(verification_url, html.unescape(form.group(1))), data=fields)
                if page.status_code in (302, 303):
                    break
            else:
                raise AssertionError(f"the device pages never led to a sign-in: {page.text[:500]}")
            location = urljoin(verification_url, page.headers["location"])
            _, last = await self._walk(http, location, login, grant_scopes)
        assert last is not None and 'id="signed-in"' in last, f"the device was not signed in: {last!r:.500}"

    async def _walk(
        self, http: httpx2.AsyncClient, location: str, login: str, grant_scopes: str | None
    ) -> tuple[str, str | None]:
        """Through the login and consent pages from `location`: where the walk left this server (with
        None) or, when it ended on one of this server's own pages, that page's URL and text."""
        seen: list[str] = []
        for _ in range(20):
            seen.append(location)
            if not location.startswith(self.issuer + "/"):
                return location, None  # the client's redirect URI: stop, as a browser would hand it over
            page = await http.get(location)
            if page.status_code in (302, 303):
                location = urljoin(location, page.headers["location"])
                continue
            assert page.status_code == 200, f"{location}: {page.status_code} {page.text[:500]}"
            if 'name="login"' in page.text:
                posted = await http.post(f"{location}/login", data={"login": login})
            elif 'id="consent"' in page.text:
                posted = await http.post(f"{location}/consent", data={"grant_scopes": grant_scopes or ""})
            elif "/interaction/" not in location:
                return location, page.text  # a page of its own that asks nothing (the device's "signed in")
            else:
                raise AssertionError(f"unexpected page at {location}: {page.text[:500]}")
            assert posted.status_code in (302, 303), f"{location}: {posted.status_code} {posted.text[:500]}"
            location = urljoin(location, posted.headers["location"])
        raise AssertionError("the authorization server kept redirecting: " + " -> ".join(seen))


def _install_dir() -> Path:
    override = os.environ.get("OIDC_PROVIDER_DIR")
    return Path(override) if override else cache_dir("oidc-provider")


@contextmanager
def local_oidc_server(**env: str) -> Iterator[OidcServer]:
    """Install (once) and run the authorization server until the block ends. `env` is added to its
    environment: OIDC_RESOURCES (space-separated resources besides http://127.0.0.1:* and
    http://localhost:*), OIDC_DEFAULT_RESOURCE (the resource of a request that names none),
    OIDC_ACCESS_TTL (access tokens' lifetime in seconds, default 600)."""
    package = _install_dir() / "node_modules" / "oidc-provider"
    npm_install(PACKAGE, _install_dir(), package / "lib" / "index.js")
    process = subprocess.Popen(
        [node("the authorization server"), str(SCRIPT), str(package)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env},
    )
    try:
        ready = wait_for_line(process, _READY, "oidc-provider")
        yield OidcServer(issuer=ready.group(1), process=process)
    finally:
        stop(process)


@pytest.fixture(scope="session")
def oidc_server() -> Iterator[OidcServer]:
    with local_oidc_server() as server:
        yield server


class ScriptedUser:
    """Signs in as `login` wherever the SDK's OAuth client sends the browser, and consents.

    `grant_scopes` ("read", say) grants only those of the scopes asked for; None grants all of them.
    `logins` counts the sign-ins, so a test can tell a refresh from a new authorization."""

    def __init__(self, server: OidcServer, login: str, grant_scopes: str | None = None) -> None:
        self.server = server
        self.login = login
        self.grant_scopes = grant_scopes
        self.logins = 0
        self._callback: str | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        self._callback = await self.authorize(authorization_url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        """The SDK (mcp 2.x) wants an AuthorizationCodeResult (code, state and the RFC 9207 iss)."""
        assert self._callback is not None, "the client asked for the code before sending the user"
        query = parse_qs(urlsplit(self._callback).query)
        self._callback = None
        if "code" not in query:
            raise AssertionError(f"the authorization server refused: {query}")
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    async def authorize(self, authorization_url: str) -> str:
        """The callback URL the sign-in at `authorization_url` ends at (see OidcServer.authorize)."""
        self.logins += 1
        return await self.server.authorize(authorization_url, self.login, self.grant_scopes)


async def register(server: OidcServer, metadata: dict[str, object]) -> dict[str, object]:
    """Dynamic client registration (RFC 7591): the registered client's metadata, with its id (and secret)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        discovery = (await http.get(f"{server.issuer}/.well-known/openid-configuration")).json()
        answer = await http.post(discovery["registration_endpoint"], json=metadata)
    assert answer.status_code == 201, answer.text
    registered: dict[str, object] = answer.json()
    return registered


async def client_credentials_client(
    server: OidcServer,
    name: str = "nightly import job",
    scope: str = "read write",
    auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
) -> tuple[str, str]:
    """A confidential service client for the client-credentials grant: (client_id, client_secret). It must
    authenticate with `auth_method` (the SDK's ClientCredentialsOAuthProvider: token_endpoint_auth_method).
    `scope` is its ceiling: asking for more fails with invalid_scope. A name starting with "opaque" gets
    opaque access tokens instead of JWTs. Its tokens' sub is its client_id."""
    registered = await register(
        server,
        {
            "client_name": name,
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
            "token_endpoint_auth_method": auth_method,
            "scope": scope,
        },
    )
    return str(registered["client_id"]), str(registered["client_secret"])


async def client_credentials_token(
    server: OidcServer, client_id: str, client_secret: str, resource: str, scope: str
) -> str:
    """An access token for `resource` by the client-credentials grant (client_secret_basic)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        discovery = (await http.get(f"{server.issuer}/.well-known/openid-configuration")).json()
        answer = await http.post(
            discovery["token_endpoint"],
            data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
            auth=(client_id, client_secret),
        )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])
