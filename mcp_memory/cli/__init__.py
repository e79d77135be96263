"""Command line: `mcp-memory [serve] [--transport stdio|sse|http]`, `mcp-memory demo`.

stdout belongs to the stdio protocol, so every log line goes to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_memory import __version__

if TYPE_CHECKING:
    import argparse

    from pydantic import ValidationError

    from mcp_memory.config import Settings

# Nothing but sys at the top: every hook event (cli/hook.py) starts here, and `mcp-memory --help` must
# be quick too; what a command needs (argparse, pydantic, anyio, the MCP SDK, the service) is imported
# when it runs.

DESCRIPTION = """\
mcp-memory: an MCP server that gives AI assistants working memory (recent messages plus a running
summary) and searchable long-term memory (hybrid BM25 + vector search).

With no settings it runs on an embedded default: one SQLite file in your data directory, a local
ONNX embedding model and an offline summarizer - no server, no key, no network. Settings are
environment variables prefixed MCP_MEMORY_ (see the README), also read from a .env file.
"""

EPILOG = """\
examples:
  mcp-memory                                   serve over stdio (what Claude Desktop runs), through the
                                               user's resident server (--in-process: in this process)
  mcp-memory serve --transport http --port 8000  streamable HTTP at http://127.0.0.1:8000/mcp
  mcp-memory serve --transport sse             SSE at http://127.0.0.1:8000/sse
  mcp-memory demo                              drive a real server through a real MCP client
  mcp-memory login https://memory.example.com  sign in to a team's memory server (--device: no browser)
  mcp-memory serve --server https://memory.example.com   stdio bridged to that server, signed in
  mcp-memory ui                                see your memory in the browser at http://127.0.0.1:8765/ui
  mcp-memory forget-user ann --dry-run         count (then, without --dry-run, delete) all of ann's data
  mcp-memory audit show --space team --action forget   who removed what from the space, and when
  mcp-memory audit verify                      check the audit trail's hash chain
  mcp-memory backup ~/memory-2026-11-25.db     a consistent copy of the data file, while servers run
  mcp-memory restore ~/memory-2026-11-25.db    check a backup and put it in an empty data dir
  mcp-memory eval --budget 500,700,1000,1500   replay your own coding sessions into a throw-away store and
                                               measure what the hooks' recall carries (docs/eval.md)
"""


EXPORT_FORMATS = ("mcp-memory", "memory-jsonl")
IMPORT_FORMATS = ("mcp-memory", "memory-jsonl", "chatgpt", "claude")


def build_parser() -> argparse.ArgumentParser:
    import argparse
    from datetime import datetime

    from mcp_memory.cli import doctor, install, signin
    from mcp_memory.cli import eval as self_eval
    from mcp_memory.cli.audit import add_parser as audit_parser

    parser = argparse.ArgumentParser(
        prog="mcp-memory",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mcp-memory {__version__}")
    commands = parser.add_subparsers(dest="command")
    serve = _serve_and_hook_parsers(commands)
    ui = commands.add_parser("ui", help="browse, search, correct and forget memories in a browser page")
    ui.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need tokens)"
    )
    ui.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    ui.add_argument("--open", action="store_true", help="open the page in your web browser")
    demo = commands.add_parser("demo", help="show the server working: turns, summarization, search")
    demo.add_argument("--keep", action="store_true", help="use your real data dir instead of a temporary one")
    export = commands.add_parser("export", help="write a user's memories as JSON Lines (docs/security.md)")
    export.add_argument("--user", help="whose memories (default: MCP_MEMORY_USER_ID)")
    export.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
    export.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="mcp-memory",
        help="mcp-memory (everything, JSON Lines; default) or memory-jsonl (the knowledge graph as the "
        "reference memory server's memory.jsonl)",
    )
    imp = commands.add_parser("import", help="add the memories of an export to a user's memory")
    imp.add_argument("file", type=Path, nargs="?", help="the export file (default: stdin)")
    imp.add_argument(
        "--format",
        choices=IMPORT_FORMATS,
        default="mcp-memory",
        help="mcp-memory (our export; default), memory-jsonl (the reference memory server's memory.jsonl "
        "or memory.json), chatgpt or claude (their conversations.json)",
    )
    imp.add_argument("--user", help="into whose memory (default: MCP_MEMORY_USER_ID)")
    imp.add_argument("--dry-run", action="store_true", help="only check the file and count what it holds")
    forget_user = commands.add_parser(
        "forget-user", help="delete everything of one user from every backend (the admin's command)"
    )
    forget_user.add_argument("user", help="the user whose memories are all deleted")
    forget_user.add_argument("--dry-run", action="store_true", help="only count what would be deleted")
    backup = commands.add_parser(
        "backup", help="copy the embedded data file consistently, even while servers write to it"
    )
    backup.add_argument("file", type=Path, help="the backup file to write (must not exist yet)")
    restore = commands.add_parser(
        "restore", help="check a backup file and restore it into the data dir (empty unless --force)"
    )
    restore.add_argument("file", type=Path, help="the backup file (made by `mcp-memory backup`)")
    restore.add_argument(
        "--force",
        action="store_true",
        help="replace a store already in the data dir; the old one is moved aside (named by the time), "
        "never deleted",
    )
    audit_parser(commands)
    self_eval.add_parser(commands)
    install.add_parser(commands)
    doctor.add_parser(commands)
    signin.add_parsers(commands, serve)
    token = commands.add_parser("token", help="make a bearer token for SSE/HTTP; prints its hashed entry")
    token.add_argument("--user", required=True, help="the user whose memories the token reaches")
    token.add_argument("--name", default="", help="a label for logs, e.g. ann-laptop")
    token.add_argument(
        "--scope", action="append", choices=["read", "write", "admin", "metrics"], help="repeatable"
    )
    token.add_argument("--expires", type=datetime.fromisoformat, help="ISO 8601 expiry time")
    return parser


def _serve_and_hook_parsers(commands: Any) -> argparse.ArgumentParser:
    """`serve` (returned: `login`'s module adds `--server` to it) and `hook`."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve", help="run the MCP server (the default command)"
    )
    serve.add_argument("--transport", choices=["stdio", "sse", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind for sse/http (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port for sse/http (default 8000)")
    serve.add_argument(
        "--in-process",
        action="store_true",
        help="serve stdio in this process, not through the user's resident server (also: "
        "MCP_MEMORY_IN_PROCESS=1; docs/architecture.md)",
    )
    serve.add_argument(
        "--socket",
        type=Path,
        help="serve streamable HTTP and the hooks' routes on this Unix socket instead, and exit when idle "
        "(what the hooks start on demand: docs/hooks.md)",
    )
    hook = commands.add_parser(
        "hook", help="handle one lifecycle event of a coding agent (what `mcp-memory install` sets up)"
    )
    hook.add_argument(
        "client", choices=["claude-code", "cursor", "vscode", "codex", "gemini", "opencode", "copilot"]
    )
    hook.add_argument("--event", help="the client's event name (default: the payload's hook_event_name)")
    hook.add_argument("--server", help="a memory server's URL: capture and recall there (team mode)")
    return serve


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if _served_light(arguments):  # a hook's event, a client's stdio session: standard library only
        return
    args = build_parser().parse_args(arguments)
    _without_settings(args)
    import anyio
    from pydantic import ValidationError

    from mcp_memory.config import Settings
    from mcp_memory.errors import MemoryServerError

    try:
        settings = Settings()
    except ValidationError as e:
        print(f"mcp-memory: invalid settings:\n{_settings_problems(e)}", file=sys.stderr)
        raise SystemExit(2) from None
    import logging

    logging.basicConfig(
        level=settings.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from mcp_memory.mcp.middleware.request_log import add_request_ids_to_logs

    add_request_ids_to_logs()
    try:
        if args.command in ("export", "import", "forget-user", "audit", "eval"):
            _service_command(settings, args)
        elif args.command in ("backup", "restore"):
            from mcp_memory.cli.backup import backup_command, restore_command

            if args.command == "backup":
                backup_command(settings, args.file)
            else:
                restore_command(settings, args.file, args.force)
        elif args.command == "token":
            from mcp_memory.cli.tokens import token_command

            token_command(args.user, args.name, args.scope or [], args.expires)
        elif args.command == "ui":
            from mcp_memory.cli.explorer import run_explorer

            anyio.run(run_explorer, settings, args.host, args.port, args.open)
        elif args.command == "demo":
            from mcp_memory.cli.demo import run_demo

            anyio.run(run_demo, settings, args.keep)
        else:
            transport = getattr(args, "transport", "stdio")
            host, port = getattr(args, "host", "127.0.0.1"), getattr(args, "port", 8000)
            anyio.run(_serve, settings, transport, host, port, getattr(args, "socket", None))
    except MemoryServerError as e:
        print(f"mcp-memory: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        pass


def _without_settings(args: argparse.Namespace) -> None:
    """The commands that run without the memory service's settings, ended here (SystemExit)."""
    if args.command in ("install", "doctor"):  # files of the clients: they work even with bad settings
        from mcp_memory.cli import doctor, install

        raise SystemExit((install if args.command == "install" else doctor).run(args))
    if args.command in ("login", "logout") or getattr(args, "server", None):  # a memory server elsewhere
        from mcp_memory.cli import signin

        raise SystemExit(signin.run(args))


def _served_light(arguments: list[str]) -> bool:
    """The hot paths, before anything heavy is imported: a coding agent's lifecycle event (cli/hook.py),
    or a client's stdio session relayed to the resident server; and the courier the hooks start in team mode
    (mcp_memory/remote/courier.py), never run by hand, so not in --help's list. False for every other command."""
    if arguments[:1] == ["hook"]:
        from mcp_memory.cli.hook import main as hook_main

        hook_main(arguments[1:])
        return True
    if arguments[:1] == ["courier"]:
        from mcp_memory.remote.courier import main as courier_main

        courier_main(arguments[1:])
        return True
    return _served_by_relay(arguments)


def _served_by_relay(arguments: list[str]) -> bool:
    """`mcp-memory`, `mcp-memory serve` or `... serve --transport stdio` (what a client starts per session)
    relayed to the user's resident server (mcp_memory/relay/); False when it must be served here."""
    rest = arguments[1:] if arguments[:1] == ["serve"] else arguments
    if rest not in ([], ["--transport", "stdio"], ["--transport=stdio"]):
        return False
    from mcp_memory.relay import serve_relayed

    exit_code = serve_relayed()
    if exit_code:
        raise SystemExit(exit_code)
    return exit_code is not None


def _service_command(settings: Settings, args: argparse.Namespace) -> None:
    """The commands that open the memory service themselves (cli/commands.py, cli/audit.py, cli/eval.py)."""
    import anyio

    from mcp_memory.cli.audit import audit_command
    from mcp_memory.cli.commands import export_command, forget_user_command, import_command

    user = getattr(args, "user", None) or settings.user_id
    if args.command == "export":
        anyio.run(export_command, settings, user, args.output, args.format)
    elif args.command == "import":
        anyio.run(import_command, settings, user, args.file, args.dry_run, args.format)
    elif args.command == "forget-user":
        anyio.run(forget_user_command, settings, args.user, args.dry_run)
    elif args.command == "eval":
        from mcp_memory.cli.eval import eval_command

        raise SystemExit(eval_command(settings, args))
    else:
        raise SystemExit(anyio.run(audit_command, settings, args))


async def _serve(
    settings: Settings, transport: str, host: str, port: int, socket: Path | None = None
) -> None:
    import time

    from mcp_memory.mcp.hook_routes import HookEndpoints
    from mcp_memory.mcp.relayed_sessions import RelayedSessions
    from mcp_memory.mcp.server import build_server
    from mcp_memory.mcp.transports import Resident, serve
    from mcp_memory.relay import settings as relay_settings
    from mcp_memory.ui.app import explorer_mount

    server = build_server(settings)
    # Open the backends before accepting a connection, so a bad data file or an unreachable backend
    # is a clear startup error; SSE sessions then share this one service instead of reopening it.
    async with server.host.use():
        if socket is not None:  # the hooks' resident server (mcp_memory/hooks/daemon.py)
            endpoints = HookEndpoints(server.host)

            def session_closed() -> None:  # the idle time counts from the last session's end
                endpoints.last_request = time.monotonic()

            fingerprint = relay_settings.fingerprint(relay_settings.current())
            relayed = RelayedSessions(server, fingerprint, session_closed)
            resident = Resident(socket, endpoints, settings.hooks.idle_exit_seconds, relayed)
            mounts = [*endpoints.routes(), relayed.route()]
            await serve(server, "http", "127.0.0.1", 0, mounts=mounts, resident=resident)
            return
        # The explorer at /ui beside the MCP endpoint, over the same service, tokens and scopes.
        mounts = [] if transport == "stdio" else explorer_mount(server.host, settings, host)
        await serve(server, transport, host, port, mounts=mounts)


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
