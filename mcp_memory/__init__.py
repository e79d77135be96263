"""mcp-memory: an MCP server that gives AI assistants working memory and searchable long-term memory."""

__version__ = "0.1.0"

__all__ = ["__version__"]
