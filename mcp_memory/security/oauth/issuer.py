"""The identity provider this server trusts: its metadata and its signing keys, fetched and cached.

Metadata is discovered once, the way MCP clients discover it: RFC 8414 (path inserted after the
well-known prefix), then OpenID Connect discovery (path appended, as Entra ID serves it), and the
document must name the configured issuer (RFC 8414 section 3.3), or it is not used.

Keys (JWKS) are kept for `jwks_cache_seconds`. A token whose `kid` is not among them triggers one
re-read, at most once per `jwks_refetch_seconds` however many such tokens arrive, so the provider's key
rotation works at once and a flood of made-up kids costs it nothing. All fetches are async and bounded
in time (`security/http.py`, whose client the issuer is given or makes); when the provider cannot be
reached, keys already held keep working.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio

from mcp_memory.config import SecuritySettings
from mcp_memory.errors import BackendUnavailableError, ConfigError
from mcp_memory.security.http import Http, Unreachable

log = logging.getLogger(__name__)


class InvalidToken(Exception):
    """A bearer token this server does not accept; the message says why (never the token itself)."""


class IssuerUnavailable(BackendUnavailableError):
    """The identity provider's metadata or keys could not be read (and none are held)."""


@dataclass(frozen=True)
class IssuerMetadata:
    issuer: str
    jwks_uri: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    introspection_endpoint: str | None = None

    @classmethod
    def of(cls, document: dict[str, Any]) -> IssuerMetadata:
        def text(name: str) -> str | None:
            value = document.get(name)
            return value if isinstance(value, str) and value else None

        return cls(
            issuer=str(document.get("issuer", "")),
            jwks_uri=text("jwks_uri"),
            authorization_endpoint=text("authorization_endpoint"),
            token_endpoint=text("token_endpoint"),
            introspection_endpoint=text("introspection_endpoint"),
        )


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP clients try them."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [f"{origin}/.well-known/oauth-authorization-server{path}"]
    urls.append(f"{origin}{path}/.well-known/openid-configuration")
    if path:
        urls.append(f"{origin}/.well-known/openid-configuration{path}")
    return urls


def same_issuer(a: str, b: str) -> bool:
    """Issuers compare as strings (RFC 8414), a trailing slash on a path-less issuer aside."""
    return a == b or (a.rstrip("/") == b.rstrip("/") and urlsplit(a).path in ("", "/"))


async def fetch_json(http: Http, url: str) -> dict[str, Any]:
    """GET a JSON object, bounded in time; IssuerUnavailable on any failure."""
    try:
        response = await http.get(url, headers={"Accept": "application/json"})
    except Unreachable as e:
        cause = e.cause
        raise IssuerUnavailable(
            f"the identity provider did not answer at {url}: {str(cause) or type(cause).__name__}"
        ) from cause
    if response.status_code != 200:
        raise IssuerUnavailable(f"the identity provider answered {response.status_code} at {url}")
    try:
        document = response.json()
    except ValueError as e:
        raise IssuerUnavailable(f"the identity provider's answer at {url} is not JSON") from e
    if not isinstance(document, dict):
        raise IssuerUnavailable(f"the identity provider's answer at {url} is not a JSON object")
    return document


class Issuer:
    """The configured authorization server: its metadata and its signing keys, read lazily."""

    def __init__(
        self,
        security: SecuritySettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        http: Http | None = None,
    ) -> None:
        if security.authorization_server is None:
            raise ConfigError("security.authorization_server is not set")
        self.url = security.authorization_server
        self.http = http or Http()  # every request to the provider, the explorer's code exchange too
        self._jwks_uri = security.jwks_uri
        self._cache_seconds = security.jwks_cache_seconds
        self._refetch_seconds = security.jwks_refetch_seconds
        self._clock = clock
        self._metadata: IssuerMetadata | None = None
        self._keys: dict[str, dict[str, Any]] = {}  # kid ("" when a key has none) -> JWK
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()  # one key fetch at a time
        self._metadata_lock = anyio.Lock()
        self.fetches = 0  # JWKS reads so far (the refetch floor is tested on it)

    async def metadata(self) -> IssuerMetadata:
        if self._metadata is None:
            async with self._metadata_lock:
                if self._metadata is None:
                    self._metadata = await self._discover()
        return self._metadata

    async def _discover(self) -> IssuerMetadata:
        failures: list[str] = []
        for url in discovery_urls(self.url):
            try:
                found = IssuerMetadata.of(await fetch_json(self.http, url))
            except IssuerUnavailable as e:
                failures.append(str(e))
                continue
            if not same_issuer(found.issuer, self.url):
                raise IssuerUnavailable(
                    f"the metadata at {url} names issuer {found.issuer!r}, not the configured "
                    f"security.authorization_server {self.url!r}"
                )
            log.info("identity provider %s: metadata from %s", self.url, url)
            return found
        raise IssuerUnavailable("no OAuth or OpenID metadata found for the issuer: " + "; ".join(failures))

    @property
    def key_count(self) -> int:
        return len(self._keys)

    async def prefetch(self) -> None:
        """Read the metadata and the keys now (at start), so a wrong issuer shows in the log at once."""
        await self.metadata()
        if self._fetched_at is None:
            await self._refresh(since=None, quietly=False)

    async def key(self, kid: str | None) -> dict[str, Any]:
        """The signing key (JWK) with this kid. InvalidToken when the issuer has none such."""
        now = self._clock()
        stale = self._fetched_at is None or now - self._fetched_at >= self._cache_seconds
        if stale:
            await self._refresh(since=self._fetched_at, quietly=self._fetched_at is not None)
        found = self._find(kid)
        if found is None and not stale and self._may_refetch(self._clock()):
            await self._refresh(since=self._fetched_at, quietly=True)  # a rotated key, maybe
            found = self._find(kid)
        if found is None:
            raise InvalidToken(
                f"the token's signing key (kid {kid!r}) is not one of the issuer's keys"
                if kid
                else "the token names no signing key (kid) and the issuer has more than one"
            )
        return found

    def _may_refetch(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= self._refetch_seconds

    def _find(self, kid: str | None) -> dict[str, Any] | None:
        if kid:
            return self._keys.get(kid)
        return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    async def _refresh(self, *, since: float | None, quietly: bool) -> None:
        async with self._lock:
            if self._fetched_at != since:  # another request re-read the keys while we waited
                return
            try:
                keys = await self._read_keys()
            except IssuerUnavailable:
                if not quietly or not self._keys:
                    raise
                log.warning(
                    "could not re-read the identity provider's keys; using the ones held", exc_info=True
                )
                self._fetched_at = self._clock()  # and wait the floor before trying again
                return
            self._keys = keys
            self._fetched_at = self._clock()

    async def _read_keys(self) -> dict[str, dict[str, Any]]:
        uri = self._jwks_uri or (await self.metadata()).jwks_uri
        if uri is None:
            raise IssuerUnavailable("the issuer's metadata names no jwks_uri; set security.jwks_uri")
        self.fetches += 1
        document = await fetch_json(self.http, uri)
        listed = document.get("keys")
        if not isinstance(listed, list):
            raise IssuerUnavailable(f"the JWKS at {uri} has no keys list")
        keys: dict[str, dict[str, Any]] = {}
        for jwk in listed:
            if isinstance(jwk, dict) and jwk.get("use", "sig") == "sig" and "d" not in jwk:
                keys[str(jwk.get("kid", ""))] = jwk
        log.info("identity provider %s: %d signing key(s) from %s", self.url, len(keys), uri)
        return keys
