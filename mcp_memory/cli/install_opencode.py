"""OpenCode's part of `mcp-memory install` and `mcp-memory doctor`: a plugin file instead of hook entries.

OpenCode runs no hook commands; it loads every JavaScript/TypeScript file in its plugin folders
(~/.config/opencode/plugins/ for the user, <project>/.opencode/plugins/ for a project:
https://opencode.ai/docs/plugins). Install writes one of its own there, mcp-memory.js, made from
opencode_plugin.js with the absolute program and the pinned settings filled in; it hands each event to
`mcp-memory hook opencode --event NAME`. The MCP server goes into opencode.json, "mcp": {"memory": {"type":
"local", "command": [...], "environment": {...}}} (https://opencode.ai/docs/mcp-servers), in
~/.config/opencode/ (user) or at the project's root.

Standard library only, like install.py. install.py and doctor.py import this module (never the reverse):
it works on install.py's Files through the two methods it needs, and raises OpenCodeConfigError, which
install.py reports as it reports its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from mcp_memory.cli.install_clients import (
    CAPTURE_SECONDS,
    RECALL_SECONDS,
    SERVER_NAME,
    JsonObject,
    OpenCode,
    Scope,
    is_our_program,
    pinned_env,
    server_env,
)


class OpenCodeConfigError(Exception):
    """A file install cannot edit safely; the message names it and says why."""


class Files(Protocol):
    """install.py's Files: each file read once; `json` gives a JsonDocument, `text` a Document."""

    def json(self, path: Path) -> Any: ...

    def text(self, path: Path) -> Any: ...


TEMPLATE = Path(__file__).with_name("opencode_plugin.js")
MARKER = "// mcp-memory: written by `mcp-memory install opencode`"
_PROGRAM = re.compile(r"^const PROGRAM = (.*)$", re.M)
_SERVER = re.compile(r"^const SERVER = (.*)$", re.M)
_EVENTS = re.compile(r'\bhook\(\s*"([a-z.]+)"|capture\(\s*"([a-z.]+)"')


def plugin_text(program: list[str], server: str | None = None) -> str:
    return (
        TEMPLATE.read_text(encoding="utf-8")
        .replace("__PROGRAM__", json.dumps(program))
        .replace("__SERVER__", json.dumps(["--server", server] if server else []))
        .replace("__ENV__", json.dumps(pinned_env()))
        .replace("__RECALL_MS__", str(1000 * RECALL_SECONDS))
        .replace("__CAPTURE_MS__", str(1000 * CAPTURE_SECONDS))
    )


def is_our_plugin(text: str) -> bool:
    return text.startswith(MARKER)


def install(
    client: OpenCode, scope: Scope, root: Path, program: list[str], files: Files, server: str | None = None
) -> None:
    path = client.hooks_file(scope, root)
    document = files.text(path)
    if document.existed and not is_our_plugin(document.text):
        raise OpenCodeConfigError(f"{path} is not mcp-memory's plugin; move it away, then run install again")
    wanted = plugin_text(program, server)
    if document.text != wanted:
        document.new_text = wanted
        document.done.append("plugin " + ", ".join(e.name for e in client.events))
    config = files.json(client.mcp_file(scope, root))
    servers = _servers(config.data, config.path, create=True)
    existing = servers.get(SERVER_NAME)
    if existing is not None and not is_our_server(existing):
        raise OpenCodeConfigError(
            f'{config.path} already has an MCP server named "{SERVER_NAME}" that is not mcp-memory\'s; '
            "rename or remove it, then run install again"
        )
    entry = client.server_entry(program, server_env(), server)
    if isinstance(existing, dict):
        environment = existing.get("environment")
        entry = {
            **existing,
            **entry,
            "environment": {**(environment if isinstance(environment, dict) else {}), **entry["environment"]},
        }
    if existing != entry:
        servers[SERVER_NAME] = entry
        config.done.append(f'MCP server "{SERVER_NAME}"')
    config.settle(uninstall=False)


def uninstall(client: OpenCode, scope: Scope, root: Path, files: Files) -> None:
    document = files.text(client.hooks_file(scope, root))
    if document.existed and is_our_plugin(document.text):
        document.delete = True
        document.done.append("removed the plugin")
    elif document.existed:
        document.done.append("left it: it is not mcp-memory's plugin")
    config = files.json(client.mcp_file(scope, root))
    servers = _servers(config.data, config.path, create=False)
    if servers and SERVER_NAME in servers:
        if is_our_server(servers[SERVER_NAME]):
            del servers[SERVER_NAME]
            if not servers:
                del config.data[client.servers_key]
            config.done.append(f'removed MCP server "{SERVER_NAME}"')
        else:
            config.done.append(f'left MCP server "{SERVER_NAME}": it is not mcp-memory\'s')
    config.settle(uninstall=True)


def installed(
    client: OpenCode, scope: Scope, root: Path, program_report: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """doctor's report for one scope, in the shape doctor gives every client; `program_report` says where
    a command points."""
    path = client.mcp_file(scope, root)
    server: dict[str, Any] = {"file": str(path), "installed": False}
    if path.exists():
        try:
            servers = _servers(_read_json(path), path, create=False)
        except OpenCodeConfigError as e:
            server["error"] = str(e)
            servers = {}
        entry = servers.get(SERVER_NAME)
        if entry is not None and not is_our_server(entry):
            server["other"] = f'a server named "{SERVER_NAME}" that is not mcp-memory\'s'
        elif isinstance(entry, dict):
            environment = entry.get("environment")
            environment = environment if isinstance(environment, dict) else {}
            command = [str(word) for word in entry["command"]]
            server |= {
                "installed": True,
                "command": command,
                "program": program_report(command[0]),
                "capture": str(environment.get("MCP_MEMORY_HOOKS__CAPTURE", "")).lower() == "true",
            }
    plugin = client.hooks_file(scope, root)
    hooks: dict[str, Any] = {"file": str(plugin), "events": [], "expected": [e.name for e in client.events]}
    try:
        text = plugin.read_text(encoding="utf-8") if plugin.is_file() else ""
    except (OSError, UnicodeDecodeError) as e:
        return {"server": server, "hooks": {**hooks, "error": f"{plugin} cannot be read ({e})"}}
    if not text:
        return {"server": server, "hooks": hooks}
    if not is_our_plugin(text):
        return {"server": server, "hooks": {**hooks, "error": f"{plugin} is not mcp-memory's plugin"}}
    found = _PROGRAM.search(text)
    try:
        program = json.loads(found.group(1)) if found else []
    except ValueError:
        program = []
    events = sorted({a or b for a, b in _EVENTS.findall(text)})
    programs = [program_report(program[0])] if program and isinstance(program[0], str) else []
    team = _SERVER.search(text)
    try:
        words = json.loads(team.group(1)) if team else []
    except ValueError:
        words = []
    named = [words[1]] if isinstance(words, list) and len(words) == 2 and isinstance(words[1], str) else []
    return {"server": server, "hooks": {**hooks, "events": events, "programs": programs, "servers": named}}


def is_our_server(entry: object) -> bool:
    """OpenCode's server entry takes the whole command line as a list."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), list):
        return False
    return is_our_program([word for word in entry["command"] if isinstance(word, str)])


def _read_json(path: Path) -> JsonObject:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig") or "{}")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise OpenCodeConfigError(f"{path} cannot be read as JSON ({e})") from None
    if not isinstance(data, dict):
        raise OpenCodeConfigError(f"{path} holds JSON but not an object")
    return data


def _servers(config: JsonObject, path: Path, create: bool) -> JsonObject:
    servers = config.get("mcp")
    if servers is None and create:
        servers = config["mcp"] = {}
    if servers is not None and not isinstance(servers, dict):
        raise OpenCodeConfigError(f'{path}: "mcp" is not an object; fix it and run install again')
    return servers if servers is not None else {}
