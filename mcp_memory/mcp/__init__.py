"""The MCP surface: the server's tools, resources and prompts, its auth, limits, subscriptions and
transports. Thin: every rule lives in the service below (mcp_memory/service)."""
