"""The reference MCP memory server (@modelcontextprotocol/server-memory, npm), the knowledge graph our
graph tools must match: installed once into <repo>/.cache/server-memory (or $SERVER_MEMORY_DIR) and
launched over stdio per connection, as a desktop client launches it. Node missing fails the test."""

from __future__ import annotations

import os
from pathlib import Path

from tests.services.node_service import cache_dir, node, npm_install
from tests.services.server_process import StdioServer

PACKAGE = "@modelcontextprotocol/server-memory@2026.8.31"


def reference_entry() -> Path:
    override = os.environ.get("SERVER_MEMORY_DIR")
    install = Path(override) if override else cache_dir("server-memory")
    entry = install / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    return npm_install(PACKAGE, install, entry)


def reference_server(workdir: Path, memory_file: Path) -> StdioServer:
    """The reference server keeping its graph in memory_file (its MEMORY_FILE_PATH)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    env["MEMORY_FILE_PATH"] = str(memory_file)
    return StdioServer(
        workdir, env, command=node("the reference memory server"), args=[str(reference_entry())]
    )
