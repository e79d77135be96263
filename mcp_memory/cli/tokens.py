"""`mcp-memory token`: a new static bearer token, and the entry (its hash only) to configure."""

from __future__ import annotations

from datetime import datetime

from mcp_memory.config import SecuritySettings, TokenEntry, load_tokens
from mcp_memory.security.principals import READ, WRITE
from mcp_memory.security.static_tokens import hash_token, new_token


def token_command(user_id: str, name: str, scopes: list[str], expires_at: datetime | None) -> None:
    """`mcp-memory token`: print a new token once, and the entry (its hash only) to configure."""
    token = new_token()
    entry = TokenEntry(
        sha256=hash_token(token),
        user_id=user_id,
        name=name or user_id,
        scopes=scopes or [READ, WRITE],
        expires_at=expires_at,
    )
    load_tokens(SecuritySettings(tokens=[entry]))  # the same checks as at startup
    print(f"token (give it to the client, it is not stored anywhere): {token}")
    print("entry for security.tokens / tokens_file (only the hash):")
    print(entry.model_dump_json(exclude_none=True))
