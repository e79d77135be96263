"""`mcp-memory ui`: the memory explorer on its own, over the configured store, on 127.0.0.1."""

from __future__ import annotations

import logging
import webbrowser

from mcp_memory.config import Settings
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.mcp.transports import serve_http
from mcp_memory.ui.app import check_explorer_exposure, standalone_app

log = logging.getLogger(__name__)


async def run_explorer(settings: Settings, host: str, port: int, open_browser: bool) -> None:
    check_explorer_exposure(settings, host)
    service_host = ServiceHost(settings)
    # Opened before listening: a bad data file or an unreachable backend is a clear startup error.
    async with service_host.use():
        where = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/ui"
        print(f"mcp-memory: the memory explorer is at {where}/threads (Ctrl+C stops it)", flush=True)
        opener = (lambda: webbrowser.open(f"{where}/threads")) if open_browser else None
        await serve_http(standalone_app(service_host, settings), host, port, where, on_listening=opener)
