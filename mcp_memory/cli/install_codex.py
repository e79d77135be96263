"""Codex's part of `install`: its config.toml ([mcp_servers.memory], [features] hooks) and the trust
Codex requires before it runs a hook ([hooks.state] entries, computed by codex_trust.py), given only with
the user's consent (--trust, or a yes at the terminal).

Standard library only; toml_tables.py edits the file's text, so the user's comments and order stay.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import SERVER_NAME, Client, Scope, codex_dir, is_our_server
from mcp_memory.cli.install_files import ConfigError, Files, JsonDocument, TomlDocument, wanted_server

# Codex's hooks feature flag, on by default in current releases; the comment marks the line as ours.
CODEX_FLAG_LINE = "hooks = true  # added by mcp-memory install\n"
# The name earlier installs wrote, which Codex 0.171 calls deprecated (a warning on every run): migrated.
CODEX_OLD_FLAG_LINE = "codex_hooks = true  # added by mcp-memory install\n"
CODEX_SERVER_TABLE = ("mcp_servers", SERVER_NAME)
CODEX_TRUST_COMMENT = "# Codex's trust of the mcp-memory hooks (mcp-memory install --trust)\n"


Consent = Callable[[int], bool]


def consent(args: argparse.Namespace) -> Consent:
    """Whether the user lets install trust `count` Codex hooks: --trust, or a yes typed in a terminal."""

    def ask(count: int) -> bool:
        if args.trust:
            return True
        if not sys.stdin.isatty():
            return False
        answer = input(f"Codex runs hooks only once trusted. Trust the {count} mcp-memory hooks now? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    return ask


def codex_user_config() -> Path:
    """Codex's own config.toml ($CODEX_HOME or ~/.codex), where it keeps the trust of every hook."""
    return codex_dir("user", Path.home()) / "config.toml"


def _has_line(text: str, line: str) -> bool:
    return any(b.rstrip("\r\n") == line.rstrip("\n") for b in text.splitlines())


def put_codex_config(
    document: TomlDocument, client: Client, program: list[str], server: str | None = None
) -> None:
    from mcp_memory.cli import toml_tables

    servers = document.config.get("mcp_servers", {})
    existing = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    wanted = wanted_server(existing, client, program, document.path, server)
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
