"""`mcp-memory install <client> [--scope user|project] [--server URL] [--uninstall]`: the MCP server entry
and the hooks, written into the coding agent's own files (install_clients.py says which files and shapes).
With --server (team mode), every hook command carries `--server URL` and the server entry runs `mcp-memory
serve --server URL`, the bridge to that memory server (docs/team.md).

Every file is read and every edit computed before anything is written, so a file that is not valid
JSON or TOML (or not the shape its client documents) stops the command with nothing changed. Only our
entries are touched: hooks whose command runs `<mcp-memory> hook <client>`, and the server "memory" when
it starts mcp-memory. A file that changes is copied to `<file>.mcp-memory.bak` first. Running install
twice leaves every file byte for byte as the first run wrote it.

Standard library only, and the TOML parts imported when Codex's file is edited: the CLI imports this
module to build its parser, also for each hook event.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import (
    CLIENTS,
    SERVER_NAME,
    Client,
    JsonObject,
    OpenCode,
    Scope,
    find_program,
    hook_command,
    is_our_hook,
    is_our_server,
    shell_word,
)
from mcp_memory.cli.install_codex import (
    Consent,
    codex_user_config,
    consent,
    put_codex_config,
    put_codex_trust,
    remove_codex_config,
    remove_codex_trust,
)
from mcp_memory.cli.install_files import (  # ConfigError and Files: also what doctor reads files with
    ConfigError,
    Document,
    Files,
    JsonDocument,
    wanted_server,
)

BACKUP_SUFFIX = ".mcp-memory.bak"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "install",
        help="add the MCP server and the capture/recall hooks to a coding agent (docs/install.md)",
        description="Write the MCP server entry and the hooks into the client's own files, by the absolute "
        "path of this mcp-memory; every other setting and hook is kept, and each changed file is backed up "
        "to <file>.mcp-memory.bak.",
    )
    parser.add_argument("client", choices=sorted(CLIENTS), help="the coding agent")
    parser.add_argument(
        "--scope",
        choices=["user", "project"],
        help="user: the agent's files in your home directory (every project; the default); project: the "
        "files of the project in the current directory (or --project)",
    )
    parser.add_argument("--project", type=Path, help="the project directory for --scope project")
    parser.add_argument(
        "--server",
        metavar="URL",
        help="team mode: the hooks capture into and recall from this memory server, and the MCP entry reaches "
        "it (sign in first: mcp-memory login URL)",
    )
    parser.add_argument("--uninstall", action="store_true", help="remove only what install wrote")
    parser.add_argument(
        "--force",
        action="store_true",
        help="install even when the other installed entries open another user's memory or data dir",
    )
    parser.add_argument(
        "--trust",
        action="store_true",
        help="Codex only: trust the hooks install writes, as Codex's /hooks review would (Codex runs no "
        "hook until it is trusted); without it, install asks when run in a terminal",
    )


def run(args: argparse.Namespace) -> int:
    client = CLIENTS[args.client]
    if args.scope == "user" and args.project:
        print("mcp-memory install: --project goes with --scope project", file=sys.stderr)
        return 2
    scope: Scope = args.scope or ("project" if args.project else "user")
    server, problem = _server(getattr(args, "server", None))
    if problem:
        print(f"mcp-memory install: {problem}\nNothing was changed.", file=sys.stderr)
        return 2
    root = (args.project or Path.cwd()).resolve() if scope == "project" else Path.home()
    program = find_program()
    split = None if args.uninstall or args.force else would_split(client, scope)
    if split:
        print(f"mcp-memory install: {split}\nNothing was changed.", file=sys.stderr)
        return 2
    files = Files()
    notes: list[str] = []
    try:
        if args.uninstall:
            uninstall(client, scope, root, files)
        else:
            install(client, scope, root, program, files, consent(args), notes, server)
    except ConfigError as e:
        print(f"mcp-memory install: {e}\nNothing was changed.", file=sys.stderr)
        return 2
    if args.uninstall:
        print(f"mcp-memory install {client.name} --uninstall (--scope {scope}):")
    else:
        print(f"mcp-memory install {client.name} (--scope {scope}), running {' '.join(program)}:")
    try:
        for document in files.documents.values():
            print(f"  {_write(document, root)}")
    except OSError as e:
        print(f"mcp-memory install: {e}", file=sys.stderr)
        return 1
    signed_out = _sign_in_note(server) if server and not args.uninstall else None
    for note in [*notes, *([signed_out] if signed_out else [])]:
        print(note)
    if not args.uninstall:
        print(
            f"Start a new {client.title} session to load them; `mcp-memory doctor` shows what is installed."
        )
    return 0


def _server(url: str | None) -> tuple[str | None, str | None]:
    """--server as the hooks will use it (normalized), or why it is not a memory server's URL."""
    if url is None:
        return None, None
    from mcp_memory.remote import places

    try:
        return places.normalized(url), None
    except places.UnusableUrl as e:
        return None, f"--server: {e}"


def _sign_in_note(server: str) -> str | None:
    """A warning, not a refusal: the hooks keep events in the outbox until the user signs in."""
    from mcp_memory.cli.hook import data_dir
    from mcp_memory.remote import places

    root = data_dir()
    if places.cached_token(root, server) or places.credential_file(root, server).exists():
        return None
    return (
        f"Not signed in to {server} yet: run `mcp-memory login {server}`. Until then, captured events wait "
        "in the outbox and nothing is recalled."
    )


def would_split(client: Client, scope: Scope) -> str | None:
    """Why installing would give one person two memories (None when it would not): another installed
    entry (this client's in the other scope, another client's, Claude Desktop's) opens another user's
    memory or another data dir than the entries written now would."""
    from mcp_memory.cli import identity

    mine = identity.this_install()
    others = [
        entry
        for entry in identity.installed(Path.home(), Path.cwd().resolve())
        if (entry.client, entry.scope) != (client.name, scope) and entry.memory != mine
    ]
    if not others:
        return None
    listed = "\n".join(f"  {entry.where}: {entry.memory}" for entry in others)
    theirs = identity.memories(others)
    hint = ""
    if len(theirs) == 1:
        settings = {
            identity.USER: theirs[0].user if theirs[0].user != mine.user else None,
            identity.DATA_DIR: theirs[0].data_dir if theirs[0].data_dir != mine.data_dir else None,
        }
        words = " ".join(f"{name}={shell_word(value)}" for name, value in settings.items() if value)
        hint = f"To share that memory: {words} mcp-memory install {client.name}" + (
            f" --scope {scope}" if scope == "project" else ""
        )
        hint += "; or remove those settings from the entries above. "
    return (
        f"this would split your memory: the entries install writes would open {mine}, while\n{listed}\n"
        f"{hint}--force installs anyway."
    )


def install(
    client: Client,
    scope: Scope,
    root: Path,
    program: list[str],
    files: Files,
    consent: Consent = lambda count: False,
    notes: list[str] | None = None,
    server: str | None = None,
) -> None:
    if isinstance(client, OpenCode):  # a plugin file, not hook entries
        from mcp_memory.cli import install_opencode

        try:
            return install_opencode.install(client, scope, root, program, files, server)
        except install_opencode.OpenCodeConfigError as e:
            raise ConfigError(str(e)) from None
    hooks = files.json(client.hooks_file(scope, root), client.hooks_skeleton)
    put_hooks(hooks, client, program, server)
    if client.mcp_format == "toml":
        config = files.toml(client.mcp_file(scope, root))
        put_codex_config(config, client, program, server)
        note = put_codex_trust(files, scope, hooks, config, consent)
        if note and notes is not None:
            notes.append(note)
    else:
        put_server(files.json(client.mcp_file(scope, root)), client, program, server)
    for document in files.documents.values():
        if isinstance(document, JsonDocument):
            document.settle(uninstall=False)


def uninstall(client: Client, scope: Scope, root: Path, files: Files) -> None:
    if isinstance(client, OpenCode):
        from mcp_memory.cli import install_opencode

        try:
            return install_opencode.uninstall(client, scope, root, files)
        except install_opencode.OpenCodeConfigError as e:
            raise ConfigError(str(e)) from None
    hooks = files.json(client.hooks_file(scope, root), client.hooks_skeleton)
    remove_hooks(hooks, client)
    if client.mcp_format == "toml":
        from mcp_memory.cli import codex_trust

        keys = frozenset(h.key for h in codex_trust.our_hooks(hooks.path, hooks.original))
        config = files.toml(client.mcp_file(scope, root))
        trust = config if scope == "user" else files.toml(codex_user_config())
        remove_codex_trust(trust, keys)
        remove_codex_config(config, keys if trust is config else frozenset())
    else:
        remove_server(files.json(client.mcp_file(scope, root)), client)
    for document in files.documents.values():
        if isinstance(document, JsonDocument):
            document.settle(uninstall=True)


# Hooks (JSON) ------------------------------------------------------------------------------------


def _hooks_object(document: JsonDocument, create: bool) -> JsonObject | None:
    hooks = document.data.get("hooks")
    if hooks is None and create:
        hooks = document.data["hooks"] = {}
    if hooks is not None and not isinstance(hooks, dict):
        raise ConfigError(f'{document.path}: "hooks" is not an object; fix it and run install again')
    return hooks


def _without_ours(items: list[Any], client: Client) -> tuple[list[Any], int | None]:
    """An event's list without our entries, and where the first of them was (None: there was none)."""
    kept: list[Any] = []
    first: int | None = None
    for item in items:
        inner = item.get("hooks") if client.nested_hooks and isinstance(item, dict) else None
        if isinstance(inner, list) and any(is_our_hook(h, client.name) for h in inner):
            first = len(kept) if first is None else first
            others = [h for h in inner if not is_our_hook(h, client.name)]
            kept += [{**item, "hooks": others}] if others else []
        elif not client.nested_hooks and is_our_hook(item, client.name):
            first = len(kept) if first is None else first
        else:
            kept.append(item)
    return kept, first


def _strip_event(hooks: JsonObject, event: str, client: Client) -> bool:
    """Remove our entries from one event (and the event when nothing else is left); True if any were."""
    items = hooks[event]
    if not isinstance(items, list):  # not an event (Gemini keeps "enabled" and "disabled" here too)
        return False
    kept, first = _without_ours(items, client)
    if first is None:
        return False
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
    return True


def put_hooks(document: JsonDocument, client: Client, program: list[str], server: str | None = None) -> None:
    hooks = _hooks_object(document, create=True)
    assert hooks is not None
    wanted = {event.name for event in client.events}
    for name in [name for name in hooks if name not in wanted]:  # hooked by an earlier version
        _strip_event(hooks, name, client)
    for event in client.events:
        items = hooks.get(event.name, [])
        if not isinstance(items, list):
            raise ConfigError(
                f'{document.path}: hooks "{event.name}" is not a list; fix it and run install again'
            )
        kept, first = _without_ours(items, client)
        kept.insert(
            len(kept) if first is None else first,
            client.hook_item(hook_command(program, client.name, event.name, server), event),
        )
        if kept != items:
            hooks[event.name] = kept
    if document.data != document.original:
        document.done.append("hooks " + ", ".join(e.name for e in client.events))


def remove_hooks(document: JsonDocument, client: Client) -> None:
    hooks = _hooks_object(document, create=False)
    if not hooks:
        return
    removed = [event for event in list(hooks) if _strip_event(hooks, event, client)]
    if removed and not hooks:
        del document.data["hooks"]
    if removed:
        document.done.append("removed hooks " + ", ".join(removed))


# The MCP server (JSON) ---------------------------------------------------------------------------


def _servers(document: JsonDocument, key: str, create: bool) -> JsonObject | None:
    servers = document.data.get(key)
    if servers is None and create:
        servers = document.data[key] = {}
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(f'{document.path}: "{key}" is not an object; fix it and run install again')
    return servers


def put_server(document: JsonDocument, client: Client, program: list[str], server: str | None = None) -> None:
    servers = _servers(document, client.servers_key, create=True)
    assert servers is not None
    wanted = wanted_server(servers.get(SERVER_NAME), client, program, document.path, server)
    if servers.get(SERVER_NAME) != wanted:
        servers[SERVER_NAME] = wanted
        document.done.append(f'MCP server "{SERVER_NAME}"')


def remove_server(document: JsonDocument, client: Client) -> None:
    servers = _servers(document, client.servers_key, create=False)
    if not servers or SERVER_NAME not in servers:
        return
    if not is_our_server(servers[SERVER_NAME]):
        document.done.append(f'left MCP server "{SERVER_NAME}": it is not mcp-memory\'s')
        return
    del servers[SERVER_NAME]
    if not servers:
        del document.data[client.servers_key]
    document.done.append(f'removed MCP server "{SERVER_NAME}"')


# Writing -----------------------------------------------------------------------------------------


def _write(document: Document, root: Path) -> str:
    """Back up, then write or delete one file; what happened, in words."""
    path = document.path.resolve() if document.path.is_symlink() else document.path
    if document.new_text is None and not document.delete:
        return f"{document.path}: unchanged" + (f" ({'; '.join(document.done)})" if document.done else "")
    what = "; ".join(document.done)
    if document.delete:  # it held nothing but what install wrote: no backup, and no empty folders left
        path.unlink()
        _remove_empty_folders(path.parent, root)
        return f"{document.path}: {what}; deleted the file (nothing else was in it)"
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if document.existed:
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.mcp-memory.tmp")
    temporary.write_text(document.new_text or "", encoding="utf-8")
    if document.existed:
        os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
    os.replace(temporary, path)
    return f"{document.path}: {what}" + (f" (backup {backup})" if document.existed else " (new file)")


def _remove_empty_folders(folder: Path, root: Path) -> None:
    """Folders under `root` that deleting our file left empty (.vscode, .github/hooks, ...)."""
    while folder != root and root in folder.parents and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
