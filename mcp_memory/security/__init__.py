"""Security: who is calling, what they may do, and which memories they may use.

The MCP layer (`mcp/`), the explorer (`ui/`), the service (`forget_user`) and the command line use it;
it uses none of them, nor the stores (of the MCP SDK only the token type, `AccessToken`, and the
context variable that holds the running request's token).
- `principals.py`: the principal a request stands for, the scopes (read, write, admin, metrics) and
  which covers which; `current_principal()` reads the verified token of the running request.
- `static_tokens.py`: operator-configured bearer tokens, kept as SHA-256 hashes, and their verifier.
- `exposure.py`: the refusal to serve on a network address without any authentication configured.
- `spaces.py`: shared spaces' membership: the one cached reader of `security.spaces_file` (a broken
  edit keeps the last good file), a principal's roles, and `Access` (which memories a call may use).
- `http.py`: the one HTTP client helper for talking to the identity provider (injectable for tests).
- `oauth/`: the identity provider (issuer metadata and keys), token claims, the JWT and introspection
  verifiers, and the RFC 6750 bearer challenges.
The SDK and ASGI plumbing that applies these stays in the MCP layer: `mcp/middleware/scopes.py` (scopes per
tool, before it runs) and `mcp/middleware/oauth.py` (the guard in front of the endpoints, the
protected-resource metadata); `mcp-memory token` is `cli/tokens.py`.
"""
