"""Signing in to a memory server (`mcp-memory login URL`) and out (`mcp-memory logout URL`).

Three ways in, each ending with the credential kept by remote/credentials.py:
- `sign_in_with_browser`: authorization code + PKCE through a loopback redirect (RFC 8252), the whole
  flow the MCP SDK's OAuthClientProvider runs for any MCP client (discovery, dynamic client
  registration, PKCE, the token exchange with the RFC 8707 resource), set off by an MCP initialize
  request to the server. The browser is opened when there is one; the URL is always printed, to open by
  hand (in a browser on this machine: the sign-in ends with a redirect to this machine's loopback address).
- `sign_in_with_device`: the device authorization grant (RFC 8628), for a machine with no browser: a
  code to enter on any device. The SDK has no client for it and neither has any maintained OAuth
  library with this project's HTTP client (authlib implements the grant's server side only; its client
  integrations need httpx or requests), so the poll is written here, small: the SDK's discovery and
  registration helpers, then the device request and a poll that honours `interval`, `slow_down` and
  `expires_in`.
- `store_given_token`: a token an administrator made with `mcp-memory token`, read from stdin and
  checked against the server; it is used as it is (no refresh).
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import create_client_registration_request, handle_registration_response
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import ValidationError

from mcp_memory.remote import places
from mcp_memory.remote.credentials import (
    Credential,
    credential_for,
    forget_credential,
    load_credential,
    save_credential,
)
from mcp_memory.remote.discovery import (
    Discovered,
    LoginFailed,
    discover,
    initialize_request,
    oauth_error,
    send,
)
from mcp_memory.remote.loopback import LoopbackRedirect

__all__ = ["LoginFailed", "sign_in_with_browser", "sign_in_with_device", "sign_out", "store_given_token"]

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
CLIENT_NAME = "mcp-memory"
HTTP_TIMEOUT = 30.0
BROWSER_WAIT = 300.0  # seconds for the person to sign in at the browser
Say = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Pending:
    """The SDK's TokenStorage for a sign-in under way: kept in memory, stored only once it succeeded."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _can_open_browser() -> bool:
    """A graphical browser can be opened here: on Linux and the BSDs only with a display (else
    `webbrowser` would start a text browser in this terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


async def sign_in_with_browser(
    data_dir: Path,
    url: str,
    *,
    open_browser: bool = True,
    client_id: str | None = None,
    wait_seconds: float = BROWSER_WAIT,
    say: Say = _stderr,
) -> Credential:
    base = places.normalized(url)
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        found = await discover(http, base)  # first, for plain errors before any browser opens
    if found.server_metadata.registration_endpoint is None and client_id is None:
        raise LoginFailed(
            f"the authorization server {found.server_metadata.issuer} registers no clients (no "
            "registration_endpoint): pass --client-id, a public client registered there for "
            "http://127.0.0.1/callback"
        )
    async with LoopbackRedirect() as loopback:
        metadata = OAuthClientMetadata(
            redirect_uris=[loopback.redirect_uri],
            client_name=CLIENT_NAME,
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        pending = _Pending(
            None
            if client_id is None
            else OAuthClientInformationFull(
                client_id=client_id,
                redirect_uris=[loopback.redirect_uri],
                token_endpoint_auth_method="none",
            )
        )

        async def send_the_person(authorization_url: str) -> None:
            say(f"To sign in to {base}, open this page in a browser on this machine:\n  {authorization_url}")
            if open_browser and _can_open_browser() and webbrowser.open(authorization_url):
                say("(opened in your browser)")
            say(f"Waiting for the sign-in (up to {wait_seconds / 60:g} minutes)...")

        async def callback() -> AuthorizationCodeResult:
            return await loopback.wait(wait_seconds)

        provider = OAuthClientProvider(base + "/mcp", metadata, pending, send_the_person, callback)
        async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT, auth=provider) as http:
            try:
                answer = await send(http, initialize_request(base))
            except OAuthFlowError as e:
                raise LoginFailed(f"signing in to {base} failed: {str(e)[:240]}") from None
            await _end_session(http, answer)
    if pending.tokens is None or pending.client is None or answer.status_code >= 400:
        raise LoginFailed(f"{base}/mcp answered {answer.status_code} after the sign-in")
    context = provider.context
    credential = credential_for(
        base,
        pending.tokens,
        client=pending.client,
        resource_metadata=context.protected_resource_metadata or found.resource_metadata,
        server_metadata=context.oauth_metadata or found.server_metadata,
    )
    await save_credential(data_dir, base, credential)
    return credential


async def _end_session(http: httpx2.AsyncClient, answer: httpx2.Response) -> None:
    """The MCP session the initialize opened is not used: closed, if the server opened one."""
    session = answer.headers.get("mcp-session-id")
    if session:
        with anyio.move_on_after(5), contextlib.suppress(httpx2.TransportError):
            await http.delete(answer.request.url, headers={"mcp-session-id": session})


async def sign_in_with_device(
    data_dir: Path, url: str, *, client_id: str | None = None, say: Say = _stderr
) -> Credential:
    base = places.normalized(url)
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        found = await discover(http, base)
        endpoint = found.server_document.get("device_authorization_endpoint")
        if not isinstance(endpoint, str):
            raise LoginFailed(
                f"the authorization server {found.server_metadata.issuer} offers no device sign-in (no "
                f"device_authorization_endpoint): sign in with a browser, `mcp-memory login {base}`"
            )
        client = await _device_client(http, found, client_id)
        scope = found.scope([DEVICE_GRANT, "refresh_token"])
        asked = {
            "client_id": client.client_id,
            "resource": found.resource,
            **({"scope": scope} if scope else {}),
        }
        answer = await send(http, httpx2.Request("POST", endpoint, data=asked))
        if answer.status_code != 200:
            error, description = oauth_error(answer)
            raise LoginFailed(
                f"the authorization server refused a device sign-in: {error} {description}".strip()
            )
        device = answer.json()
        complete = device.get("verification_uri_complete")
        say(
            f"To sign in to {base}, open {device['verification_uri']} on any device and enter the code "
            f"{device['user_code']}" + (f"\n  or open: {complete}" if complete else "")
        )
        tokens = await _poll(http, found, client, device)
    credential = credential_for(
        base,
        tokens,
        client=client,
        resource_metadata=found.resource_metadata,
        server_metadata=found.server_metadata,
    )
    await save_credential(data_dir, base, credential)
    return credential


async def _device_client(
    http: httpx2.AsyncClient, found: Discovered, client_id: str | None
) -> OAuthClientInformationFull:
    """The given client, else one registered for the device grant (public, no redirect URI)."""
    if client_id is not None:
        return OAuthClientInformationFull(client_id=client_id, token_endpoint_auth_method="none")
    if found.server_metadata.registration_endpoint is None:
        raise LoginFailed(
            f"the authorization server {found.server_metadata.issuer} registers no clients: pass --client-id"
        )
    metadata = OAuthClientMetadata(
        redirect_uris=None,
        client_name=CLIENT_NAME,
        grant_types=[DEVICE_GRANT, "refresh_token"],
        response_types=[],
        token_endpoint_auth_method="none",
    )
    request = create_client_registration_request(found.server_metadata, metadata, found.url)
    try:
        return await handle_registration_response(await send(http, request))
    except OAuthFlowError as e:
        raise LoginFailed(f"the authorization server did not register this machine: {str(e)[:200]}") from None


async def _poll(
    http: httpx2.AsyncClient, found: Discovered, client: OAuthClientInformationFull, device: dict[str, object]
) -> OAuthToken:
    """The token, asked for every `interval` seconds (5 more after each slow_down) until `expires_in`."""
    interval = float(device.get("interval") or 5)  # type: ignore[arg-type]
    deadline = time.monotonic() + float(device.get("expires_in") or 600)  # type: ignore[arg-type]
    asked = {
        "grant_type": DEVICE_GRANT,
        "device_code": str(device["device_code"]),
        "client_id": client.client_id,
        "resource": found.resource,
    }
    while time.monotonic() + interval < deadline:
        await anyio.sleep(interval)
        answer = await send(
            http, httpx2.Request("POST", str(found.server_metadata.token_endpoint), data=asked)
        )
        if answer.status_code == 200:
            try:
                return OAuthToken.model_validate_json(answer.content)
            except ValidationError as e:
                raise LoginFailed(
                    f"the authorization server's token answer is not OAuth: {e}"[:300]
                ) from None
        error, description = oauth_error(answer)
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5
            continue
        if error == "access_denied":
            raise LoginFailed("the sign-in was refused at the authorization server (access_denied)")
        if error == "expired_token":
            break
        raise LoginFailed(
            f"the authorization server refused the device sign-in: {error} {description}".strip()
        )
    raise LoginFailed("nobody entered the code before it expired: run the command again")


_PRINTED_TOKEN = re.compile(r"^token \(.*\):\s*(\S+)\s*$", re.MULTILINE)


def token_from(text: str) -> str:
    """The token in what was given on stdin: the token alone, or the whole output of `mcp-memory token`."""
    printed = _PRINTED_TOKEN.search(text)
    if printed:
        return printed.group(1)
    words = text.split()
    if len(words) != 1:
        raise LoginFailed(
            f"stdin must hold one token (or the output of `mcp-memory token`); it holds {len(words)} words"
        )
    return words[0]


async def store_given_token(data_dir: Path, url: str, text: str) -> Credential:
    """The token on stdin, kept once the server accepted it (an MCP initialize answered, not 401)."""
    base = places.normalized(url)
    token = token_from(text)
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        answer = await send(http, initialize_request(base, token))
        await _end_session(http, answer)
    if answer.status_code in (401, 403):
        challenge = answer.headers.get("www-authenticate", "")
        why = re.search(r'error_description="([^"]*)"', challenge)
        raise LoginFailed(
            f"{base} refused this token ({answer.status_code}{': ' + why.group(1) if why else ''})"[:300]
        )
    if answer.status_code >= 300:
        raise LoginFailed(f"{base}/mcp answered {answer.status_code} to the token: is it the memory server?")
    credential = credential_for(base, OAuthToken(access_token=token))
    await save_credential(data_dir, base, credential)
    return credential


async def sign_out(data_dir: Path, url: str) -> bool:
    """The credential forgotten (keyring, credential.json, token.json), its refresh token revoked first
    where the authorization server has a revocation endpoint (best effort: forgotten either way).
    Whether there was anything to forget."""
    base = places.normalized(url)
    credential = await load_credential(data_dir, base)
    if credential is not None:
        await _revoke(credential)
    return await forget_credential(data_dir, base)


async def _revoke(credential: Credential) -> None:
    server = credential.server_metadata
    token = credential.tokens.refresh_token
    if server is None or server.revocation_endpoint is None or not token or credential.client is None:
        return
    client = credential.client
    form = {"token": token, "token_type_hint": "refresh_token", "client_id": client.client_id}
    auth: httpx2.Auth | None = None
    if client.client_secret and client.token_endpoint_auth_method == "client_secret_post":
        form["client_secret"] = client.client_secret
    elif client.client_secret:
        auth = httpx2.BasicAuth(client.client_id, client.client_secret)
    # Unreachable or refused: the credential is forgotten here all the same.
    with anyio.move_on_after(10), contextlib.suppress(httpx2.TransportError):
        async with httpx2.AsyncClient(timeout=10, auth=auth) as http:
            await http.post(str(server.revocation_endpoint), data=form)


def signed_in_line(credential: Credential) -> str:
    """`signed in to URL as alice (token expires 14:05, refreshed automatically)`."""
    who = f" as {credential.user}" if credential.user else ""
    if credential.expires_at is None:
        when = "a token with no expiry known here"
    else:
        local = time.localtime(credential.expires_at)
        same_day = time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d")
        when = "token expires " + time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", local)
        renewal = "refreshed automatically" if credential.tokens.refresh_token else "sign in again then"
        when += f", {renewal}"
    return f"signed in to {credential.url}{who} ({when})"
