"""`mcp-memory install <client> --server URL` and doctor's memory-server section, on real files in a
temporary home: every hook command carries `--server URL`, the MCP entry runs `serve --server URL` and
keeps its conventions, Codex's trust follows the new commands, --uninstall takes it all back, an unusable
URL is refused with nothing changed, and doctor says who is signed in, what waits and why."""

from __future__ import annotations

import argparse
import json
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.cli import codex_trust, doctor, install
from mcp_memory.cli.install_clients import shell_words
from mcp_memory.remote import outbox, places

URL = "https://memory.example.com"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "data"))
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "MCP_MEMORY_USER_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def run(command: str, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mcp-memory")
    commands = parser.add_subparsers(dest="command")
    install.add_parser(commands)
    doctor.add_parser(commands)
    args = parser.parse_args([command, *argv])
    return install.run(args) if command == "install" else doctor.run(args)


def commands_of(hooks: dict[str, Any]) -> list[str]:
    return [entry["command"] for items in hooks.values() for item in items for entry in item["hooks"]]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_claude_code_hooks_and_server_entry_point_at_the_server(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("install", "claude-code", "--server", "https://Memory.Example.com/mcp/") == 0
    printed = capsys.readouterr().out
    assert f"Not signed in to {URL} yet: run `mcp-memory login {URL}`" in printed
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert len(hooks) == 7
    for command in commands_of(hooks):
        words = shell_words(command)
        assert words is not None and words[-2:] == ["--server", URL], command
        assert words[words.index("hook") + 1] == "claude-code" and "--event" in words
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["memory"]
    assert entry["type"] == "stdio" and entry["args"][-3:] == ["serve", "--server", URL]
    assert entry["env"] == {
        "MCP_MEMORY_HOOKS__CAPTURE": "true",
        "MCP_MEMORY_DATA_DIR": str(home.parent / "data"),
    }

    # Local again: the same entries, without the server.
    assert run("install", "claude-code") == 0
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert len(hooks) == 7 and not any("--server" in c for c in commands_of(hooks))
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["memory"]["args"][-1] == "serve"


def test_gemini_and_codex_with_a_server_and_uninstall(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = files(home)
    assert run("install", "gemini", "--server", URL) == 0
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert all(c.endswith(f'--server "{URL}"') for c in commands_of(settings["hooks"]))
    assert settings["mcpServers"]["memory"]["args"][-3:] == ["serve", "--server", URL]

    assert run("install", "codex", "--server", URL, "--trust") == 0
    hooks_file = home / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())["hooks"]
    assert all(c.endswith(f'--server "{URL}"') for c in commands_of(hooks))
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["memory"]["args"][-3:] == ["serve", "--server", URL]
    ours = codex_trust.our_hooks(hooks_file, json.loads(hooks_file.read_text()))
    assert codex_trust.trust_report(ours, config)["status"] == "trusted"  # hashes of the new commands

    assert run("install", "codex", "--uninstall", "--server", URL) == 0
    assert run("install", "gemini", "--uninstall") == 0
    assert files(home) == before


def test_an_unusable_server_url_is_refused_and_nothing_changes(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in ("memory.example.com", "ftp://memory.example.com", "https://"):
        assert run("install", "claude-code", "--server", url) == 2
        said = capsys.readouterr().err
        assert "is not a memory server's URL" in said and "Nothing was changed." in said and len(said) < 300
    assert files(home) == {}


def test_doctor_names_the_server_who_is_signed_in_and_what_waits_and_why(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert run("install", "claude-code", "--server", URL) == 0
    assert run("install", "opencode", "--server", URL) == 0
    capsys.readouterr()
    assert run("doctor") == 0
    text = capsys.readouterr().out
    assert f"memory server {URL}" in text and f"not signed in: run `mcp-memory login {URL}`" in text
    assert "last delivery: none yet" in text and "outbox: empty" in text
    assert "courier: not running (the next hook starts it)" in text

    places.cache_token(data, URL, places.CachedToken("t", time.time() - 60, "alice@example.com"))
    for n in range(3):
        outbox.write(data, URL, {"client": "cursor", "kind": "prompt", "session_id": "s", "prompt": f"p{n}"})
    now = time.time()
    outbox.record_status(
        data,
        URL,
        last_delivery_at=now - 7200,
        last_delivery_count=5,
        last_error="the server cannot be reached: [Errno 111] Connection refused",
        last_error_at=now - 30,
    )
    lock = outbox.hold_lock(data, URL)  # a courier runs
    try:
        assert run("doctor") == 0
        text = capsys.readouterr().out
        assert run("doctor", "--json") == 0
        report = json.loads(capsys.readouterr().out)
    finally:
        assert lock is not None
        outbox.release_lock(lock)
    assert text.count(f"memory server {URL}") == 1  # two clients, one server
    assert "signed in as alice@example.com; the token expired, refreshed by the next delivery" in text
    assert "last delivery: " in text and "(2 h ago), 5 events" in text
    assert "outbox: 3 events waiting, the oldest" in text
    assert "why: the server cannot be reached: [Errno 111] Connection refused (30 s ago)" in text
    assert "courier: running" in text
    (server,) = report["servers"]
    assert server["url"] == URL and server["outbox"] == 3 and server["courier_running"] is True

    places.cache_token(data, URL, places.CachedToken("t", None, "alice@example.com"))
    assert run("doctor") == 0
    assert "signed in as alice@example.com; the token does not expire" in capsys.readouterr().out

    # The courier's verdict: the sign-in was refused. Doctor says so, not "refreshed by the next delivery".
    places.cache_token(data, URL, places.CachedToken("t", time.time() - 60, "alice@example.com"))
    outbox.record_status(
        data,
        URL,
        state="signed out",
        last_error=f"signed out (invalid_grant): run mcp-memory login {URL}",
        last_error_at=time.time(),
    )
    assert run("doctor") == 0
    text = capsys.readouterr().out
    assert (
        f"signed out: the sign-in as alice@example.com is no longer accepted; run `mcp-memory login {URL}`; "
        "until then nothing is delivered or recalled"
    ) in text
    assert "refreshed by the next delivery" not in text

    # Signed in again: the verdict is over, and the backlog is the courier's (one runs here: none started).
    lock = outbox.hold_lock(data, URL)
    try:
        assert outbox.signed_in(data, URL) == 3
        assert outbox.status(data, URL)["state"] == "signed in again"
        assert run("doctor") == 0
        assert "signed out" not in capsys.readouterr().out.split("outbox:")[0]
    finally:
        assert lock is not None
        outbox.release_lock(lock)
