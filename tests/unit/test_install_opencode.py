"""`mcp-memory install opencode`: a plugin file in OpenCode's plugin folder and the MCP server in opencode.json
(https://opencode.ai/docs/plugins, https://opencode.ai/docs/mcp-servers), every other setting and plugin kept,
a second run byte for byte the same, uninstall giving back what was there; and what doctor says of it. The
plugin itself is run by the real OpenCode in tests/e2e/test_opencode_hooks.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcp_memory.cli import doctor
from mcp_memory.cli.install_opencode import MARKER
from tests.services.node_service import node
from tests.unit.test_install import files, home, program, project, read_json, run, write

__all__ = ["home", "program", "project"]  # fixtures

THEIRS = {
    "$schema": "https://opencode.ai/config.json",
    "theme": "opencode",
    "mcp": {"docs": {"type": "remote", "url": "https://example.com/mcp"}},
}
THEIR_PLUGIN = "export const Notify = async () => ({})\n"


def folders(scope: str, home: Path, project: Path) -> tuple[Path, Path]:
    """(the folder of opencode.json, the plugin folder)."""
    if scope == "user":
        return home / ".config" / "opencode", home / ".config" / "opencode" / "plugins"
    return project, project / ".opencode" / "plugins"


@pytest.mark.parametrize("scope", ["user", "project"])
def test_install_writes_the_plugin_and_the_server_keeps_the_rest_and_uninstall_gives_it_back(
    scope: str, home: Path, project: Path, program: str
) -> None:
    config_dir, plugins = folders(scope, home, project)
    write(config_dir / "opencode.json", THEIRS)
    write(plugins / "notify.js", THEIR_PLUGIN)
    tree = home.parent

    assert run("install", "opencode", "--scope", scope) == 0
    config = read_json(config_dir / "opencode.json")
    assert config["theme"] == "opencode" and config["mcp"]["docs"] == THEIRS["mcp"]["docs"]
    assert config["mcp"]["memory"] == {
        "type": "local",
        "command": [program, "serve"],
        "environment": {"MCP_MEMORY_HOOKS__CAPTURE": "true"},
        "enabled": True,
    }
    plugin = (plugins / "mcp-memory.js").read_text()
    assert plugin.startswith(MARKER)
    assert f"const PROGRAM = {json.dumps([program])}\n" in plugin
    assert "__" not in plugin.replace("__dirname", "")  # every placeholder filled in
    assert (plugins / "notify.js").read_text() == THEIR_PLUGIN

    first = files(tree)
    assert run("install", "opencode", "--scope", scope) == 0
    assert files(tree) == first  # idempotent: byte for byte

    assert run("install", "opencode", "--scope", scope, "--uninstall") == 0
    assert read_json(config_dir / "opencode.json") == THEIRS
    assert sorted(p.name for p in plugins.iterdir()) == ["notify.js"]


def test_install_in_a_fresh_home_and_uninstall_leaves_nothing(
    home: Path, project: Path, program: str
) -> None:
    before = files(home)
    assert run("install", "opencode") == 0
    assert (
        read_json(home / ".config" / "opencode" / "opencode.json")["mcp"]["memory"]["command"][0] == program
    )
    assert run("install", "opencode", "--uninstall") == 0
    assert files(home) == before
    assert not (home / ".config").exists()


def test_the_pinned_data_dir_and_user_reach_the_plugins_hooks(
    home: Path, project: Path, program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", "/srv/memory data")
    monkeypatch.setenv("MCP_MEMORY_USER_ID", "dana")
    assert run("install", "opencode") == 0
    plugin = (home / ".config" / "opencode" / "plugins" / "mcp-memory.js").read_text()
    env = {"MCP_MEMORY_USER_ID": "dana", "MCP_MEMORY_DATA_DIR": "/srv/memory data"}
    assert f"const ENV = {json.dumps(env)}\n" in plugin
    server = read_json(home / ".config" / "opencode" / "opencode.json")["mcp"]["memory"]
    assert server["environment"] == {"MCP_MEMORY_HOOKS__CAPTURE": "true", **env}


def test_a_plugin_or_server_that_is_not_ours_is_refused_and_kept(
    home: Path, project: Path, program: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config_dir, plugins = folders("user", home, project)
    write(plugins / "mcp-memory.js", THEIR_PLUGIN)
    assert run("install", "opencode") == 2
    assert "is not mcp-memory's plugin" in capsys.readouterr().err
    assert (plugins / "mcp-memory.js").read_text() == THEIR_PLUGIN
    assert not (config_dir / "opencode.json").exists()

    (plugins / "mcp-memory.js").unlink()
    theirs = {"mcp": {"memory": {"type": "local", "command": ["other-memory", "serve"]}}}
    write(config_dir / "opencode.json", theirs)
    assert run("install", "opencode") == 2
    assert "not mcp-memory's" in capsys.readouterr().err
    assert read_json(config_dir / "opencode.json") == theirs
    assert not (plugins / "mcp-memory.js").exists()


def test_a_config_that_is_not_valid_json_is_refused_and_nothing_changes(
    home: Path, project: Path, program: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config_dir, _ = folders("user", home, project)
    write(config_dir / "opencode.json", '{"theme": "opencode", // a comment\n}')
    before = files(home)
    assert run("install", "opencode") == 2
    assert "is not valid JSON" in capsys.readouterr().err
    assert files(home) == before


def test_xdg_config_home_is_where_the_user_scope_goes(
    home: Path, project: Path, program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert run("install", "opencode") == 0
    assert (tmp_path / "xdg" / "opencode" / "plugins" / "mcp-memory.js").is_file()
    assert (tmp_path / "xdg" / "opencode" / "opencode.json").is_file()


def test_doctor_reports_the_plugin_and_the_server(home: Path, project: Path, program: str) -> None:
    assert run("install", "opencode") == 0
    report = doctor.examine(project)["clients"]["opencode"]
    user = report["user"]
    assert user["server"]["installed"] is True and user["server"]["capture"] is True
    assert user["server"]["command"] == [program, "serve"]
    assert user["hooks"]["events"] == sorted(user["hooks"]["expected"])
    assert user["hooks"]["programs"] == [{"path": program, "exists": True}]
    assert report["project"]["server"]["installed"] is False and report["project"]["hooks"]["events"] == []
    text = "\n".join(doctor._text(doctor.examine(project)))
    assert "OpenCode (opencode)" in text and "hooks: 5 of 5 events" in text


def test_the_plugin_is_valid_javascript(home: Path, project: Path, program: str) -> None:
    assert run("install", "opencode") == 0
    plugin = home / ".config" / "opencode" / "plugins" / "mcp-memory.js"
    module = plugin.with_suffix(".mjs")
    module.write_text(plugin.read_text())
    done = subprocess.run(
        [node("checking the plugin"), "--check", str(module)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
