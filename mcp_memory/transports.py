"""Running the server over stdio, SSE or streamable HTTP, with a /health route on the HTTP ones."""

from __future__ import annotations

import logging
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

from . import __version__

log = logging.getLogger(__name__)


async def serve(server: MCPServer[Any], transport: str, host: str, port: int) -> None:
    if transport == "stdio":
        await server.run_stdio_async()
        return

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    if transport == "sse":
        app = server.sse_app(host=host)
        where = f"http://{host}:{port}/sse"
    else:
        app = server.streamable_http_app(host=host)
        where = f"http://{host}:{port}/mcp"
    log.info("mcp-memory listening on %s", where)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
