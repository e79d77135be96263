"""The MCP surface: the server's tools, resources and prompts, its scope and OAuth guards (the rules are
mcp_memory/security's), limits, subscriptions and transports. Thin: every rule lives in the service
below (mcp_memory/service)."""
