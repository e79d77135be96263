"""The verifiers of bearer tokens: static hashed tokens, JWT access tokens, opaque tokens by introspection.

Every verifier answers the same `AccessToken` (the MCP SDK's type), whose `subject` is the user id and
whose `scopes` are ours (read, write, admin), or raises InvalidToken with the reason, worded for a log
and a client (never the token). `TokenVerifier` tries them in turn: a configured static token first (a
hash lookup), then a JWT when an authorization server is configured, then introspection for anything
else when that is configured.

JWTs (RFC 9068) are verified locally with PyJWT: the header's `alg` must be in the allow-list
(asymmetric only: `none` and HMAC can never be configured, so a token "signed" with the public key as
an HMAC secret is refused before any key is looked at); the key comes from the issuer's JWKS by `kid`;
`iss` must be the issuer (or a configured one); `aud` must be this server's resource URL or a configured
audience (RFC 8707: a token minted for another resource is refused, the token-passthrough defence);
`exp` is required and `exp`/`nbf`/`iat` are checked with `clock_skew_seconds` of leeway.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from collections.abc import Mapping
from typing import Any

import anyio
import jwt
from mcp.server.auth.provider import AccessToken

from mcp_memory.config import Settings, load_tokens
from mcp_memory.errors import ConfigError
from mcp_memory.security.http import Http, Unreachable
from mcp_memory.security.oauth.claims import ClaimRules
from mcp_memory.security.oauth.issuer import (
    InvalidToken,
    Issuer,
    IssuerUnavailable,
    same_issuer,
)
from mcp_memory.security.principals import DISPLAY_NAME, GROUPS, display_name_of
from mcp_memory.security.static_tokens import HashedTokenVerifier

log = logging.getLogger(__name__)

MAX_TOKEN_CHARS = 16_384  # far above any real access token; a larger one is refused unread


def resource_of(settings: Settings) -> str | None:
    """This server's resource identifier: the configured URL without a trailing slash."""
    url = settings.security.resource_url
    return url.rstrip("/") if url else None


class JwtVerifier:
    """JWT access tokens of the configured issuer, checked locally with its published keys."""

    def __init__(self, settings: Settings, issuer: Issuer) -> None:
        security = settings.security
        resource = resource_of(settings)
        self.issuer = issuer
        self.rules = ClaimRules.of(security)
        self.algorithms = frozenset(security.algorithms)
        self.audiences = [a for a in (resource, *security.audiences) if a]
        self.leeway = security.clock_skew_seconds
        self._issuers = list(security.issuers)

    async def verify(self, token: str) -> AccessToken:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as e:
            raise InvalidToken("the token is not a well-formed JWT") from e
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidToken(
                f"tokens signed with {alg!r} are not accepted (allowed: {', '.join(sorted(self.algorithms))})"
            )
        kid = header.get("kid")
        jwk = await self.issuer.key(kid if isinstance(kid, str) else None)
        if jwk.get("alg") not in (None, alg):
            raise InvalidToken(f"the token's alg {alg} is not its key's alg {jwk.get('alg')}")
        try:
            key = jwt.PyJWK(jwk, algorithm=alg)
        except jwt.PyJWTError as e:
            raise InvalidToken(f"the issuer's key {kid!r} cannot verify {alg} signatures") from e
        claims = self._decode(token, key, alg, await self._accepted_issuers())
        return self._access_token(token, claims)

    async def _accepted_issuers(self) -> list[str]:
        if self._issuers:
            return self._issuers
        return [(await self.issuer.metadata()).issuer]

    def _decode(self, token: str, key: jwt.PyJWK, alg: str, issuers: list[str]) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audiences,
                issuer=issuers,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError as e:
            raise InvalidToken("the token has expired") from e
        except jwt.ImmatureSignatureError as e:
            raise InvalidToken("the token is not valid yet (nbf or iat is in the future)") from e
        except jwt.InvalidAudienceError as e:
            raise InvalidToken(
                "the token was issued for another resource (its aud is not this server)"
            ) from e
        except jwt.InvalidIssuerError as e:
            raise InvalidToken("the token was issued by another issuer") from e
        except jwt.InvalidSignatureError as e:
            raise InvalidToken("the token's signature does not verify") from e
        except jwt.MissingRequiredClaimError as e:
            raise InvalidToken(f"the token has no {e.claim} claim") from e
        except jwt.PyJWTError as e:
            raise InvalidToken(f"the token is not valid: {e}") from e

    def _access_token(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        return access_token(token, claims, self.rules)


def access_token(token: str, claims: Mapping[str, Any], rules: ClaimRules) -> AccessToken:
    """The SDK's AccessToken for verified claims: our user id as subject, our scope names."""
    client = claims.get("client_id") or claims.get("azp") or claims.get("appid") or "oauth-client"
    audience = claims.get("aud")
    exp = claims.get("exp")
    return AccessToken(
        token="sha256:" + hashlib.sha256(token.encode()).hexdigest()[:12],  # never the secret itself
        client_id=str(client),
        subject=rules.user_id(claims),
        scopes=sorted(rules.scopes(claims)),
        expires_at=int(exp) if isinstance(exp, int | float) else None,
        resource=audience if isinstance(audience, str) else None,
        claims={
            "iss": claims.get("iss"),
            GROUPS: rules.groups(claims),
            DISPLAY_NAME: display_name_of(claims),
        },
    )


class IntrospectionVerifier:
    """Opaque tokens, asked of the issuer's RFC 7662 endpoint; answers are kept briefly by token hash."""

    CACHE_SECONDS = 60.0

    def __init__(self, settings: Settings, issuer: Issuer | None, *, http: Http | None = None) -> None:
        security = settings.security
        if security.introspection_client_id is None:
            raise ConfigError("introspection needs security.introspection_client_id")
        self.issuer = issuer
        self.http = http or (issuer.http if issuer is not None else Http())
        self.endpoint = security.introspection_endpoint
        self.rules = ClaimRules.of(security)
        self.audiences = [a for a in (resource_of(settings), *security.audiences) if a]
        secret = security.introspection_client_secret
        credentials = f"{security.introspection_client_id}:{secret.get_secret_value() if secret else ''}"
        self._authorization = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._seen: dict[str, tuple[float, AccessToken]] = {}

    async def verify(self, token: str) -> AccessToken:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._seen.get(key)
        now = time.monotonic()
        fresh = cached is not None and now - cached[0] < self.CACHE_SECONDS
        if cached is not None and fresh and (cached[1].expires_at or float("inf")) > time.time():
            return cached[1]
        claims = await self._introspect(token)
        if claims.get("active") is not True:
            raise InvalidToken("the issuer says the token is not active")
        exp = claims.get("exp")
        if isinstance(exp, int | float) and exp < time.time():
            raise InvalidToken("the token has expired")
        audience = claims.get("aud")
        listed = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if listed and not set(listed) & set(self.audiences):
            raise InvalidToken("the token was issued for another resource (its aud is not this server)")
        issuer = claims.get("iss")
        if issuer is not None and self.issuer is not None and not same_issuer(str(issuer), self.issuer.url):
            raise InvalidToken("the token was issued by another issuer")
        if "sub" not in claims and isinstance(claims.get("client_id"), str):
            # A client-credentials token names no user: the client is the principal, as RFC 9068 puts
            # the client id in a JWT's sub.
            claims = {**claims, "sub": claims["client_id"]}
        verified = access_token(token, claims, self.rules)
        if len(self._seen) > 10_000:
            self._seen.clear()
        self._seen[key] = (now, verified)
        return verified

    async def _introspect(self, token: str) -> dict[str, Any]:
        endpoint = self.endpoint
        if endpoint is None and self.issuer is not None:
            endpoint = (await self.issuer.metadata()).introspection_endpoint
        if endpoint is None:
            raise IssuerUnavailable("no introspection endpoint: set security.introspection_endpoint")
        try:
            response = await self.http.post(
                endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                headers={"Authorization": self._authorization, "Accept": "application/json"},
            )
        except Unreachable as e:
            raise IssuerUnavailable(f"the introspection endpoint did not answer: {e.cause}") from e.cause
        if response.status_code != 200:
            raise IssuerUnavailable(f"the introspection endpoint answered {response.status_code}")
        try:
            answer = response.json()
        except ValueError as e:
            raise IssuerUnavailable("the introspection endpoint's answer is not JSON") from e
        return answer if isinstance(answer, dict) else {}


class TokenVerifier:
    """Every configured way in, one principal model: static tokens, then JWTs, then introspection."""

    def __init__(
        self,
        static: HashedTokenVerifier | None,
        jwt_verifier: JwtVerifier | None,
        introspection: IntrospectionVerifier | None,
    ) -> None:
        self.static = static
        self.jwt = jwt_verifier
        self.introspection = introspection

    @property
    def oauth(self) -> bool:
        return self.jwt is not None or self.introspection is not None

    async def verify(self, token: str) -> AccessToken:
        """The verified token, or InvalidToken (IssuerUnavailable when the issuer cannot be asked)."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise InvalidToken(f"the token is empty or longer than {MAX_TOKEN_CHARS} characters")
        if self.static is not None:
            found = await self.static.verify_token(token)
            if found is not None:
                return found
        if self.jwt is not None and token.count(".") == 2:
            return await self.jwt.verify(token)
        if self.introspection is not None:
            return await self.introspection.verify(token)
        if self.jwt is not None:
            raise InvalidToken("the token is neither a configured token nor a JWT")
        raise InvalidToken("the bearer token matches no configured token, or it has expired")

    async def prefetch(self, seconds: float = 5.0) -> None:
        """Discover the issuer and read its keys before serving, within `seconds`; a failure is logged
        (tokens are verified all the same once the provider answers), never fatal."""
        if self.jwt is None:
            return
        issuer = self.jwt.issuer
        with anyio.move_on_after(seconds) as waited:
            try:
                await issuer.prefetch()
            except IssuerUnavailable as e:
                log.warning("the identity provider %s cannot be read yet: %s", issuer.url, e)
                return
        if waited.cancelled_caught:
            log.warning("the identity provider %s did not answer within %g s", issuer.url, seconds)
        else:
            log.info(
                "identity provider %s: metadata and %d signing key(s) read", issuer.url, issuer.key_count
            )

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's TokenVerifier protocol: None for any token refused."""
        try:
            return await self.verify(token)
        except (InvalidToken, IssuerUnavailable) as e:
            log.info("refused a bearer token: %s", e)
            return None


def build_verifier(settings: Settings, *, http: Http | None = None) -> TokenVerifier | None:
    """The verifier for these settings, or None when no way in is configured (no authentication).
    `http` carries every request to the identity provider (by default, a client per request)."""
    security = settings.security
    entries = load_tokens(security)
    static = HashedTokenVerifier(entries) if entries else None
    http = http or Http()
    issuer = Issuer(security, http=http) if security.authorization_server else None
    if issuer is not None and resource_of(settings) is None:
        raise ConfigError(
            "security.authorization_server needs security.resource_url: this server's public MCP URL, "
            "e.g. MCP_MEMORY_SECURITY__RESOURCE_URL=https://memory.example.com/mcp (tokens must be issued for it)"
        )
    jwt_verifier = JwtVerifier(settings, issuer) if issuer is not None else None
    introspection = (
        IntrospectionVerifier(settings, issuer, http=http) if security.introspection_client_id else None
    )
    if static is None and jwt_verifier is None and introspection is None:
        return None
    return TokenVerifier(static, jwt_verifier, introspection)
