"""`mcp-memory doctor`: what is installed where, whether it points at a program that exists, when each
client's hooks last fired, whether the resident server answers, how many events wait in the spool, and
whether the store opens; for each memory server an entry points at (team mode), who is signed in, when
the token expires, the last delivery, what waits in the outbox and why, and whether the courier runs;
which files under the data directory another user could read. Read-only, always exits 0; `--json` for machines.

Standard library (and platformdirs) only: it must run even when the rest is broken, and the CLI imports
this module to build its parser, so what only the checks need is imported when they run. It reads the
settings it needs from the environment itself, as mcp_memory/config/ names them (not from .env).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path
from typing import Any

from mcp_memory.cli import doctor_team
from mcp_memory.cli.install_clients import (
    CLIENTS,
    SERVER_NAME,
    Client,
    OpenCode,
    Scope,
    find_program,
    hook_program,
    is_our_hook,
    is_our_server,
    server_of,
)
from mcp_memory.private_files import exposed

Report = dict[str, Any]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = commands.add_parser(
        "doctor", help="check the installed hooks and MCP entries, the resident server and the store"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    report = examine(Path.cwd())
    print(json.dumps(report, indent=2) if args.json else "\n".join(_text(report)))
    return 0


def examine(project: Path) -> Report:
    from mcp_memory.hooks.spool import spool_dir

    data_dir = _data_dir()
    clients = {
        client.name: {
            "user": _installed(client, "user", Path.home()),
            "project": _installed(client, "project", project.resolve()),
            "last_fired": _last_fired(data_dir / "hooks" / "fired" / f"{client.name}.json"),
        }
        for client in CLIENTS.values()
    }
    return {
        "program": find_program(),
        "data_dir": str(data_dir),
        "clients": clients,
        "servers": [doctor_team.examine(data_dir, url) for url in doctor_team.servers_named(clients)],
        "memories": _memories(project),
        "resident_server": _resident_server(data_dir),
        "spool": _spool(spool_dir(data_dir)),
        "store": _store(data_dir),
        "exposed": [f"{path} ({mode:o})" for path, mode in exposed(data_dir)],
    }


# Settings, read as mcp_memory/config/ reads them -----------------------------------------------


def _env(name: str) -> str | None:
    """A setting's environment variable; pydantic-settings matches their names case-insensitively."""
    wanted = name.upper()
    return next((value for key, value in os.environ.items() if key.upper() == wanted and value), None)


def _data_dir() -> Path:
    import platformdirs

    return Path(_env("MCP_MEMORY_DATA_DIR") or platformdirs.user_data_dir("mcp-memory", appauthor=False))


# What is installed -------------------------------------------------------------------------------


def _installed(client: Client, scope: Scope, root: Path) -> Report:
    if isinstance(client, OpenCode):  # a plugin file, not hook entries
        from mcp_memory.cli import install_opencode

        return install_opencode.installed(client, scope, root, _program)
    report: Report = {"server": _server(client, scope, root), "hooks": _hooks(client, scope, root)}
    if client.mcp_format == "toml":
        report["hooks_feature"] = _codex_feature(client.mcp_file(scope, root))
        report["trust"] = _codex_trust(client, scope, root)
    return report


def _server(client: Client, scope: Scope, root: Path) -> Report:
    path = client.mcp_file(scope, root)
    report: Report = {"file": str(path), "installed": False}
    if not path.exists():
        return report
    config, error = _read(path, client.mcp_format)
    if error:
        return {**report, "error": error}
    servers = config.get(client.servers_key)
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if entry is None:
        return report
    if not is_our_server(entry):
        return {**report, "other": f'a server named "{SERVER_NAME}" that is not mcp-memory\'s'}
    args = entry.get("args") if isinstance(entry.get("args"), list) else []
    env = entry.get("env") if isinstance(entry.get("env"), dict) else {}
    return {
        **report,
        "installed": True,
        "team_server": server_of([str(a) for a in args]),
        "command": [entry["command"], *map(str, args)],
        "program": _program(entry["command"]),
        "capture": str(env.get("MCP_MEMORY_HOOKS__CAPTURE", "")).lower() == "true",
    }


def _hooks(client: Client, scope: Scope, root: Path) -> Report:
    path = client.hooks_file(scope, root)
    report: Report = {"file": str(path), "events": [], "expected": [e.name for e in client.events]}
    if not path.exists():
        return report
    document, error = _read(path, "json")
    if error:
        return {**report, "error": error}
    hooks = document.get("hooks")
    found: dict[str, str] = {}  # event -> the command of our hook
    for event, items in (hooks if isinstance(hooks, dict) else {}).items():
        for item in items if isinstance(items, list) else []:
            entries = item.get("hooks") if client.nested_hooks and isinstance(item, dict) else [item]
            for entry in entries if isinstance(entries, list) else []:
                if is_our_hook(entry, client.name):
                    found[event] = entry["command"]
    programs = sorted({program[0] for program in map(hook_program, found.values()) if program})
    servers = doctor_team.hook_servers(found.values())
    return {
        **report,
        "events": sorted(found),
        "programs": [_program(p) for p in programs],
        "servers": servers,
    }


def _codex_feature(path: Path) -> bool | None:
    """Codex's `[features] hooks` (or its older name `codex_hooks`); None when not set."""
    features = _read(path, "toml")[0].get("features") if path.exists() else None
    if not isinstance(features, dict):
        return None
    flag = features.get("hooks", features.get("codex_hooks"))
    return flag if isinstance(flag, bool) else None


def _codex_trust(client: Client, scope: Scope, root: Path) -> Report | None:
    """Whether Codex trusts our hooks (it runs no other): their [hooks.state] entries in Codex's own
    config.toml against the hash of each hook as installed now (mcp_memory/cli/codex_trust.py)."""
    from mcp_memory.cli import codex_trust
    from mcp_memory.cli.install_codex import codex_user_config

    hooks_file, config_file = client.hooks_file(scope, root), codex_user_config()
    document = _read(hooks_file, "json")[0] if hooks_file.exists() else {}
    hooks = codex_trust.our_hooks(hooks_file, document, client.name)
    if not hooks:
        return None
    config = _read(config_file, "toml")[0] if config_file.exists() else {}
    report = codex_trust.trust_report(hooks, config)
    flag = "" if scope == "user" else " --scope project"
    summary = {
        "trusted": f"trusted: Codex runs all {len(hooks)} hooks",
        "not trusted": "installed, not yet trusted: nothing is captured",
        "modified": "trusted once, but the hooks changed since (their trusted_hash no longer matches): "
        f"Codex skips {', '.join(report['modified'])}, so nothing is captured from them",
        "partly trusted": f"only partly trusted: Codex skips {', '.join(report['untrusted'])}",
    }[report["status"]]
    fix = (
        ""
        if report["status"] == "trusted"
        else f"; run `mcp-memory install codex{flag} --trust` or trust them in codex's /hooks"
    )
    return {**report, "summary": summary + fix, "file": str(config_file)}


def _read(path: Path, form: str) -> tuple[dict[str, Any], str | None]:
    """A client's file, read as install reads it; ({}, why) when it cannot be."""
    from mcp_memory.cli.install_files import ConfigError, Files

    try:
        return (Files().toml(path).config if form == "toml" else Files().json(path).data), None
    except ConfigError as e:
        return {}, str(e)


def _program(command: str) -> Report:
    """Where a command points, and whether a client started from the desktop (another PATH) finds it."""
    if os.path.isabs(command):
        return {"path": command, "exists": Path(command).is_file()}
    found = shutil.which(command)
    return {"path": command, "exists": False, "on_this_path": found}


def _memories(project: Path) -> Report:
    """Whose memory each installed entry opens; more than one is one person split in two."""
    from mcp_memory.cli import identity

    entries = identity.installed(Path.home(), project.resolve())
    return {
        "split": len(identity.memories(entries)) > 1,
        "entries": [
            {
                "where": e.where,
                "client": e.client,
                "scope": e.scope,
                "user": e.memory.user,
                "data_dir": e.memory.data_dir,
            }
            for e in entries
        ],
    }


# Runtime -----------------------------------------------------------------------------------------


def _last_fired(path: Path) -> Report | None:
    """The hook runner's note of its last event: {"event", "at", "ok", "error"}."""
    try:
        fired = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return fired if isinstance(fired, dict) else None


def _resident_server(data_dir: Path) -> Report:
    import socket

    family = getattr(socket, "AF_UNIX", None)
    if family is None:
        return {"socket": None, "running": False, "error": "no Unix sockets on this system"}
    from mcp_memory.hooks.daemon import socket_path  # POSIX only (fcntl), and not needed for the rest

    path = socket_path(data_dir)  # <data dir>/hooks/server.sock, elsewhere when that path is too long
    report: Report = {"socket": str(path), "running": False}
    if not path.exists():
        return report
    with socket.socket(family, socket.SOCK_STREAM) as connection:
        connection.settimeout(0.5)
        try:
            connection.connect(str(path))
        except OSError as e:
            return {**report, "error": f"the socket is there but nothing answers ({e.strerror or e})"}
    return {**report, "running": True}


def _spool(folder: Path) -> Report:
    from datetime import UTC, datetime

    events = list(folder.glob("*.json")) if folder.is_dir() else []
    oldest = min((p.stat().st_mtime for p in events), default=None)
    return {
        "folder": str(folder),
        "waiting": len(events),
        "oldest": datetime.fromtimestamp(oldest, UTC).isoformat(timespec="seconds") if oldest else None,
    }


def _store(data_dir: Path) -> Report:
    long_term = _env("MCP_MEMORY_LONG_TERM__BACKEND") or (
        "cosmos" if _env("MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT") else "sqlite"
    )
    working = _env("MCP_MEMORY_WORKING__BACKEND") or (
        "redis" if _env("MCP_MEMORY_WORKING__REDIS_URL") else "sqlite"
    )
    report: Report = {"long_term": long_term, "working": working}
    if "sqlite" not in (long_term, working):
        return report
    import sqlite3

    path = data_dir / (_env("MCP_MEMORY_SQLITE_FILE") or "memory.db")
    report["sqlite_file"] = str(path)
    if not path.exists():
        return {**report, "healthy": None, "detail": "no store yet: the first turn creates it"}
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            rows = [row[0] for row in connection.execute("PRAGMA quick_check(5)")]
        finally:
            connection.close()
    except sqlite3.Error as e:
        return {**report, "healthy": False, "detail": f"cannot be read: {e}"}
    return {**report, "healthy": rows == ["ok"], "detail": "; ".join(rows)}


# The report in words -----------------------------------------------------------------------------


def _text(report: Report) -> list[str]:
    lines = [
        "mcp-memory doctor",
        f"  mcp-memory: {' '.join(report['program'])}",
        f"  data dir:   {report['data_dir']}",
    ]
    for name, client in report["clients"].items():
        lines += ["", f"{CLIENTS[name].title} ({name})"]
        for scope in ("user", "project"):
            lines += _scope_lines(scope, client[scope])
        fired = client["last_fired"]
        lines.append(
            "  hooks last fired: never (no event recorded)"
            if not fired
            else f"  hooks last fired: {fired.get('event')} at {fired.get('at')}, "
            + ("ok" if fired.get("ok") else f"failed: {fired.get('error')}")
        )
    lines += _memory_lines(report["memories"])
    for server in report["servers"]:
        lines += doctor_team.lines(server)
    server, spool, store = report["resident_server"], report["spool"], report["store"]
    lines += [
        "",
        "resident server: " + ("running" if server["running"] else "not running") + f" ({server['socket']})",
    ]
    if server.get("error"):
        lines.append(f"  {server['error']}")
    lines.append(
        f"spooled events waiting: {spool['waiting']}"
        + (f", oldest {spool['oldest']}" if spool["oldest"] else "")
    )
    lines.append(f"store: long-term on {store['long_term']}, working memory on {store['working']}")
    if "sqlite_file" in store:
        health = {True: "healthy", False: "NOT healthy", None: "not created yet"}[store["healthy"]]
        lines.append(f"  {store['sqlite_file']}: {health} ({store['detail']})")
    lines.append(
        "files: private to this user (0600, folders 0700)"
        if not report["exposed"]
        else f"files: {len(report['exposed'])} readable by other users (the next start makes them private): "
        + ", ".join(report["exposed"][:5])
    )
    return lines


def _memory_lines(memories: Report) -> list[str]:
    entries = memories["entries"]
    if not entries:
        return []
    pairs = list(dict.fromkeys((e["user"], e["data_dir"]) for e in entries))
    if not memories["split"]:
        user, data_dir = pairs[0]
        return ["", f"whose memory: every installed entry opens user {user!r} in {data_dir}"]
    lines = ["", f"WARNING: one person, {len(pairs)} memories: the installed entries open different memories"]
    for user, data_dir in pairs:
        lines.append(f"  user {user!r} in {data_dir}:")
        lines += [f"    {e['where']}" for e in entries if (e["user"], e["data_dir"]) == (user, data_dir)]
    lines.append(
        "  Set the same MCP_MEMORY_USER_ID (and MCP_MEMORY_DATA_DIR) in every entry, or none in any, "
        "then run `mcp-memory install <client>` again."
    )
    return lines


def _scope_lines(scope: str, installed: Report) -> list[str]:
    server, hooks = installed["server"], installed["hooks"]
    if not (server["installed"] or hooks["events"] or {"error", "other"} & (server.keys() | hooks.keys())):
        files = dict.fromkeys((server["file"], hooks["file"]))  # Gemini keeps both in one file
        return [f"  {scope} scope: not installed ({', '.join(files)})"]
    lines = [f"  {scope} scope"]
    if server.get("error") or server.get("other"):
        lines.append(f"    MCP server: {server.get('error') or server.get('other')}")
    elif server["installed"]:
        capture = "hooks capture" if server["capture"] else "capture off: the model is asked to call add_turn"
        lines.append(f"    MCP server: {' '.join(server['command'])} {_exists(server['program'])}, {capture}")
        lines.append(f"      in {server['file']}")
    else:
        lines.append(f"    MCP server: not installed ({server['file']})")
    if hooks.get("error"):
        lines.append(f"    hooks: {hooks['error']}")
    elif hooks["events"]:
        missing = sorted(set(hooks["expected"]) - set(hooks["events"]))
        programs = ", ".join(f"{p['path']} {_exists(p)}" for p in hooks["programs"])
        lines.append(f"    hooks: {len(hooks['events'])} of {len(hooks['expected'])} events, run {programs}")
        lines.append(f"      in {hooks['file']}" + (f"; missing {', '.join(missing)}" if missing else ""))
    else:
        lines.append(f"    hooks: not installed ({hooks['file']})")
    if installed.get("hooks_feature") is False:
        lines.append("    [features] hooks = false in config.toml: Codex runs no hooks")
    if installed.get("trust"):
        lines.append(f"    trust: {installed['trust']['summary']}")
    return lines


def _exists(program: Report) -> str:
    if program["exists"]:
        return "(exists)"
    if program.get("on_this_path"):
        return (
            f"(not absolute: found on this shell's PATH at {program['on_this_path']}, a desktop app may not)"
        )
    return "(MISSING: run `mcp-memory install` again)"
