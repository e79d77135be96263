"""Who is calling: principals and their scopes.

Two ways in on SSE and streamable HTTP, one principal model: static tokens configured as SHA-256
hashes (`static_tokens.py`), and access tokens of the organisation's identity provider (`oauth/`). The
guard in front of the MCP endpoints (`mcp/middleware/oauth.py`) verifies each request's token and keeps the
resulting `AccessToken` where the SDK keeps it (a context variable); `current_principal()` reads it
back wherever a tool, resource or prompt runs. On stdio there is no token, and the principal is the
configured single user.

Scopes: `read` (see one's own memories), `write` (change them), `admin` (forget any user), and beside
them `metrics` (scrape /metrics, nothing else). A broader scope covers a narrower one: write includes
read, admin includes both. A caller without a token
(stdio, a loopback address, or behind an authenticating proxy) may read and write the configured
user's memories but is never an admin: whoever can reach an unauthenticated endpoint is not thereby
trusted with every user's data. Admin work needs an admin token, or the `mcp-memory forget-user`
command run by someone with access to the backends.
Which scope each tool, resource and prompt needs is decided before it runs by the scope guard
(`mcp/middleware/scopes.py`); over HTTP the guard in front has already refused such a request with a 403
challenge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from mcp_memory.config import Settings
from mcp_memory.errors import PermissionDeniedError

READ, WRITE, ADMIN = "read", "write", "admin"
METRICS = "metrics"  # reads /metrics and nothing else; admin may too (mcp/routes.py)
ALL_SCOPES = frozenset({READ, WRITE, ADMIN, METRICS})
TOKENLESS_SCOPES = frozenset({READ, WRITE})  # never admin: see the module docstring
LEVEL = {READ: 1, WRITE: 2, ADMIN: 3}
GROUPS = "groups"  # where a verified AccessToken's claims keep the holder's groups (spaces' group: members)
# Where they keep the holder's display name (from the identity provider's name, preferred_username or email
# claim): what a teammate's recall says a memory of a shared space came from (service/capture.py).
DISPLAY_NAME = "display_name"
NAME_CLAIMS = ("name", "preferred_username", "email")
DISPLAY_CHARS = 80


@dataclass(frozen=True)
class Principal:
    """The identity every store call is scoped by."""

    user_id: str
    scopes: frozenset[str]
    name: str
    authenticated: bool = True  # False: no token (stdio, loopback, behind a proxy)
    groups: frozenset[str] = frozenset()  # from the token: what a space's "group:<id>" members match
    display_name: str = ""  # how teammates see who wrote a memory: the IdP's name for them, else user_id

    @property
    def shown_as(self) -> str:
        return self.display_name or self.user_id

    def may(self, scope: str) -> bool:
        # A broader scope covers a narrower one: admin > write > read.
        return any(LEVEL.get(held, 0) >= LEVEL[scope] for held in self.scopes)


def current_principal(settings: Settings) -> Principal:
    """The authenticated principal of this request; on stdio (no token) the configured user."""
    return principal_of(get_access_token(), settings)


def principal_of(token: AccessToken | None, settings: Settings) -> Principal:
    """The principal a verified token stands for; without one, the configured user (never an admin)."""
    if token is None:
        return Principal(user_id=settings.user_id, scopes=TOKENLESS_SCOPES, name="local", authenticated=False)
    if not token.subject:
        raise PermissionDeniedError("this credential names no user; ask the operator for a user token")
    claims = token.claims or {}
    groups = claims.get(GROUPS) or []
    shown = claims.get(DISPLAY_NAME)
    return Principal(
        user_id=token.subject,
        scopes=frozenset(token.scopes),
        name=token.client_id,
        groups=frozenset(g for g in groups if isinstance(g, str)),
        display_name=shown if isinstance(shown, str) else "",
    )


def display_name_of(claims: Mapping[str, Any]) -> str:
    """The holder's name as an identity provider's token gives it (the first of NAME_CLAIMS that is a
    non-empty string), on one line and short; "" when it gives none."""
    for claim in NAME_CLAIMS:
        value = claims.get(claim)
        if isinstance(value, str):
            shown = " ".join("".join(c if c.isprintable() else " " for c in value).split())
            if shown:
                return shown[:DISPLAY_CHARS]
    return ""
