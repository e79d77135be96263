"""PLACEHOLDER on branch `courier` only (the sign-in engineer's credentials.py replaces it at merge): the
access token of a memory server, as the courier asks for it. This one only hands out the token cached in
token.json (what `login --token-stdin` stores), and refreshes nothing.
"""

from __future__ import annotations

from pathlib import Path

from mcp_memory.remote import places


class SignedOut(Exception):
    """No credential for the server, or it can no longer be refreshed: `mcp-memory login URL`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def access_token(data_dir: Path, url: str, *, margin: float = 120) -> str:
    """A valid access token for `url`; SignedOut when there is none."""
    token = places.cached_token(data_dir, url)
    if token is None:
        raise SignedOut(f"not signed in to {places.normalized(url)}")
    if not token.usable():
        raise SignedOut(f"the token for {places.normalized(url)} expired")
    return token.access_token
