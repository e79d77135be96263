"""The credential this user holds for a memory server (`mcp-memory login URL`): kept for this user only,
refreshed before it expires, handed to whoever talks to the server.

Where it is kept: in the OS keyring (the `keyring` library: macOS Keychain, Windows Credential Manager,
the Secret Service on Linux desktops) when there is a usable one, else in `credential.json` (0600) in the
server's state directory (remote/places.py). It holds the tokens, who they sign in, the client the
authorization server registered for this machine, and the two metadata documents found at sign-in (the
server's protected-resource metadata, its authorization server's metadata), so a refresh needs no
discovery. Beside it, on every change, `token.json`: the access token alone, which the hooks read
(they cannot open a keyring in a tenth of a second).

The API the others use:
- `access_token(data_dir, url)`: a valid access token, refreshed through the refresh token when it
  expires within `margin` seconds; `SignedOut` when there is none or the authorization server refuses.
  `httpx2.TransportError` when the authorization server cannot be reached: try again later.
- `http_auth(data_dir, url)`: the same as an `httpx2.Auth`, which also refreshes once on a 401 and then
  raises `SignedOut` instead of starting a sign-in (a bridge has no browser).

The refresh itself is the MCP SDK's (`OAuthClientProvider`: the token request with the client's
authentication and the RFC 8707 resource, the refresh token carried forward when the server does not
rotate it). Refreshes are one at a time across this user's processes (a file lock), each reading the
credential again first: authorization servers that rotate refresh tokens revoke the whole grant when a
used one comes back, which two processes refreshing at once would do.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import httpx2
import jwt
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import BaseModel, ValidationError

from mcp_memory.remote import places
from mcp_memory.remote.discovery import oauth_error

log = logging.getLogger(__name__)

KEYRING_SERVICE = "mcp-memory"
REFRESH_TIMEOUT = 30.0  # seconds for the token request


class SignedOut(Exception):
    """No usable credential for the server: never signed in, signed out, or the refresh was refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Credential(BaseModel):
    """Everything kept for one server, as one document (one keyring entry or one file)."""

    url: str
    tokens: OAuthToken
    expires_at: float | None = None  # epoch seconds; None: no expiry known (an administrator's token)
    user: str | None = None  # who the token signs in, for display
    client: OAuthClientInformationFull | None = None  # None: a token given on stdin, no client
    resource_metadata: ProtectedResourceMetadata | None = None
    server_metadata: OAuthMetadata | None = None  # the authorization server's

    def fresh(self, margin: float, now: float | None = None) -> bool:
        return self.expires_at is None or self.expires_at - margin > (now or time.time())

    def cached(self) -> places.CachedToken:
        return places.CachedToken(self.tokens.access_token, self.expires_at, self.user)


def mcp_url(url: str) -> str:
    return places.normalized(url) + "/mcp"


def sign_in_hint(url: str) -> str:
    return f"run `mcp-memory login {places.normalized(url)}`"


def claims_of(access_token: str) -> dict[str, Any]:
    """The claims of a JWT access token, read WITHOUT checking its signature: only to show who signed
    in and until when (the server checks the token; this machine only displays). {} for other tokens."""
    try:
        claims = jwt.decode(access_token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return {}
    return claims if isinstance(claims, dict) else {}


def user_of(claims: dict[str, Any]) -> str | None:
    for name in ("name", "preferred_username", "email", "upn", "sub"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def credential_for(
    url: str,
    tokens: OAuthToken,
    *,
    client: OAuthClientInformationFull | None = None,
    resource_metadata: ProtectedResourceMetadata | None = None,
    server_metadata: OAuthMetadata | None = None,
    previous_user: str | None = None,
) -> Credential:
    """The credential for newly issued `tokens`: their expiry from expires_in (else the JWT's exp), the
    user from the JWT's claims (else the one signed in before)."""
    claims = claims_of(tokens.access_token)
    expires_at: float | None = None
    if tokens.expires_in is not None:
        expires_at = time.time() + int(tokens.expires_in)
    elif isinstance(claims.get("exp"), (int, float)):
        expires_at = float(claims["exp"])
    return Credential(
        url=places.normalized(url),
        tokens=tokens,
        expires_at=expires_at,
        user=user_of(claims) or previous_user,
        client=client,
        resource_metadata=resource_metadata,
        server_metadata=server_metadata,
    )


# --- where it is kept -------------------------------------------------------------------------------


def usable_keyring() -> Any | None:
    """The OS keyring backend, or None when there is none that keeps anything (keyring's fail and null
    backends, or a chain of nothing: a server, a container, CI)."""
    import keyring
    from keyring.backends import chainer, fail, null

    backend = keyring.get_keyring()
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    return backend


def _keyring_read(url: str) -> str | None:
    backend = usable_keyring()
    if backend is None:
        return None
    try:
        found = backend.get_password(KEYRING_SERVICE, places.normalized(url))
    except Exception as e:  # a backend raises its own platform's errors (D-Bus, Win32, Keychain)
        log.warning("the keyring could not be read (%s): using %s", e, "credential.json")
        return None
    return found if isinstance(found, str) else None


def _keyring_write(url: str, document: str) -> bool:
    backend = usable_keyring()
    if backend is None:
        return False
    try:
        backend.set_password(KEYRING_SERVICE, places.normalized(url), document)
    except Exception as e:  # as in _keyring_read; the 0600 file is then the place
        log.warning("the keyring refused the credential (%s): keeping it in credential.json", e)
        return False
    return True


def _keyring_delete(url: str) -> bool:
    backend = usable_keyring()
    if backend is None:
        return False
    import keyring.errors

    try:
        backend.delete_password(KEYRING_SERVICE, places.normalized(url))
    except keyring.errors.PasswordDeleteError:
        return False
    return True


def _parse(document: str | dict[str, Any] | None) -> Credential | None:
    if document is None:
        return None
    try:
        if isinstance(document, str):
            return Credential.model_validate_json(document)
        return Credential.model_validate(document)
    except ValidationError:
        return None


def _load_now(data_dir: Path, url: str) -> Credential | None:
    return _parse(_keyring_read(url)) or _parse(places.read_json(places.credential_file(data_dir, url)))


def _save_now(data_dir: Path, url: str, credential: Credential) -> None:
    document = credential.model_dump_json(exclude_none=True)
    if _keyring_write(url, document):
        with contextlib.suppress(OSError):  # an older copy from before there was a keyring
            places.credential_file(data_dir, url).unlink()
    else:
        places.write_json(places.credential_file(data_dir, url), json.loads(document))
    places.cache_token(data_dir, url, credential.cached())


def _forget_now(data_dir: Path, url: str) -> bool:
    found = _keyring_delete(url)
    with contextlib.suppress(OSError):
        places.credential_file(data_dir, url).unlink()
        found = True
    if places.token_file(data_dir, url).exists():
        found = True
    places.forget_token(data_dir, url)
    return found


async def load_credential(data_dir: Path, url: str) -> Credential | None:
    return await anyio.to_thread.run_sync(_load_now, data_dir, url)


async def save_credential(data_dir: Path, url: str, credential: Credential) -> None:
    """Kept (keyring, else credential.json), and token.json rewritten for the hooks."""
    await anyio.to_thread.run_sync(_save_now, data_dir, url, credential)


async def forget_credential(data_dir: Path, url: str) -> bool:
    """The keyring entry, credential.json and token.json removed; whether there was anything."""
    return await anyio.to_thread.run_sync(_forget_now, data_dir, url)


class StoredCredential:
    """The SDK's `TokenStorage` over one stored credential: what the SDK's refresh reads and writes."""

    def __init__(self, data_dir: Path, credential: Credential) -> None:
        self.data_dir = data_dir
        self.credential = credential

    async def get_tokens(self) -> OAuthToken | None:
        return self.credential.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        old = self.credential
        self.credential = credential_for(
            old.url,
            tokens,
            client=old.client,
            resource_metadata=old.resource_metadata,
            server_metadata=old.server_metadata,
            previous_user=old.user,
        )
        await save_credential(self.data_dir, old.url, self.credential)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.credential.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.credential = self.credential.model_copy(update={"client": client_info})
        await save_credential(self.data_dir, self.credential.url, self.credential)


# --- a valid token ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _refreshing_alone(data_dir: Path, url: str) -> AsyncIterator[None]:
    """One refresh at a time among this user's processes (flock on `<state dir>/credential.lock`)."""
    import fcntl

    def locked() -> BinaryIO:
        path = places.private(places.state_dir(data_dir, url)) / "credential.lock"
        lock = open(path, "a+b")  # noqa: SIM115  # held open until the refresh is done, below
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        return lock

    lock = await anyio.to_thread.run_sync(locked)
    try:
        yield
    finally:
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        lock.close()


async def access_token(data_dir: Path, url: str, *, margin: float = 120) -> str:
    """A valid access token for the server at `url`, refreshed first when it expires within `margin`
    seconds (token.json rewritten). Raises SignedOut when there is no credential or the refresh is
    refused, httpx2.TransportError when the authorization server cannot be reached."""
    return await _valid_token(data_dir, url, margin, refused=None)


async def _valid_token(data_dir: Path, url: str, margin: float, refused: str | None) -> str:
    """`refused`: a token the server has just answered 401 to, refreshed whatever its expiry says."""
    credential = await load_credential(data_dir, url)
    if credential is None:
        raise SignedOut(f"not signed in to {places.normalized(url)}: {sign_in_hint(url)}")
    if credential.fresh(margin) and credential.tokens.access_token != refused:
        await _keep_cache(data_dir, url, credential)
        return credential.tokens.access_token
    async with _refreshing_alone(data_dir, url):
        credential = await load_credential(data_dir, url)  # another process may have refreshed it
        if credential is None:
            raise SignedOut(f"signed out of {places.normalized(url)}: {sign_in_hint(url)}")
        if credential.fresh(margin) and credential.tokens.access_token != refused:
            await _keep_cache(data_dir, url, credential)
            return credential.tokens.access_token
        return await _refresh(data_dir, credential, refused is not None)


async def _keep_cache(data_dir: Path, url: str, credential: Credential) -> None:
    if places.cached_token(data_dir, url) != credential.cached():
        await anyio.to_thread.run_sync(places.cache_token, data_dir, url, credential.cached())


async def _refresh(data_dir: Path, credential: Credential, was_refused: bool) -> str:
    """The SDK's refresh: its auth flow asked for a request's headers, as httpx2 would, sending the token
    request it makes first (the request itself is not sent)."""
    url = credential.url
    if not credential.tokens.refresh_token or credential.client is None:
        why = "the server refused the token" if was_refused else "the token expired"
        raise SignedOut(f"{why} and there is no refresh token for {url}: {sign_in_hint(url)}")
    storage = StoredCredential(data_dir, credential)
    provider = OAuthClientProvider(mcp_url(url), _REFRESH_ONLY, storage)
    context = provider.context
    context.protected_resource_metadata = credential.resource_metadata
    context.oauth_metadata = credential.server_metadata
    if credential.resource_metadata and credential.resource_metadata.authorization_servers:
        context.auth_server_url = str(credential.resource_metadata.authorization_servers[0])
    context.token_expiry_time = 1.0  # expired: the flow refreshes before anything else
    request = httpx2.Request("POST", mcp_url(url))
    refusal = ""
    async with httpx2.AsyncClient(timeout=REFRESH_TIMEOUT) as http:
        flow = provider.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while outgoing is not request:
                response = await http.send(outgoing)
                if response.status_code != 200:
                    refusal = ": ".join(part for part in oauth_error(response) if part)
                outgoing = await flow.asend(response)
        finally:
            await flow.aclose()
    if "Authorization" not in request.headers:
        raise SignedOut(
            f"the authorization server refused to renew the sign-in to {url} ({refusal or 'no token'}): "
            f"{sign_in_hint(url)}"
        )
    return storage.credential.tokens.access_token


# The SDK's provider wants the client's metadata; a refresh sends none of it (the registered client is
# in the credential), so this only satisfies the constructor.
_REFRESH_ONLY = OAuthClientMetadata(redirect_uris=None, grant_types=["refresh_token"])


class SignedInAuth(httpx2.Auth):
    """Bearer with the stored credential, refreshed ahead of expiry; on a 401, refreshed once and tried
    again; a second 401 (or a refused refresh) raises SignedOut rather than opening a browser."""

    def __init__(self, data_dir: Path, url: str, margin: float = 120) -> None:
        self.data_dir = data_dir
        self.url = url
        self.margin = margin
        self._held: Credential | None = None  # what this process last read, to spare the keyring

    async def _token(self, refused: str | None = None) -> str:
        held = self._held
        if held is not None and refused is None and held.fresh(self.margin):
            return held.tokens.access_token
        token = await _valid_token(self.data_dir, self.url, self.margin, refused)
        self._held = await load_credential(self.data_dir, self.url)
        return token

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != 401:
            return
        token = await self._token(refused=token)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            self._held = None
            raise SignedOut(f"{places.normalized(self.url)} refused the credential: {sign_in_hint(self.url)}")


def http_auth(data_dir: Path, url: str) -> httpx2.Auth:
    """For httpx2 clients that talk to the server (the MCP bridge): see SignedInAuth."""
    return SignedInAuth(data_dir, url)
