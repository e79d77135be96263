"""A token issuer of the tests' own: local keys, published as OpenID metadata and a JWKS over HTTP.

It is not an authorization server (the real one is oidc-provider: tests/services/oidc_server.py). It
signs the tokens a real one never would, shaped by hand: expired, for another audience, with an
unknown kid, "signed" with alg none or with the public key as an HMAC secret, Entra ID v1 and v2
shapes. Its metadata and keys are real HTTP documents that the server under test fetches, and it
counts the JWKS requests, so the refetch floor can be checked from outside.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_memory.mcp.transports import listen_socket


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SigningKey:
    """One private key and its public JWK, with a random kid."""

    def __init__(self, kind: str = "RSA") -> None:
        self.kid = secrets.token_hex(8)
        self.private: Any
        if kind == "RSA":
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.alg = "RS256"
            public = jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        else:
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.alg = "ES256"
            public = jwt.algorithms.ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        self.jwk: dict[str, Any] = {**public, "kid": self.kid, "use": "sig"}

    def public_pem(self) -> bytes:
        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


class LocalIssuer:
    """Serves `<base><path>/.well-known/openid-configuration` and `/jwks`; signs tokens on request."""

    def __init__(self, path: str = "") -> None:
        self.path = path  # e.g. "/<tenant>/v2.0", as Entra ID's issuers have
        self.keys = [SigningKey("RSA"), SigningKey("EC")]
        self.jwks_requests = 0
        self.base = ""

    @property
    def url(self) -> str:
        return self.base + self.path

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": f"{self.base}/jwks",
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "response_types_supported": ["code"],
        }

    def rotate(self) -> SigningKey:
        """A new RSA key replaces the first: tokens signed with the old one no longer verify."""
        self.keys[0] = SigningKey("RSA")
        return self.keys[0]

    def claims(self, audience: str, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {
            "iss": self.url,
            "sub": "ann",
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "scope": "read write",
            "client_id": "test-client",
            "jti": secrets.token_hex(8),
        }
        return {k: v for k, v in (base | overrides).items() if v is not None}

    def mint(self, claims: dict[str, Any], *, key: SigningKey | None = None, **header: Any) -> str:
        """A token signed by `key` (the RSA key by default) with its kid, plus any header overrides."""
        key = key or self.keys[0]
        headers = {"kid": key.kid, "typ": "at+jwt"} | header
        return jwt.encode(claims, key.private, algorithm=key.alg, headers=headers)

    @staticmethod
    def unsigned(claims: dict[str, Any], **header: Any) -> str:
        """alg none: a header and a payload, no signature."""
        head = _b64(json.dumps({"alg": "none", "typ": "JWT"} | header).encode())
        return f"{head}.{_b64(json.dumps(claims).encode())}."

    def hmac_with_public_key(self, claims: dict[str, Any]) -> str:
        """HS256 keyed with the issuer's public key: the classic algorithm-confusion forgery."""
        key = self.keys[0]
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": key.kid}).encode())
        body = _b64(json.dumps(claims).encode())
        mac = hmac.new(key.public_pem(), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(mac)}"

    def app(self) -> Starlette:
        async def metadata(_: Request) -> JSONResponse:
            return JSONResponse(self.metadata())

        async def jwks(_: Request) -> JSONResponse:
            self.jwks_requests += 1
            return JSONResponse({"keys": [k.jwk for k in self.keys]})

        return Starlette(
            routes=[
                Route(f"{self.path}/.well-known/openid-configuration", metadata),
                Route("/jwks", jwks),
            ]
        )


@contextmanager
def local_issuer(path: str = "") -> Iterator[LocalIssuer]:
    """A LocalIssuer served on 127.0.0.1 (a port the OS picks) from a thread, until the block ends."""
    issuer = LocalIssuer(path)
    sock = listen_socket("127.0.0.1", 0)
    issuer.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(issuer.app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
