"""`mcp-memory install <client> [--scope user|project] [--uninstall]`: the MCP server entry and the hooks,
written into the coding agent's own files (install_clients.py says which files and shapes).

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
import copy
import json
import os
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import (
    CLIENTS,
    SERVER_NAME,
    Client,
    JsonObject,
    OpenCode,
    Scope,
    codex_dir,
    find_program,
    hook_command,
    is_our_hook,
    is_our_server,
    server_env,
    shell_word,
)

BACKUP_SUFFIX = ".mcp-memory.bak"
# Codex's hooks feature flag, on by default in current releases; the comment marks the line as ours.
CODEX_FLAG_LINE = "hooks = true  # added by mcp-memory install\n"
# The name earlier installs wrote, which Codex 0.171 calls deprecated (a warning on every run): migrated.
CODEX_OLD_FLAG_LINE = "codex_hooks = true  # added by mcp-memory install\n"
CODEX_SERVER_TABLE = ("mcp_servers", SERVER_NAME)
CODEX_TRUST_COMMENT = "# Codex's trust of the mcp-memory hooks (mcp-memory install --trust)\n"


class ConfigError(Exception):
    """A file install cannot edit safely; the message names it and says why."""


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


@dataclass
class Document:
    """One file, as read, and what install makes of it."""

    path: Path
    existed: bool
    text: str
    new_text: str | None = None  # None: unchanged
    delete: bool = False
    done: list[str] = field(default_factory=list)  # what changed, in words


@dataclass
class JsonDocument(Document):
    data: JsonObject = field(default_factory=dict)
    original: JsonObject = field(default_factory=dict)
    skeleton: JsonObject = field(default_factory=dict)

    def settle(self, uninstall: bool) -> None:
        """Decide what to write: nothing when the content is as it was, nothing left after uninstall."""
        if self.data == self.original:
            return
        leftover = {k: v for k, v in self.data.items() if self.skeleton.get(k, object()) != v}
        if uninstall and not leftover:
            self.delete = True
        else:
            self.new_text = json.dumps(self.data, indent=2, ensure_ascii=False) + "\n"


@dataclass
class TomlDocument(Document):
    config: dict[str, Any] = field(default_factory=dict)


class Files:
    """The documents of one run, each read once (Gemini keeps its server and hooks in one file)."""

    def __init__(self) -> None:
        self.documents: dict[Path, Document] = {}

    def json(self, path: Path, skeleton: JsonObject | None = None) -> JsonDocument:
        if path not in self.documents:
            text = _read(path)
            try:
                data = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError as e:
                raise ConfigError(f"{path} is not valid JSON ({e}); fix it and run install again") from None
            if not isinstance(data, dict):
                raise ConfigError(f"{path} holds JSON but not an object; fix it and run install again")
            existed = path.exists()
            if not existed:
                data = copy.deepcopy(skeleton or {})
            self.documents[path] = JsonDocument(
                path, existed, text, data=data, original=copy.deepcopy(data), skeleton=skeleton or {}
            )
        document = self.documents[path]
        assert isinstance(document, JsonDocument)
        return document

    def text(self, path: Path) -> Document:
        """A file taken whole (OpenCode's plugin)."""
        if path not in self.documents:
            self.documents[path] = Document(path, path.exists(), _read(path))
        return self.documents[path]

    def toml(self, path: Path) -> TomlDocument:
        import tomllib

        text = _read(path)
        try:
            config = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path} is not valid TOML ({e}); fix it and run install again") from None
        document = TomlDocument(path, path.exists(), text, config=config)
        self.documents[path] = document
        return document


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} cannot be read ({e})") from None


def run(args: argparse.Namespace) -> int:
    client = CLIENTS[args.client]
    if args.scope == "user" and args.project:
        print("mcp-memory install: --project goes with --scope project", file=sys.stderr)
        return 2
    scope: Scope = args.scope or ("project" if args.project else "user")
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
            install(client, scope, root, program, files, _consent(args), notes)
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
    for note in notes:
        print(note)
    if not args.uninstall:
        print(
            f"Start a new {client.title} session to load them; `mcp-memory doctor` shows what is installed."
        )
    return 0


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


Consent = Callable[[int], bool]


def _consent(args: argparse.Namespace) -> Consent:
    """Whether the user lets install trust `count` Codex hooks: --trust, or a yes typed in a terminal."""

    def ask(count: int) -> bool:
        if args.trust:
            return True
        if not sys.stdin.isatty():
            return False
        answer = input(f"Codex runs hooks only once trusted. Trust the {count} mcp-memory hooks now? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    return ask


def install(
    client: Client,
    scope: Scope,
    root: Path,
    program: list[str],
    files: Files,
    consent: Consent = lambda count: False,
    notes: list[str] | None = None,
) -> None:
    if isinstance(client, OpenCode):  # a plugin file, not hook entries
        from mcp_memory.cli import install_opencode

        try:
            return install_opencode.install(client, scope, root, program, files)
        except install_opencode.OpenCodeConfigError as e:
            raise ConfigError(str(e)) from None
    hooks = files.json(client.hooks_file(scope, root), client.hooks_skeleton)
    put_hooks(hooks, client, program)
    if client.mcp_format == "toml":
        config = files.toml(client.mcp_file(scope, root))
        put_codex_config(config, client, program)
        note = put_codex_trust(files, scope, hooks, config, consent)
        if note and notes is not None:
            notes.append(note)
    else:
        put_server(files.json(client.mcp_file(scope, root)), client, program)
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


def put_hooks(document: JsonDocument, client: Client, program: list[str]) -> None:
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
            client.hook_item(hook_command(program, client.name, event.name), event),
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


def _wanted_server(existing: Any, client: Client, program: list[str], where: Path) -> JsonObject:
    """Our entry; an entry of ours already there keeps its other keys and its other variables."""
    if existing is not None and not is_our_server(existing):
        command = existing.get("command") if isinstance(existing, dict) else existing
        raise ConfigError(
            f'{where} already has an MCP server named "{SERVER_NAME}" that is not mcp-memory\'s '
            f"(command: {command!r}); rename or remove it, then run install again"
        )
    wanted = client.server_entry(program, server_env())
    if isinstance(existing, dict):
        env = existing.get("env")
        wanted = {**existing, **wanted, "env": {**(env if isinstance(env, dict) else {}), **wanted["env"]}}
    return wanted


def put_server(document: JsonDocument, client: Client, program: list[str]) -> None:
    servers = _servers(document, client.servers_key, create=True)
    assert servers is not None
    wanted = _wanted_server(servers.get(SERVER_NAME), client, program, document.path)
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


# Codex's config.toml -----------------------------------------------------------------------------


def codex_user_config() -> Path:
    """Codex's own config.toml ($CODEX_HOME or ~/.codex), where it keeps the trust of every hook."""
    return codex_dir("user", Path.home()) / "config.toml"


def _has_line(text: str, line: str) -> bool:
    return any(b.rstrip("\r\n") == line.rstrip("\n") for b in text.splitlines())


def put_codex_config(document: TomlDocument, client: Client, program: list[str]) -> None:
    from mcp_memory.cli import toml_tables

    servers = document.config.get("mcp_servers", {})
    existing = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    wanted = _wanted_server(existing, client, program, document.path)
    text = document.text
    if existing != wanted:
        text = toml_tables.remove_tables(text, CODEX_SERVER_TABLE)
        try:
            text = toml_tables.append(text, toml_tables.render_table(CODEX_SERVER_TABLE, wanted))
        except TypeError as e:
            raise ConfigError(f"{document.path}: [mcp_servers.{SERVER_NAME}] {e}") from None
        document.done.append(f"[mcp_servers.{SERVER_NAME}]")
    features = document.config.get("features", {})
    features = features if isinstance(features, dict) else {}
    if _has_line(text, CODEX_OLD_FLAG_LINE):  # an earlier install's line: the flag's current name
        text = toml_tables.remove_line(text, CODEX_OLD_FLAG_LINE)
        document.done.append("[features] codex_hooks (deprecated) removed")
        features = {k: v for k, v in features.items() if k != "codex_hooks"}
    flag = features.get("hooks", features.get("codex_hooks"))
    if flag is None:
        inserted = toml_tables.insert_after_header(text, ("features",), CODEX_FLAG_LINE)
        text = (
            inserted if inserted is not None else toml_tables.append(text, "[features]\n" + CODEX_FLAG_LINE)
        )
        document.done.append("[features] hooks = true")
    elif flag is False:
        document.done.append(
            "hooks are off in [features] (false): Codex runs no hooks until you turn them on"
        )
    elif "hooks" not in features:
        document.done.append(
            "left your [features] codex_hooks: Codex warns on every run that it is deprecated; rename it hooks"
        )
    _check_codex_edit(document, text, wanted)


def remove_codex_config(document: TomlDocument, states: frozenset[str] = frozenset()) -> None:
    """Our server, our features line, and (when this is the user's file) the trust of our hooks."""
    from mcp_memory.cli import toml_tables

    servers = document.config.get("mcp_servers", {})
    existing = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    text = document.new_text if document.new_text is not None else document.text
    theirs = existing if existing is not None and not is_our_server(existing) else None
    if theirs is not None:
        document.done.append(f"left [mcp_servers.{SERVER_NAME}]: it is not mcp-memory's")
    elif existing is not None:
        text = toml_tables.remove_tables(text, CODEX_SERVER_TABLE)
        document.done.append(f"removed [mcp_servers.{SERVER_NAME}]")
    for line, name in ((CODEX_FLAG_LINE, "hooks"), (CODEX_OLD_FLAG_LINE, "codex_hooks")):
        if _has_line(text, line):  # the line install added (its comment says so)
            text = toml_tables.remove_line(text, line)
            document.done.append(f"removed [features] {name}")
    _check_codex_edit(document, _ending_as(document.text, text), theirs, states)
    if document.new_text is not None and not document.new_text.strip():  # it held nothing but ours
        document.new_text, document.delete = None, True


def _ending_as(original: str, text: str) -> str:
    """`text` without the blank lines at its end that removing our tables left (the user's file had none)."""
    if text.strip() and not original.endswith("\n\n"):
        return text.rstrip("\n") + ("\n" if original.endswith("\n") or not original else "")
    return text


def put_codex_trust(
    files: Files, scope: Scope, hooks: JsonDocument, config: TomlDocument, consent: Consent
) -> str | None:
    """Trust our hooks in Codex's config.toml when the user consents; else what they must do (None: they
    are trusted already). Entries for where our hooks were before are replaced."""
    from mcp_memory.cli import codex_trust, toml_tables

    now = codex_trust.our_hooks(hooks.path, hooks.data)
    before = codex_trust.our_hooks(hooks.path, hooks.original)
    target = config if scope == "user" and config.path == codex_user_config() else None
    document = target or Files().toml(codex_user_config())  # registered below, if it changes
    if codex_trust.trust_report(now, document.config)["status"] in ("trusted", "no hooks"):
        return None
    if not consent(len(now)):
        return codex_trust.how_to_trust(len(now), "" if scope == "user" else " --scope project")
    document = target or files.toml(codex_user_config())
    keys = frozenset(h.key for h in before + now)
    text = document.new_text if document.new_text is not None else document.text
    for key in keys:
        text = toml_tables.remove_tables(text, (*codex_trust.STATE_TABLE, key))
    text = toml_tables.remove_line(text, CODEX_TRUST_COMMENT)
    block = "\n".join(
        toml_tables.render_table((*codex_trust.STATE_TABLE, h.key), {"trusted_hash": h.hash}) for h in now
    )
    text = toml_tables.append(text, CODEX_TRUST_COMMENT + block)
    _check_trust_edit(document, text, keys, {h.key: h.hash for h in now})
    document.done.append(f"trusted {len(now)} hooks ([hooks.state])")
    return None


def remove_codex_trust(document: TomlDocument, keys: frozenset[str]) -> None:
    """Without the trust of our hooks (their keys as they were before uninstall removed them)."""
    from mcp_memory.cli import codex_trust, toml_tables

    text = document.new_text if document.new_text is not None else document.text
    held = [k for k in keys if k in codex_trust.trusted_hashes(document.config)]
    if not held:
        return
    for key in held:
        text = toml_tables.remove_tables(text, (*codex_trust.STATE_TABLE, key))
    text = toml_tables.remove_line(text, CODEX_TRUST_COMMENT)
    _check_trust_edit(document, _ending_as(document.text, text), keys, {})
    document.done.append(f"removed the trust of {len(held)} hooks ([hooks.state])")


def _check_trust_edit(
    document: TomlDocument, text: str, keys: frozenset[str], wanted: dict[str, str]
) -> None:
    """The edited text parses, trusts exactly `wanted` among `keys`, and holds everything else as before."""
    import tomllib

    from mcp_memory.cli import codex_trust

    before = tomllib.loads(document.new_text) if document.new_text is not None else document.config
    try:
        edited = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        edited = {}
    ours = {k: v for k, v in codex_trust.trusted_hashes(edited).items() if k in keys}
    if (
        not edited
        or ours != wanted
        or _others(edited, keys, codex=False) != _others(before, keys, codex=False)
    ):
        raise ConfigError(
            f"{document.path} defines [hooks.state] in a form install cannot edit as text; trust the hooks "
            "in Codex instead (start codex, type /hooks)"
        )
    document.new_text = text


def _check_codex_edit(
    document: TomlDocument, text: str, server: Any, states: frozenset[str] = frozenset()
) -> None:
    """The edited text parses, holds `server` as [mcp_servers.memory], and everything else as it was."""
    import tomllib

    if text == document.text:
        return
    try:
        edited = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        edited = {"error": str(e)}
    servers = edited.get("mcp_servers", {})
    if servers.get(SERVER_NAME) != server or _others(edited, states) != _others(document.config, states):
        raise ConfigError(
            f"{document.path} defines [mcp_servers.{SERVER_NAME}] or [features] in a form install cannot "
            "edit as text; edit them by hand (docs/install.md shows the lines)"
        )
    document.new_text = text


def _others(
    config: dict[str, Any], states: frozenset[str] = frozenset(), codex: bool = True
) -> dict[str, Any]:
    """The configuration without what install writes (with `codex`: our server and features flag; the trust
    of the hooks in `states`), and without the tables that leaves empty."""
    others = copy.deepcopy(config)
    removed: list[tuple[tuple[str, ...], str]] = [(("hooks", "state"), key) for key in states]
    if codex:
        removed += [(("mcp_servers",), SERVER_NAME), (("features",), "codex_hooks"), (("features",), "hooks")]
    for path, key in removed:
        tables = [others]
        for part in path:
            inner = tables[-1].get(part)
            if not isinstance(inner, dict):
                break
            tables.append(inner)
        else:
            tables[-1].pop(key, None)
            for depth in range(len(path), 0, -1):  # empty tables go too
                if not tables[depth]:
                    del tables[depth - 1][path[depth - 1]]
    return others


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
