"""`mcp-memory login URL`, `mcp-memory logout URL` and `mcp-memory serve --server URL`: this machine's side
of a memory server (mcp_memory/remote/). None of them opens the memory service or reads its settings
beyond the data directory (and, for the bridge, MCP_MEMORY_HOOKS__CAPTURE), so they work wherever the
package is installed.
"""

from __future__ import annotations

import argparse
import logging
import sys

from mcp_memory.cli.hook import data_dir


def add_parsers(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], serve: argparse.ArgumentParser
) -> None:
    serve.add_argument(
        "--server",
        metavar="URL",
        help="bridge stdio to the memory server at URL (team mode), signed in by `mcp-memory login URL`",
    )
    login = commands.add_parser(
        "login",
        help="sign in to a memory server (its authorization server, found from its metadata)",
        description="Sign in to the memory server at URL: in a browser (authorization code + PKCE, "
        "redirected to this machine), with a code entered on another device (--device), or with a token "
        "an administrator made (--token-stdin). The credential is kept in the OS keyring, else in a file "
        "only you can read, and refreshed before it expires.",
    )
    login.add_argument("url", help="the server's URL, e.g. https://memory.example.com")
    how = login.add_mutually_exclusive_group()
    how.add_argument("--device", action="store_true", help="sign in with a code on another device (RFC 8628)")
    how.add_argument(
        "--token-stdin", action="store_true", help="read a token (from `mcp-memory token`) from stdin"
    )
    login.add_argument("--no-browser", action="store_true", help="only print the sign-in page's URL")
    login.add_argument(
        "--client-id", help="a client registered at the authorization server (when it registers none itself)"
    )
    logout = commands.add_parser("logout", help="forget the credential for a memory server")
    logout.add_argument("url", help="the server's URL")


def run(args: argparse.Namespace) -> int:
    """The command's exit code: 0, or 1 with one line on stderr saying why."""
    import anyio

    from mcp_memory.remote.places import UnusableUrl

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="mcp-memory: %(message)s")
    # The SDK logs a failed sign-in's traceback before raising; the command says why in one line instead.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    try:
        if args.command == "serve":
            from functools import partial

            from mcp_memory.remote.bridge import serve_bridge

            return anyio.run(partial(serve_bridge, data_dir(), args.server, headers=_session_headers()))
        if args.command == "logout":
            return anyio.run(_logout, args.url)
        return anyio.run(_login, args)
    except UnusableUrl as e:
        print(f"mcp-memory: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _session_headers() -> dict[str, str]:
    """What the bridge says of the session with every request: whether the client's hooks capture the
    conversation, read as a local relay reads it (MCP_MEMORY_HOOKS__CAPTURE, in the server entry
    `mcp-memory install` writes, or .env) and sent with the relay's header."""
    from mcp_memory.relay import settings as relay_settings
    from mcp_memory.relay.upstream import CAPTURED_HEADER

    return {CAPTURED_HEADER: "true" if relay_settings.captured(relay_settings.current()) else "false"}


async def _login(args: argparse.Namespace) -> int:
    from mcp_memory.remote import login, outbox

    try:
        if args.token_stdin:
            credential = await login.store_given_token(data_dir(), args.url, sys.stdin.read())
        elif args.device:
            credential = await login.sign_in_with_device(data_dir(), args.url, client_id=args.client_id)
        else:
            credential = await login.sign_in_with_browser(
                data_dir(), args.url, open_browser=not args.no_browser, client_id=args.client_id
            )
    except login.LoginFailed as e:
        print(f"mcp-memory: {e}", file=sys.stderr)
        return 1
    print(login.signed_in_line(credential))
    waiting = outbox.signed_in(data_dir(), credential.url)  # a backlog kept while signed out goes now
    if waiting:
        print(f"{waiting} captured events waiting in the outbox: delivering them now", file=sys.stderr)
    return 0


async def _logout(url: str) -> int:
    from mcp_memory.remote.login import sign_out
    from mcp_memory.remote.places import normalized

    forgotten = await sign_out(data_dir(), url)
    print(f"signed out of {normalized(url)}" if forgotten else f"not signed in to {normalized(url)}")
    return 0
