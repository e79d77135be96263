"""Who a verified token stands for and what it may do, read from its claims as configured.

User id: the values of `security.user_claims` joined by ":" (default `sub`). Entra ID's `sub` is
pairwise (different for every application), so there `["tid", "oid"]` gives the stable tenant and
object ids. A value outside the user-id alphabet (an e-mail address, `auth0|123`) becomes `u-` and 40
hex digits of its SHA-256: stable, and no two users share one. A token without the claims is refused.

Scopes: every value of the claims in `security.scope_claims` (a space-separated string, as `scope` and
Entra's `scp`, or a list, as Entra's app-permission `roles`) that is `read`, `write` or `admin` after
`security.scope_prefix` (e.g. `memory.read`), or the full name a client requests
(`scope_request_prefix` + prefix + name, e.g. Entra's `https://memory.example.com/mcp/memory.read`).
Other values are ignored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_memory.config import SecuritySettings
from mcp_memory.models import THREAD_ID_PATTERN
from mcp_memory.security.oauth.issuer import InvalidToken
from mcp_memory.security.principals import ADMIN, ALL_SCOPES, READ, WRITE

# What a client asks for to use the server at all (the 401 challenge and scopes_supported): a memory
# client reads and writes. admin is asked for only when an admin tool says so (403, step-up).
BASIC_SCOPES = (READ, WRITE)
LEVELS = (READ, WRITE, ADMIN)  # each covers the ones before it


@dataclass(frozen=True)
class ClaimRules:
    user_claims: tuple[str, ...] = ("sub",)
    scope_claims: tuple[str, ...] = ("scope", "scp")
    scope_prefix: str = ""
    scope_request_prefix: str = ""
    group_claims: tuple[str, ...] = ("groups",)

    @classmethod
    def of(cls, security: SecuritySettings) -> ClaimRules:
        return cls(
            user_claims=tuple(security.user_claims),
            scope_claims=tuple(security.scope_claims),
            scope_prefix=security.scope_prefix,
            scope_request_prefix=security.scope_request_prefix,
            group_claims=tuple(security.group_claims),
        )

    def user_id(self, claims: Mapping[str, Any]) -> str:
        values = []
        for name in self.user_claims:
            value = claims.get(name)
            if not isinstance(value, str) or not value:
                raise InvalidToken(f"the token has no {name} claim, which names its user")
            values.append(value)
        joined = ":".join(values)
        if THREAD_ID_PATTERN.match(joined):
            return joined
        return "u-" + hashlib.sha256(joined.encode()).hexdigest()[:40]

    def scopes(self, claims: Mapping[str, Any]) -> frozenset[str]:
        granted: set[str] = set()
        for name in self.scope_claims:
            for value in _values(claims.get(name)):
                scope = self._ours(value)
                if scope is not None:
                    granted.add(scope)
        return frozenset(granted)

    def groups(self, claims: Mapping[str, Any]) -> list[str]:
        """The groups the token says its holder is in (a string or a list per claim): what a space's
        "group:<id>" members match."""
        found = {value for name in self.group_claims for value in _values(claims.get(name)) if value}
        return sorted(found)

    def _ours(self, value: str) -> str | None:
        for prefix in (self.scope_request_prefix + self.scope_prefix, self.scope_prefix):
            if value.startswith(prefix) and value[len(prefix) :] in ALL_SCOPES:
                return value[len(prefix) :]
        return None

    def requested(self, scopes: Iterable[str]) -> str:
        """Scope names as a client must request them, space-separated (a challenge's scope=)."""
        return " ".join(self.scope_request_prefix + self.scope_prefix + s for s in scopes)


def covering(needed: str) -> tuple[str, ...]:
    """The scopes a challenge names for an operation that needs `needed`: it and the ones it covers,
    so a client that replaces its scope with the challenge's (as 2025 clients do) loses nothing."""
    return LEVELS[: LEVELS.index(needed) + 1]


def _values(claim: object) -> list[str]:
    if isinstance(claim, str):
        return claim.split()
    if isinstance(claim, list):
        return [v for v in claim if isinstance(v, str)]
    return []
