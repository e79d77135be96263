"""The static bearer tokens an operator configures, kept as SHA-256 hashes only.

Tokens come from settings `security.tokens` or a JSON file named by `security.tokens_file`, each entry
holding the hash of a token, never the token itself, so a leaked configuration grants nothing.
`mcp-memory token` (cli/tokens.py) makes a new one and prints the entry to configure.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import UTC, datetime

from mcp.server.auth.provider import AccessToken

from mcp_memory.config import TokenEntry
from mcp_memory.security.principals import GROUPS

log = logging.getLogger(__name__)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh random bearer token (256 bits)."""
    return "mmt_" + secrets.token_urlsafe(32)


class HashedTokenVerifier:
    """The SDK's TokenVerifier over configured token hashes."""

    def __init__(self, entries: list[TokenEntry]) -> None:
        self._by_hash = {e.sha256: e for e in entries}

    async def verify_token(self, token: str) -> AccessToken | None:
        entry = self._by_hash.get(hash_token(token))
        if entry is None:
            log.info("refused a bearer token that matches no configured hash")
            return None
        expires_at = int(entry.expires_at.timestamp()) if entry.expires_at else None
        if entry.expires_at is not None and _aware(entry.expires_at) <= datetime.now(UTC):
            log.info("refused expired token %s", entry.name or entry.sha256[:8])
            return None
        name = entry.name or f"token-{entry.sha256[:8]}"
        return AccessToken(
            token=f"sha256:{entry.sha256[:12]}",  # never keep the secret itself around
            client_id=name,
            subject=entry.user_id,
            scopes=sorted(entry.scopes),
            expires_at=expires_at,
            claims={GROUPS: list(entry.groups)},
        )


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
