"""RFC 6750 over HTTP: the bearer token a request carries, and the challenges this server answers with.

`bearer_token` reads `Authorization: Bearer <token>` (the scheme case-insensitive). `Challenges` makes
the 401 and 403 answers with their `WWW-Authenticate` header (RFC 6750 section 3, RFC 9728 section
5.1): `resource_metadata` pointing to the protected-resource metadata document when an identity
provider is configured, and `scope` naming what the client should ask for. The guard in front of the
MCP endpoints (`mcp/middleware/oauth.py`), the /metrics endpoint and the explorer (`ui/guard.py`) answer
with the same challenges.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import JSONResponse

from mcp_memory.config import Settings
from mcp_memory.security.oauth.claims import BASIC_SCOPES, ClaimRules, covering
from mcp_memory.security.oauth.tokens import resource_of

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(resource: str) -> str:
    """RFC 9728 section 3.1: the well-known path goes between the host and the resource's path."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"


class Challenges:
    """The WWW-Authenticate values of this server (RFC 6750 section 3, RFC 9728 section 5.1)."""

    def __init__(self, settings: Settings) -> None:
        self.rules = ClaimRules.of(settings.security)
        resource = resource_of(settings)
        advertised = resource is not None and settings.security.authorization_server is not None
        self.metadata_url = metadata_url(resource) if advertised and resource else None

    def header(
        self, scopes: tuple[str, ...], error: str | None = None, description: str | None = None
    ) -> str:
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
            if description:
                parts.append(f'error_description="{_quotable(description)}"')
        if self.metadata_url is not None:
            parts.append(f'resource_metadata="{self.metadata_url}"')
        parts.append(f'scope="{self.rules.requested(scopes)}"')
        return "Bearer " + ", ".join(parts)

    def missing(self) -> JSONResponse:
        return self._response(401, self.header(BASIC_SCOPES), "unauthorized", "a bearer token is required")

    def invalid(self, reason: str) -> JSONResponse:
        return self._response(
            401, self.header(BASIC_SCOPES, "invalid_token", reason), "invalid_token", reason
        )

    def insufficient(self, needed: str, what: str) -> JSONResponse:
        scopes = covering(needed)
        reason = f"{what} needs the {self.rules.requested((needed,))} scope"
        header = self.header(scopes, "insufficient_scope", reason)
        return self._response(403, header, "insufficient_scope", reason)

    @staticmethod
    def _response(status: int, header: str, error: str, description: str) -> JSONResponse:
        return JSONResponse(
            {"error": error, "error_description": description},
            status_code=status,
            headers={"WWW-Authenticate": header, "Cache-Control": "no-store"},
        )


def _quotable(text: str) -> str:
    """A quoted-string value (RFC 7230) of printable ASCII: no quote, backslash or control character."""
    return "".join(c if 0x20 <= ord(c) < 0x7F and c not in '"\\' else "'" for c in text)


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of an `Authorization: Bearer` header (scheme case-insensitive), or None."""
    for name, value in headers:
        if name.lower() == b"authorization":
            text = value.decode("latin-1")
            scheme, _, token = text.partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None
