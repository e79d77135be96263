"""Whose memory each installed entry opens: one person, one memory, whatever the client.

A client starts `mcp-memory serve` (its MCP server entry) and `mcp-memory hook` (its hooks) with the
variables the entry sets (the server entry's "env"; the `NAME=value` words before a hook command) on
top of the environment it was started with. Two settings choose the memory: MCP_MEMORY_USER_ID (default:
the OS user) and MCP_MEMORY_DATA_DIR (default: the platform's user data directory), as
mcp_memory/config/ reads them. Entries that resolve to different pairs keep two memories of one person:
`doctor` lists them and warns; `install` refuses to write one (unless told --force).

An entry that sets neither opens the defaults' memory: `install` pins into every entry what is set as it
runs, so an entry without them was installed with nothing set, and a client started from the desktop has
none of a shell's variables (one started from a shell that sets them may differ: set them in the entries).
Standard library (and platformdirs) only, like the rest of install and doctor.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import (
    CLIENTS,
    PINNED,
    SERVER_NAME,
    Client,
    Scope,
    is_our_hook,
    is_our_program,
    is_our_server,
    pinned_env,
    shell_words,
)

USER, DATA_DIR = PINNED


@dataclass(frozen=True)
class Memory:
    user: str
    data_dir: str

    def __str__(self) -> str:
        return f"user {self.user!r} in {self.data_dir}"


@dataclass(frozen=True)
class Entry:
    client: str  # a name of CLIENTS, or "claude-desktop"
    scope: Scope
    what: str  # "MCP server" or "hooks"
    file: Path
    memory: Memory

    @property
    def where(self) -> str:
        title = CLIENTS[self.client].title if self.client in CLIENTS else "Claude Desktop"
        return f"{title} ({self.scope} scope) {self.what}, {self.file}"


def _setting(env: Mapping[str, str], name: str) -> str | None:
    """A setting as the entry sets it (names match case-insensitively, as pydantic-settings reads them)."""
    return next((value for key, value in env.items() if key.upper() == name and value), None)


def default_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers): as config/settings.py
        return "default"


def resolve(env: Mapping[str, str]) -> Memory:
    """The memory a process started with `env` (and no other MCP_MEMORY_ variables) opens."""
    import platformdirs

    data_dir = _setting(env, DATA_DIR) or platformdirs.user_data_dir("mcp-memory", appauthor=False)
    return Memory(_setting(env, USER) or default_user(), os.path.abspath(os.path.expanduser(data_dir)))


def this_install() -> Memory:
    """The memory the entries `install` writes now open."""
    return resolve(pinned_env())


def of_server(entry: Mapping[str, Any]) -> Memory:
    env = entry.get("env", entry.get("environment"))  # OpenCode's name for it
    return resolve({str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {})


def of_hook(command: str) -> Memory:
    assignments: dict[str, str] = {}
    for word in shell_words(command) or []:
        name, equals, value = word.partition("=")
        if not equals or not name.isidentifier():
            break  # the program: assignments only come before it
        assignments[name] = value
    return resolve(assignments)


def claude_desktop_config(home: Path) -> Path:
    """Claude Desktop's claude_desktop_config.json on this platform (Linux: the unofficial builds' place)."""
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if os.name == "nt":
        return (
            Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
            / "Claude"
            / "claude_desktop_config.json"
        )
    return (
        Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"
    )


def installed(home: Path, project: Path) -> list[Entry]:
    """Every entry of ours, of every client, in both scopes (the project's: `project`), and Claude Desktop's."""
    entries: list[Entry] = []
    scopes: tuple[tuple[Scope, Path], ...] = (("user", home), ("project", project))
    if project == home:  # the home directory's project files are the user scope's (Claude Code's hooks)
        scopes = scopes[:1]
    for client in CLIENTS.values():
        for scope, root in scopes:
            entries += _of_client(client, scope, root)
    desktop = claude_desktop_config(home)
    server = _server_of(_read(desktop, "json"), "mcpServers")
    if server is not None:
        entries.append(Entry("claude-desktop", "user", "MCP server", desktop, of_server(server)))
    return entries


def _of_client(client: Client, scope: Scope, root: Path) -> Iterator[Entry]:
    mcp_file, hooks_file = client.mcp_file(scope, root), client.hooks_file(scope, root)
    server = _server_of(_read(mcp_file, client.mcp_format), client.servers_key)
    if server is not None:
        yield Entry(client.name, scope, "MCP server", mcp_file, of_server(server))
    hooks = _read(hooks_file, "json").get("hooks")
    seen: set[Memory] = set()
    for items in hooks.values() if isinstance(hooks, dict) else ():
        for item in items if isinstance(items, list) else ():
            inner = item.get("hooks") if client.nested_hooks and isinstance(item, dict) else [item]
            for hook in inner if isinstance(inner, list) else ():
                if is_our_hook(hook, client.name):
                    seen.add(of_hook(hook["command"]))
    for memory in sorted(seen, key=str):
        yield Entry(client.name, scope, "hooks", hooks_file, memory)


def _server_of(config: dict[str, Any], key: str) -> dict[str, Any] | None:
    servers = config.get(key)
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict):
        return None
    command = entry.get("command")  # OpenCode's is a list of words
    words = [w for w in command if isinstance(w, str)] if isinstance(command, list) else []
    return entry if is_our_server(entry) or is_our_program(words) else None


def _read(path: Path, form: str) -> dict[str, Any]:
    """A client's file; {} when it is missing or is not a JSON or TOML object (doctor says why)."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # as install reads it
    except (OSError, UnicodeDecodeError):
        return {}
    try:
        if form == "toml":
            import tomllib

            data: object = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError:  # json's and tomllib's errors
        return {}
    return data if isinstance(data, dict) else {}


def memories(entries: list[Entry]) -> list[Memory]:
    """The distinct memories the entries open, in the order first met."""
    return list(dict.fromkeys(entry.memory for entry in entries))
