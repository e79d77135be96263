"""`mcp-memory install <client>` and `mcp-memory doctor` on realistic files in a temporary home and project:
the shapes each client's documentation requires (restated here from the docs, not from the code),
every other setting and hook kept, a second run byte for byte the same, a backup of each changed file,
uninstall giving back what was there, and a file that is not valid JSON or TOML refused untouched."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.cli import doctor, install
from mcp_memory.cli.install_clients import CLIENTS, shell_word
from mcp_memory.hooks.daemon import socket_path
from mcp_memory.hooks.events import CLIENTS as HOOK_CLIENTS

ROOT = Path(__file__).resolve().parents[2]
CAPTURE_ENV = {"MCP_MEMORY_HOOKS__CAPTURE": "true"}
SCOPES = ("user", "project")

# What each client's documentation asks for: the events we hook with their timeouts (in the client's
# unit), and whether its hook lists hold matcher groups ({"hooks": [entry]}) or the entries themselves.
EVENTS = {
    "claude-code": {
        "SessionStart": 10,
        "UserPromptSubmit": 10,
        "PostToolUse": 5,
        "PreCompact": 5,
        "Stop": 5,
        "SubagentStop": 5,
        "SessionEnd": 5,
    },
    "cursor": {
        "sessionStart": 10,
        "beforeSubmitPrompt": 10,
        "postToolUse": 5,
        "afterFileEdit": 5,
        "preCompact": 5,
        "stop": 5,
        "sessionEnd": 5,
    },
    "vscode": {
        "SessionStart": 10,
        "UserPromptSubmit": 10,
        "PostToolUse": 5,
        "PreCompact": 5,
        "SubagentStop": 5,
        "Stop": 5,
    },
    "codex": {
        "SessionStart": 10,
        "UserPromptSubmit": 10,
        "PostToolUse": 5,
        "PreCompact": 5,
        "SubagentStop": 5,
        "Stop": 5,
    },
    "copilot": {
        "SessionStart": 10,
        "UserPromptSubmit": 10,
        "PostToolUse": 5,
        "PostToolUseFailure": 5,
        "PreCompact": 5,
        "SubagentStop": 5,
        "Stop": 5,
        "SessionEnd": 5,
    },
    "gemini": {  # milliseconds
        "SessionStart": 10000,
        "BeforeAgent": 10000,
        "AfterAgent": 5000,
        "AfterTool": 5000,
        "SessionEnd": 5000,
    },
}


@pytest.fixture
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An `mcp-memory` first on PATH, in a folder whose name a shell would split and expand."""
    folder = tmp_path / "my tools $HOME"
    folder.mkdir()
    exe = folder / "mcp-memory"
    exe.write_text('#!/bin/sh\nprintf "%s\\n" "$0" "$@"\n')  # says how a shell called it
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return str(exe.resolve())


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "MCP_MEMORY_USER_ID", "MCP_MEMORY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


def run(command: str, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mcp-memory")
    commands = parser.add_subparsers(dest="command")
    install.add_parser(commands)
    doctor.add_parser(commands)
    args = parser.parse_args([command, *argv])
    return install.run(args) if command == "install" else doctor.run(args)


def write(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=4) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


CODEX_CONFIG = """\
# Codex settings, kept by hand
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[mcp_servers.docs]
# the documentation server
command = "npx"
args = ["-y", "docs-mcp@latest"]

[mcp_servers.docs.env]
DOCS_TOKEN = "from-keychain"

# a faster profile for small edits
[profiles.fast]
model = "gpt-5-mini"
"""

CODEX_CONFIG_WITH_FEATURES = (
    CODEX_CONFIG
    + """
[features]
# experiments I keep on
web_search_request = true
"""
)


def seed(client: str, scope: str, home: Path, project: Path) -> dict[Path, Any]:
    """The client's files as a user who already uses it has them: other servers, other hooks."""
    root = home if scope == "user" else project
    their_hook = {"type": "command", "command": "npx prettier --write", "timeout": 30}
    seeded: dict[Path, Any] = {}
    if client == "claude-code":
        mcp = home / ".claude.json" if scope == "user" else project / ".mcp.json"
        seeded[mcp] = {
            "numStartups": 41,
            "mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}},
            "projects": {"/src/app": {"allowedTools": ["Bash(git:*)"]}},
        }
        seeded[root / ".claude" / "settings.json"] = {
            "permissions": {"allow": ["Bash(npm run test:*)"]},
            "hooks": {
                "PostToolUse": [{"matcher": "Edit|Write", "hooks": [their_hook]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}],
            },
        }
    elif client == "cursor":
        seeded[root / ".cursor" / "mcp.json"] = {
            "mcpServers": {"context7": {"url": "https://mcp.context7.com/mcp"}}
        }
        seeded[root / ".cursor" / "hooks.json"] = {
            "version": 1,
            "hooks": {
                "afterFileEdit": [{"command": "./hooks/format.sh"}],
                "beforeShellExecution": [{"command": "./hooks/guard.sh", "timeout": 3}],
            },
        }
    elif client == "vscode":
        mcp = (
            home / ".config" / "Code" / "User" / "mcp.json"
            if scope == "user"
            else project / ".vscode" / "mcp.json"
        )
        seeded[mcp] = {
            "inputs": [{"type": "promptString", "id": "token", "password": True}],
            "servers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}},
        }
        hooks = home / ".copilot" / "hooks" if scope == "user" else project / ".github" / "hooks"
        seeded[hooks / "format.json"] = {"hooks": {"PostToolUse": [their_hook]}}
    elif client == "copilot":
        copilot = home / ".copilot" if scope == "user" else project / ".github"
        seeded[copilot / ("mcp-config.json" if scope == "user" else "mcp.json")] = {
            "mcpServers": {
                "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "tools": ["*"]}
            }
        }
        seeded[copilot / "hooks" / "format.json"] = {"version": 1, "hooks": {"postToolUse": [their_hook]}}
    elif client == "codex":
        codex = root / ".codex"
        seeded[codex / "config.toml"] = CODEX_CONFIG_WITH_FEATURES if scope == "user" else CODEX_CONFIG
        seeded[codex / "hooks.json"] = {
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
        }
    else:
        seeded[root / ".gemini" / "settings.json"] = {
            "ui": {"theme": "GitHub"},
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}
            },
            "hooks": {
                "disabled": ["secret-scanner"],
                "AfterTool": [{"matcher": "write_file", "hooks": [{**their_hook, "name": "prettier"}]}],
            },
        }
    for path, content in seeded.items():
        write(path, content)
    return seeded


def our_command(program: str, client: str, event: str) -> str:
    """`"<absolute path>" hook <client> --event <Event>`, the path in double quotes for a POSIX shell."""
    quoted = "".join("\\" + c if c in '\\"$`' else c for c in program)
    return f'"{quoted}" hook {client} --event {event}'


def hook_lists(client: str, scope: str, home: Path, project: Path) -> dict[str, list[Any]]:
    root = home if scope == "user" else project
    path = {
        "claude-code": root / ".claude" / "settings.json",
        "cursor": root / ".cursor" / "hooks.json",
        "vscode": (root / (".copilot" if scope == "user" else ".github")) / "hooks" / "mcp-memory.json",
        "copilot": (root / (".copilot" if scope == "user" else ".github")) / "hooks" / "mcp-memory.json",
        "codex": root / ".codex" / "hooks.json",
        "gemini": root / ".gemini" / "settings.json",
    }[client]
    document = read_json(path)
    if client in ("cursor", "vscode", "copilot"):
        assert document["version"] == 1
    hooks: dict[str, list[Any]] = document["hooks"]
    return hooks


def server_entry(client: str, scope: str, home: Path, project: Path) -> Any:
    root = home if scope == "user" else project
    if client == "codex":
        return tomllib.loads((root / ".codex" / "config.toml").read_text())["mcp_servers"]["memory"]
    path, key = {
        "claude-code": (home / ".claude.json" if scope == "user" else project / ".mcp.json", "mcpServers"),
        "cursor": (root / ".cursor" / "mcp.json", "mcpServers"),
        "vscode": (
            home / ".config" / "Code" / "User" / "mcp.json"
            if scope == "user"
            else project / ".vscode" / "mcp.json",
            "servers",
        ),
        "gemini": (root / ".gemini" / "settings.json", "mcpServers"),
        "copilot": (
            home / ".copilot" / "mcp-config.json" if scope == "user" else project / ".github" / "mcp.json",
            "mcpServers",
        ),
    }[client]
    return read_json(path)[key]["memory"]


def assert_installed(client: str, scope: str, home: Path, project: Path, program: str) -> None:
    hooks = hook_lists(client, scope, home, project)
    for event, timeout in EVENTS[client].items():
        command = our_command(program, client, event)
        if client in ("cursor", "vscode", "copilot"):
            entry = {"command": command, "timeout": timeout} | (
                {"type": "command"} if client in ("vscode", "copilot") else {}
            )
            assert hooks[event].count(entry) == 1, (event, hooks[event])
        else:
            entry = {"type": "command", "command": command, "timeout": timeout}
            if client == "gemini":
                entry = {"name": "mcp-memory", **entry}
            assert hooks[event].count({"hooks": [entry]}) == 1, (event, hooks[event])
    # A real shell runs the command as the client would: the program, spaces and $ and all, and its words.
    event = next(iter(EVENTS[client]))
    ran = subprocess.run(
        our_command(program, client, event), shell=True, capture_output=True, text=True, check=True
    )
    assert ran.stdout.splitlines() == [program, "hook", client, "--event", event]
    entry = server_entry(client, scope, home, project)
    expected = {"command": program, "args": ["serve"], "env": CAPTURE_ENV}
    if client in ("claude-code", "vscode"):
        expected = {"type": "stdio", **expected}
    if client == "copilot":
        expected = {"type": "local", **expected, "tools": ["*"]}
    assert entry == expected


@pytest.mark.parametrize("scope", SCOPES)
# OpenCode takes a plugin, not hook entries: tests/unit/test_install_opencode.py.
@pytest.mark.parametrize("client", sorted(set(CLIENTS) - {"opencode"}))
def test_install_writes_what_the_client_documents_keeps_the_rest_and_uninstall_gives_it_back(
    client: str, scope: str, home: Path, project: Path, program: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seeded = seed(client, scope, home, project)
    before = {path: path.read_bytes() for path in seeded}
    tree = home.parent

    assert run("install", client, "--scope", scope) == 0
    assert_installed(client, scope, home, project, program)
    printed = capsys.readouterr().out
    for path in seeded:
        backup = path.with_name(path.name + ".mcp-memory.bak")
        if path.read_bytes() != before[path]:
            assert backup.read_bytes() == before[path]  # a backup of each changed file, as it was
            assert str(backup) in printed
        else:
            assert not backup.exists()
    _assert_others_kept(client, seeded)

    first = files(tree)
    assert run("install", client, "--scope", scope) == 0
    assert files(tree) == first  # idempotent: byte for byte

    assert run("install", client, "--scope", scope, "--uninstall") == 0
    for path, content in seeded.items():
        if path.suffix == ".toml":
            assert path.read_text() == content  # comments and all
        else:
            assert read_json(path) == content
    left = {p for p in files(tree) if not p.endswith(".mcp-memory.bak")}
    assert left == {p for p in first if not p.endswith(".mcp-memory.bak")} - _created(first, seeded, tree)


def _created(after_install: dict[str, bytes], seeded: dict[Path, Any], tree: Path) -> set[str]:
    """The files install created (uninstall deletes them again)."""
    return {p for p in after_install if (tree / p) not in seeded and not p.endswith(".mcp-memory.bak")} - {
        p for p in after_install if "my tools" in p
    }


def _assert_others_kept(client: str, seeded: dict[Path, Any]) -> None:
    """Every seeded key, server and hook is still there after install (ours are added beside them)."""
    for path, content in seeded.items():
        if path.suffix == ".toml":
            config = tomllib.loads(path.read_text())
            assert config["mcp_servers"]["docs"] == tomllib.loads(content)["mcp_servers"]["docs"]
            assert config["profiles"] == {"fast": {"model": "gpt-5-mini"}}
            assert config["features"]["hooks"] is True and "codex_hooks" not in config["features"]
            text = path.read_text()
            for comment in (
                "# Codex settings, kept by hand",
                "# the documentation server",
                "# a faster profile",
            ):
                assert comment in text
            continue
        now = read_json(path)
        for key, value in content.items():
            if isinstance(value, dict) and key in ("hooks", "mcpServers", "servers"):
                for name, item in value.items():
                    kept = now[key][name]
                    if isinstance(item, list):  # another hook on an event we hook too stays, first
                        assert kept[: len(item)] == item, (path, name)
                    else:
                        assert kept == item, (path, name)
            else:
                assert now[key] == value, (path, key)


def test_the_clients_are_the_hook_runners_clients() -> None:
    assert set(CLIENTS) == set(HOOK_CLIENTS)


def test_a_file_that_is_not_valid_json_is_refused_and_nothing_changes(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(home / ".claude.json", {"numStartups": 3})
    write(home / ".claude" / "settings.json", '{"hooks": {"Stop": [}\n')
    before = files(home)
    assert run("install", "claude-code") == 2
    assert files(home) == before
    err = capsys.readouterr().err
    assert (
        str(home / ".claude" / "settings.json") in err
        and "not valid JSON" in err
        and "Nothing was changed" in err
    )


def test_a_codex_config_that_is_not_valid_toml_is_refused_and_nothing_changes(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(home / ".codex" / "config.toml", 'model = "gpt-5\n')
    before = files(home)
    assert run("install", "codex") == 2
    assert files(home) == before
    assert "not valid TOML" in capsys.readouterr().err


def test_a_memory_server_that_is_not_ours_is_refused_and_kept(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
    write(project / ".cursor" / "mcp.json", {"mcpServers": {"memory": reference}})
    before = files(project)
    assert run("install", "cursor", "--scope", "project") == 2
    assert files(project) == before
    assert "not mcp-memory's" in capsys.readouterr().err
    assert run("install", "cursor", "--scope", "project", "--uninstall") == 0
    assert read_json(project / ".cursor" / "mcp.json") == {"mcpServers": {"memory": reference}}


def test_an_older_install_is_replaced_not_repeated(home: Path, project: Path, program: str) -> None:
    """Hooks pointing at a moved mcp-memory, and a server entry written by hand from the README, become
    ours: one hook per event, the absolute path, the user's own variables kept."""
    old = '"/opt/old venv/bin/mcp-memory" hook claude-code --event Stop'
    write(
        home / ".claude" / "settings.json",
        {
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": old, "timeout": 5}]}],
                "Notification": [
                    {"hooks": [{"type": "command", "command": old.replace("Stop", "Notification")}]}
                ],
            }
        },
    )
    write(
        home / ".claude.json",
        {
            "mcpServers": {
                "memory": {"command": "mcp-memory", "args": ["serve"], "env": {"MCP_MEMORY_USER_ID": "ann"}}
            }
        },
    )
    assert run("install", "claude-code") == 0
    hooks = read_json(home / ".claude" / "settings.json")["hooks"]
    assert hooks["Stop"] == [
        {"hooks": [{"type": "command", "command": our_command(program, "claude-code", "Stop"), "timeout": 5}]}
    ]
    assert "Notification" not in hooks  # an event this version no longer hooks
    server = read_json(home / ".claude.json")["mcpServers"]["memory"]
    assert server["command"] == program and server["env"] == {"MCP_MEMORY_USER_ID": "ann", **CAPTURE_ENV}


def test_the_user_id_set_at_install_goes_into_the_server_entry(
    home: Path, project: Path, program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_MEMORY_USER_ID", "ann")
    assert run("install", "gemini") == 0
    assert server_entry("gemini", "user", home, project)["env"] == {
        **CAPTURE_ENV,
        "MCP_MEMORY_USER_ID": "ann",
    }


def test_the_data_dir_and_user_set_at_install_reach_the_hooks_run_from_a_desktop_client(
    home: Path, project: Path, program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "my data $HOME"
    monkeypatch.setenv("MCP_MEMORY_USER_ID", "ann")
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(data))
    assert run("install", "claude-code") == 0
    assert server_entry("claude-code", "user", home, project)["env"]["MCP_MEMORY_DATA_DIR"] == str(data)
    command = hook_lists("claude-code", "user", home, project)["Stop"][0]["hooks"][0]["command"]
    # A client started from the desktop has none of the shell's variables: the command carries them.
    clean = {"PATH": "/usr/bin:/bin"}
    shown = subprocess.run(["sh", "-c", command], env=clean, capture_output=True, text=True, check=True)
    assert shown.stdout.splitlines()[0] == program
    prefix = command.split(shell_word(program))[0]  # the assignments, as the shell reads them
    seen = subprocess.run(
        ["sh", "-c", prefix + """ sh -c 'printf "%s|%s" "$MCP_MEMORY_DATA_DIR" "$MCP_MEMORY_USER_ID"'"""],
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    assert seen.stdout == f"{data}|ann"
    assert run("install", "claude-code") == 0  # still recognised as ours: replaced, not repeated
    assert len(hook_lists("claude-code", "user", home, project)["Stop"]) == 1
    assert run("install", "claude-code", "--uninstall") == 0
    assert not (home / ".claude" / "settings.json").exists()  # it held only ours


def test_project_scope_follows_project_dir_and_user_scope_refuses_it(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run("install", "cursor", "--project", str(elsewhere)) == 0
    assert (elsewhere / ".cursor" / "hooks.json").exists() and not (home / ".cursor").exists()
    assert run("install", "cursor", "--scope", "user", "--project", str(elsewhere)) == 2


def test_codex_hooks_turned_off_by_the_user_stay_off(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(home / ".codex" / "config.toml", "[features]\nhooks = false\n")
    assert run("install", "codex") == 0
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["features"] == {"hooks": False}
    assert "Codex runs no hooks until you turn them on" in capsys.readouterr().out


def test_codex_memory_server_defined_inline_is_left_to_the_user(home: Path, project: Path) -> None:
    write(
        home / ".codex" / "config.toml",
        'mcp_servers = { memory = { command = "mcp-memory", args = ["serve"] } }\n',
    )
    before = files(home)
    assert run("install", "codex") == 2
    assert files(home) == before


def test_a_linked_settings_file_is_written_through_its_link(
    home: Path, project: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles" / "gemini-settings.json"
    write(dotfiles, {"ui": {"theme": "GitHub"}})
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").symlink_to(dotfiles)
    assert run("install", "gemini") == 0
    assert (home / ".gemini" / "settings.json").is_symlink()
    assert read_json(dotfiles)["mcpServers"]["memory"]["args"] == ["serve"]


# doctor ------------------------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(data))
    for name in (
        "MCP_MEMORY_LONG_TERM__BACKEND",
        "MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT",
        "MCP_MEMORY_SQLITE_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    return data


def test_doctor_reports_what_is_installed_where_and_when_it_fired(
    home: Path, project: Path, program: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("install", "claude-code") == 0
    assert run("install", "codex", "--scope", "project") == 0
    write(
        data_dir / "hooks" / "fired" / "claude-code.json",
        {"event": "Stop", "at": "2026-05-01T10:00:00+0000", "ok": True},
    )
    write(data_dir / "hooks" / "spool" / "1.json", {"event": "Stop"})
    write(data_dir / "hooks" / "spool" / "2.json", {"event": "PostToolUse"})
    capsys.readouterr()

    assert run("doctor", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    claude = report["clients"]["claude-code"]
    assert claude["user"]["server"]["installed"] and claude["user"]["server"]["capture"]
    assert claude["user"]["server"]["program"] == {"path": program, "exists": True}
    assert sorted(claude["user"]["hooks"]["events"]) == sorted(EVENTS["claude-code"])
    assert claude["user"]["hooks"]["programs"] == [{"path": program, "exists": True}]
    assert not claude["project"]["server"]["installed"] and claude["project"]["hooks"]["events"] == []
    assert claude["last_fired"] == {"event": "Stop", "at": "2026-05-01T10:00:00+0000", "ok": True}
    codex = report["clients"]["codex"]["project"]
    assert codex["server"]["installed"] and codex["hooks_feature"] is True
    assert report["clients"]["cursor"]["last_fired"] is None
    assert report["spool"]["waiting"] == 2
    assert report["resident_server"]["running"] is False
    assert report["store"] == {
        "long_term": "sqlite",
        "working": "sqlite",
        "sqlite_file": str(data_dir / "memory.db"),
        "healthy": None,
        "detail": "no store yet: the first turn creates it",
    }

    assert run("doctor") == 0
    text = capsys.readouterr().out
    assert "hooks: 7 of 7 events" in text and "hooks last fired: Stop at 2026-05-01T10:00:00+0000, ok" in text
    assert "spooled events waiting: 2" in text


def test_doctor_says_when_the_program_is_gone(
    home: Path, project: Path, program: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("install", "cursor") == 0
    Path(program).unlink()
    capsys.readouterr()
    assert run("doctor") == 0
    assert "MISSING" in capsys.readouterr().out


def test_doctor_checks_the_store_and_the_resident_server(
    home: Path, project: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir.mkdir()
    with sqlite3.connect(data_dir / "memory.db") as connection:
        connection.execute("CREATE TABLE turns (id TEXT)")
    path = socket_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(str(path))
        listening.listen()
        report = doctor.examine(project)
    assert report["store"]["healthy"] is True and report["store"]["detail"] == "ok"
    assert report["resident_server"] == {"socket": str(path), "running": True}

    (data_dir / "memory.db").write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    report = doctor.examine(project)
    assert report["store"]["healthy"] is False
    assert report["resident_server"]["running"] is False  # the socket file is there, nothing answers
    path.unlink()


def test_doctor_names_the_backend_of_a_cloud_store(
    home: Path, project: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT", "https://acct.documents.azure.com:443/")
    monkeypatch.setenv("MCP_MEMORY_WORKING__REDIS_URL", "redis://:secret@cache:6379/0")
    report = doctor.examine(project)
    assert report["store"] == {"long_term": "cosmos", "working": "redis"}
    assert "secret" not in json.dumps(report)


def test_install_and_doctor_run_as_the_cli(tmp_path: Path, home: Path) -> None:
    """Through the real command line. This one passes once mcp_memory/cli/__init__.py wires `install` and
    `doctor` in (issue 46); until then the CLI does not know the commands."""
    env = {**os.environ, "HOME": str(home), "MCP_MEMORY_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "install", "claude-code"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert read_json(home / ".claude" / "settings.json")["hooks"]["SessionStart"]
    done = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "doctor", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["clients"]["claude-code"]["user"]["server"]["installed"] is True
