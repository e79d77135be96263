"""Whether memories may be served where they would be served: never on a network address without a way in.

`check_exposure` runs before a network transport starts: stdio and loopback addresses are fine; any
other address needs static tokens, an identity provider or token introspection (`authenticates`), or
the operator's explicit word that an authenticating proxy stands in front.
"""

from __future__ import annotations

import ipaddress

from mcp_memory.config import Settings, load_tokens
from mcp_memory.errors import ConfigError

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})


def check_exposure(settings: Settings, transport: str, host: str) -> None:
    """Refuse to serve memories on a non-loopback address without authentication."""
    if transport == "stdio" or is_loopback(host):
        return
    if authenticates(settings) or settings.security.allow_unauthenticated_network:
        return
    raise ConfigError(
        f"refusing to serve {transport} on {host} without authentication: configure bearer tokens "
        "(MCP_MEMORY_SECURITY__TOKENS or MCP_MEMORY_SECURITY__TOKENS_FILE) or an identity provider "
        "(MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER), bind 127.0.0.1, or set "
        "MCP_MEMORY_SECURITY__ALLOW_UNAUTHENTICATED_NETWORK=true behind your own authenticating proxy"
    )


def authenticates(settings: Settings) -> bool:
    """Some way in is configured: static tokens, an identity provider, or token introspection."""
    security = settings.security
    return bool(load_tokens(security) or security.authorization_server or security.introspection_client_id)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
