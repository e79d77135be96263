"""Command line: `mcp-memory [serve] [--transport stdio|sse|http]`, `mcp-memory demo`.

stdout belongs to the stdio protocol, so every log line goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import anyio
from pydantic import ValidationError

from . import __version__
from .config import Settings
from .errors import MemoryServerError

log = logging.getLogger("mcp_memory")

DESCRIPTION = """\
mcp-memory: an MCP server that gives AI assistants working memory (recent messages plus a running
summary) and searchable long-term memory (hybrid BM25 + vector search).

With no settings it runs on an embedded default: one SQLite file in your data directory, a local
ONNX embedding model and an offline summarizer - no server, no key, no network. Settings are
environment variables prefixed MCP_MEMORY_ (see the README), also read from a .env file.
"""

EPILOG = """\
examples:
  mcp-memory                                   serve over stdio (what Claude Desktop runs)
  mcp-memory serve --transport http --port 8000  streamable HTTP at http://127.0.0.1:8000/mcp
  mcp-memory serve --transport sse             SSE at http://127.0.0.1:8000/sse
  mcp-memory demo                              drive a real server through a real MCP client
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-memory",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mcp-memory {__version__}")
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the MCP server (the default command)")
    serve.add_argument("--transport", choices=["stdio", "sse", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind for sse/http (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port for sse/http (default 8000)")
    demo = commands.add_parser("demo", help="show the server working: turns, summarization, search")
    demo.add_argument("--keep", action="store_true", help="use your real data dir instead of a temporary one")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as e:
        print(f"mcp-memory: invalid settings:\n{_settings_problems(e)}", file=sys.stderr)
        raise SystemExit(2) from None
    logging.basicConfig(
        level=settings.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "demo":
            from .demo import run_demo

            anyio.run(run_demo, settings, args.keep)
        else:
            transport = getattr(args, "transport", "stdio")
            anyio.run(
                _serve, settings, transport, getattr(args, "host", "127.0.0.1"), getattr(args, "port", 8000)
            )
    except MemoryServerError as e:
        print(f"mcp-memory: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        pass


async def _serve(settings: Settings, transport: str, host: str, port: int) -> None:
    from .server import build_server
    from .transports import serve

    server = build_server(settings)
    # Open the backends before accepting a connection, so a bad data file or an unreachable backend
    # is a clear startup error; SSE sessions then share this one service instead of reopening it.
    async with server.host.use():  # type: ignore[attr-defined]
        await serve(server, transport, host, port)


def _settings_problems(error: ValidationError) -> str:
    lines = []
    for problem in error.errors():
        message = problem["msg"].removeprefix("Value error, ")
        if problem["loc"]:
            name = "MCP_MEMORY_" + "__".join(str(p).upper() for p in problem["loc"])
            lines.append(f"  {name}: {message}")
        else:  # a whole-model validator: its message names the setting itself
            lines.append(f"  {message}")
    return "\n".join(lines)
