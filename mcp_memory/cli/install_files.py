"""The files `install` edits, read once per run and written only when every edit is known (install.py):
a JSON or TOML document as read and as it will be, and the server entry we want in it.

Standard library only (TOML read with tomllib, written by toml_tables.py when Codex's file changes).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import SERVER_NAME, Client, JsonObject, is_our_server, server_env


class ConfigError(Exception):
    """A file install cannot edit safely; the message names it and says why."""


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


def wanted_server(
    existing: Any, client: Client, program: list[str], where: Path, server: str | None = None
) -> JsonObject:
    """Our entry; an entry of ours already there keeps its other keys and its other variables."""
    if existing is not None and not is_our_server(existing):
        command = existing.get("command") if isinstance(existing, dict) else existing
        raise ConfigError(
            f'{where} already has an MCP server named "{SERVER_NAME}" that is not mcp-memory\'s '
            f"(command: {command!r}); rename or remove it, then run install again"
        )
    wanted = client.server_entry(program, server_env(), server)
    if isinstance(existing, dict):
        env = existing.get("env")
        wanted = {**existing, **wanted, "env": {**(env if isinstance(env, dict) else {}), **wanted["env"]}}
    return wanted
