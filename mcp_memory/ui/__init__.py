"""The memory explorer: a browser page over the memory service (`mcp-memory ui`, or /ui on serve)."""
