"""One person, one memory, whatever the client (issue 55 item 5): every entry install writes, every
hand-written config in the README and Claude Desktop's example open the same memory; doctor lists whose
memory each installed entry opens and warns when they differ; install refuses to split a memory."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from mcp_memory.cli import doctor, identity, install
from mcp_memory.cli.install_clients import server_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USER", "ann")
    monkeypatch.setenv("LOGNAME", "ann")
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "APPDATA", "MCP_MEMORY_USER_ID", "MCP_MEMORY_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(home / "project")
    return home


def run(command: str, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mcp-memory")
    commands = parser.add_subparsers(dest="command")
    install.add_parser(commands)
    doctor.add_parser(commands)
    args = parser.parse_args([command, *argv])
    return install.run(args) if command == "install" else doctor.run(args)


def desktop_config(home: Path, env: dict[str, str] | None) -> Path:
    path = identity.claude_desktop_config(home)
    path.parent.mkdir(parents=True)
    entry: dict[str, object] = {"command": "mcp-memory", "args": ["serve"]}
    if env is not None:
        entry["env"] = env
    path.write_text(json.dumps({"mcpServers": {"memory": entry}}))
    return path


def test_the_readme_and_the_desktop_example_name_no_user_as_install_writes_none(home: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    configs = re.findall(r"<!-- client-config: [\w-]+ -->\n```\w*\n(.*?)```", readme, re.DOTALL)
    assert len(configs) >= 3
    assert not any("MCP_MEMORY_USER_ID" in body for body in configs)
    assert "MCP_MEMORY_USER_ID" not in (ROOT / "claude_desktop_config.example.json").read_text()
    assert "MCP_MEMORY_USER_ID" not in server_env()  # nothing set as install runs: none written


def test_install_beside_the_readme_desktop_config_shares_its_memory(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop_config(
        home,
        json.loads((ROOT / "claude_desktop_config.example.json").read_text())["mcpServers"]["memory"].get(
            "env"
        ),
    )
    assert run("install", "claude-code") == 0
    assert run("install", "gemini", "--scope", "project") == 0
    capsys.readouterr()
    assert run("doctor", "--json") == 0
    memories = json.loads(capsys.readouterr().out)["memories"]
    assert memories["split"] is False
    assert {e["client"] for e in memories["entries"]} == {"claude-code", "gemini", "claude-desktop"}
    assert {(e["user"], e["data_dir"]) for e in memories["entries"]} == {
        (identity.default_user(), identity.resolve({}).data_dir)
    }
    assert run("doctor") == 0
    assert "whose memory: every installed entry opens user" in capsys.readouterr().out


def test_install_refuses_to_split_a_memory_and_says_how_to_share_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop = desktop_config(home, {"MCP_MEMORY_USER_ID": "me"})
    assert run("install", "claude-code") == 2
    said = capsys.readouterr().err
    assert "this would split your memory" in said and str(desktop) in said and "user 'me'" in said
    assert 'MCP_MEMORY_USER_ID="me" mcp-memory install claude-code' in said
    assert "Nothing was changed." in said
    assert not (home / ".claude").exists() and not (home / ".claude.json").exists()


def test_install_with_the_same_user_joins_the_memory(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop_config(home, {"MCP_MEMORY_USER_ID": "me"})
    monkeypatch.setenv("MCP_MEMORY_USER_ID", "me")
    assert run("install", "codex") == 0
    assert run("install", "cursor") == 0
    capsys.readouterr()
    assert run("doctor", "--json") == 0
    memories = json.loads(capsys.readouterr().out)["memories"]
    assert memories["split"] is False and {e["user"] for e in memories["entries"]} == {"me"}
    # Reinstalling or uninstalling the same client never counts its own entries against it.
    assert run("install", "codex") == 0
    assert run("install", "codex", "--uninstall") == 0


def test_doctor_warns_when_the_installed_entries_open_different_memories(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("install", "vscode") == 0  # the OS user, the default data dir
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "elsewhere"))
    assert run("install", "gemini") == 2  # refused: another data dir
    assert run("install", "gemini", "--force") == 0
    monkeypatch.delenv("MCP_MEMORY_DATA_DIR")
    capsys.readouterr()
    assert run("doctor", "--json") == 0
    memories = json.loads(capsys.readouterr().out)["memories"]
    assert memories["split"] is True
    by_client = {(e["client"], e["data_dir"]) for e in memories["entries"]}
    assert ("gemini", str(tmp_path / "elsewhere")) in by_client
    assert ("vscode", identity.resolve({}).data_dir) in by_client
    assert run("doctor") == 0
    text = capsys.readouterr().out
    assert "WARNING: one person, 2 memories" in text and str(tmp_path / "elsewhere") in text


def test_a_hook_command_resolves_its_own_assignments(home: Path) -> None:
    memory = identity.of_hook('MCP_MEMORY_USER_ID="b o b" MCP_MEMORY_DATA_DIR=/d "/x/mcp-memory" hook codex')
    assert memory == identity.Memory("b o b", "/d")
    assert identity.of_hook('"/x/mcp-memory" hook codex --event Stop').user == identity.default_user()
