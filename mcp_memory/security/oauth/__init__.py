"""Signing in through the organisation's identity provider: this server as an OAuth 2.1 resource server.

The MCP authorization specification (2025-03-26 to 2026-07-28; RFC 9728, 8707, 6750, 9068) in four parts:
- `issuer.py`: the identity provider's metadata (RFC 8414 / OpenID discovery) and its signing keys
  (JWKS), fetched without blocking the event loop (`security/http.py`), cached, re-read at most once
  per floor for a new kid.
- `claims.py`: who a verified token stands for and what it may do (user id and scopes from claims,
  Entra ID's tid/oid and scp/roles included), as configured.
- `tokens.py`: the verifiers: JWT access tokens checked locally (PyJWT), opaque ones by RFC 7662
  introspection, and the configured static tokens beside them; one principal model for all.
- `bearer.py`: the bearer token of a request, and the 401 and 403 challenges (RFC 6750) with
  resource_metadata and scope.
The ASGI guard in front of the MCP endpoints (per-tool scopes before anything runs) and the
protected-resource metadata document are the MCP layer's (`mcp/middleware/oauth.py`). The explorer (/ui)
signs in against the same issuer with authorization code + PKCE (`ui/signin.py`).
"""
