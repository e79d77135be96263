"""The memory service and its rules: threads (keeping and progressive summarization), search across
memories, recall, export and import, quotas. The MCP surface and the CLI call it; it calls the stores,
learning and the models below."""
