"""Where a memory server's users sign in, found as MCP clients find it: the server's 401 names its
protected-resource metadata (RFC 9728), which names the authorization server, whose metadata (RFC 8414,
or OpenID Connect discovery) names its endpoints. The URL lists, requests and parsing are the MCP SDK's
(`mcp.client.auth.utils`), so `login --device` discovers exactly what the browser sign-in (the SDK's
OAuthClientProvider) does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_protected_resource_response,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp_types import LATEST_PROTOCOL_VERSION
from pydantic import ValidationError

from mcp_memory import __version__
from mcp_memory.remote import places


class LoginFailed(Exception):
    """Signing in could not be done; the message says why, in a line."""


@dataclass(frozen=True)
class Discovered:
    url: str  # the server's base URL
    resource_metadata: ProtectedResourceMetadata
    server_metadata: OAuthMetadata
    server_document: dict[str, Any]  # the whole metadata: device_authorization_endpoint is not modelled
    challenge: httpx2.Response  # the server's 401, whose WWW-Authenticate names the scopes it wants

    @property
    def resource(self) -> str:
        return str(self.resource_metadata.resource)

    def scope(self, grant_types: list[str]) -> str | None:
        """What to ask for: the 401's scopes (else the metadata's), plus offline_access when the
        authorization server has it and the client refreshes (the SDK's rule)."""
        return get_client_metadata_scopes(
            extract_scope_from_www_auth(self.challenge),
            self.resource_metadata,
            self.server_metadata,
            grant_types,
        )


def initialize_request(url: str, token: str | None = None) -> httpx2.Request:
    """An MCP initialize POST to the server's endpoint: what a client first sends, so what the server
    challenges (or, with a token, accepts)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-memory login", "version": __version__},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.Request("POST", places.normalized(url) + "/mcp", content=json.dumps(body), headers=headers)


async def send(http: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
    """The request sent, any failure to reach the server a LoginFailed naming it."""
    try:
        return await http.send(request)
    except httpx2.TransportError as e:
        raise LoginFailed(f"cannot reach {request.url.copy_with(query=None)}: {e or type(e).__name__}") from e


async def discover(http: httpx2.AsyncClient, url: str) -> Discovered:
    base = places.normalized(url)
    challenge = await send(http, initialize_request(base))
    if challenge.status_code != 401:
        raise LoginFailed(
            f"{base}/mcp answered {challenge.status_code} without a token, not 401: "
            "it does not ask for sign-in (is it the memory server, with security.authorization_server set?)"
        )
    resource_metadata = None
    pointed = extract_resource_metadata_from_www_auth(challenge)
    for candidate in build_protected_resource_metadata_discovery_urls(pointed, base + "/mcp"):
        resource_metadata = await handle_protected_resource_response(
            await send(http, create_oauth_metadata_request(candidate))
        )
        if resource_metadata is not None:
            break
    if resource_metadata is None or not resource_metadata.authorization_servers:
        raise LoginFailed(
            f"{base} publishes no protected-resource metadata naming an authorization server (RFC 9728), "
            "so there is nowhere to sign in"
        )
    issuer = str(resource_metadata.authorization_servers[0])
    for candidate in build_oauth_authorization_server_metadata_discovery_urls(issuer, base + "/mcp"):
        answer = await send(http, create_oauth_metadata_request(candidate))
        if answer.status_code != 200:
            continue
        try:
            document = answer.json()
            return Discovered(
                base, resource_metadata, OAuthMetadata.model_validate(document), document, challenge
            )
        except (ValueError, ValidationError):
            continue
    raise LoginFailed(
        f"the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID discovery)"
    )


def oauth_error(response: httpx2.Response) -> tuple[str, str]:
    """(error, description) of an OAuth error answer; ("", "HTTP <status>") when it is not one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        description = body.get("error_description")
        return body["error"], description[:200] if isinstance(description, str) else ""
    return "", f"HTTP {response.status_code}"
