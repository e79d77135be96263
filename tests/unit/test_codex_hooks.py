"""Codex CLI's side of the hooks: payloads captured from the real CLI (0.171.0) read by parse(), the trust
Codex requires before it runs a hook (key and hash as Codex computes them), and what install and doctor
do with it. The real CLI itself runs in tests/e2e/test_codex_hooks.py."""

from __future__ import annotations

import argparse
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.cli import codex_trust, doctor, install, install_codex
from mcp_memory.hooks.clients import parse

CAPTURED = json.loads(
    (Path(__file__).parent / "hook_payloads" / "captured" / "codex-0.171.0.json").read_text()
)

# Hashes Codex 0.171.0 itself reported (app-server `hooks/list`, currentHash) for two hooks.json entries.
CODEX_SAID = [
    ("Stop", {"type": "command", "command": "cat > /tmp/cx/r1/logs/Stop.$$.json", "timeout": 10},
     "sha256:64514b7f4078358dc193747289d514384c679daba6b66b5cec24968f103ee4aa"),
    ("PostToolUse", {"type": "command", "command": "cat > /tmp/cx/r1/logs/PostToolUse.$$.json", "timeout": 10},
     "sha256:85620652973bb3a57526aebe78c1863612709a900cbe5bc8c3ac8ab2fed6a847"),
]  # fmt: skip


@pytest.mark.parametrize("case", CAPTURED["cases"], ids=lambda case: case["payload"]["hook_event_name"])
def test_every_captured_payload_parses_to_its_kind_and_fields(case: dict[str, Any]) -> None:
    event = parse("codex", case["payload"])
    expected = dict(case["expect"])
    tool = expected.pop("tool", None)
    for field, value in expected.items():
        assert getattr(event, field) == value, field
    if tool is not None:
        assert event.tool is not None
        assert event.tool._asdict() | {"paths": list(event.tool.paths)} == tool


def test_a_failed_shell_command_gets_its_exit_code_from_codexs_session_file(tmp_path: Path) -> None:
    failed = next(
        c["payload"]
        for c in CAPTURED["cases"]
        if c["payload"].get("tool_input", {}).get("command") == "ls missing-file"
    )
    line = json.loads(json.dumps(CAPTURED["rollout_line"]["line"]))
    line["payload"]["item"]["id"] = failed["tool_use_id"]
    rollout = tmp_path / "rollout.jsonl"
    other = {
        "type": "event_msg",
        "payload": {"type": "item_completed", "item": {"id": "call_other", "exit_code": 0}},
    }
    rollout.write_text("\n".join(json.dumps(x) for x in (other, line, {"type": "turn_context"})) + "\n")

    tool = parse("codex", failed | {"transcript_path": str(rollout)}).tool

    assert tool is not None
    assert (tool.exit_code, tool.failed) == (2, True)
    assert tool.excerpt == "ls: cannot access 'missing-file': No such file or directory"
    unknown = parse("codex", failed | {"transcript_path": str(tmp_path / "gone.jsonl")}).tool
    assert unknown is not None and (unknown.exit_code, unknown.failed) == (None, False)


@pytest.mark.parametrize(("event", "handler", "said"), CODEX_SAID)
def test_the_trust_hash_is_the_one_codex_computes(event: str, handler: dict[str, Any], said: str) -> None:
    assert codex_trust.hook_hash(event, None, handler) == said
    assert codex_trust.hook_hash(event, None, handler | {"command": handler["command"] + " "}) != said


def test_the_trust_key_names_the_hooks_file_event_and_position(tmp_path: Path) -> None:
    key = codex_trust.hook_key(tmp_path / ".codex" / "hooks.json", "UserPromptSubmit", 1, 0)
    assert key == f"{tmp_path}/.codex/hooks.json:user_prompt_submit:1:0"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "data"))
    for name in ("CODEX_HOME", "MCP_MEMORY_USER_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(home)
    return home


def run(command: str, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mcp-memory")
    commands = parser.add_subparsers(dest="command")
    install.add_parser(commands)
    doctor.add_parser(commands)
    args = parser.parse_args([command, *argv])
    return install.run(args) if command == "install" else doctor.run(args)


def trust_of(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert run("doctor", "--json") == 0
    trust: dict[str, Any] = json.loads(capsys.readouterr().out)["clients"]["codex"]["user"]["trust"]
    return trust


def test_install_says_how_to_trust_and_doctor_says_nothing_is_captured_until_then(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("install", "codex") == 0
    printed = capsys.readouterr().out
    assert "mcp-memory install codex --trust" in printed and "/hooks" in printed
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["features"] == {"hooks": True} and "hooks" not in {k for k in config if k != "features"}

    trust = trust_of(capsys)
    assert trust["status"] == "not trusted" and len(trust["untrusted"]) == 6
    assert trust["summary"].startswith("installed, not yet trusted: nothing is captured")
    assert run("doctor") == 0
    assert "trust: installed, not yet trusted: nothing is captured" in capsys.readouterr().out


def test_install_trust_writes_what_codex_checks_and_uninstall_takes_it_back(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file = home / ".codex" / "config.toml"
    config_file.parent.mkdir()
    config_file.write_text(
        'model = "gpt-5.5"\n\n[hooks.state."/elsewhere/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:0"\n'
    )
    assert run("install", "codex", "--trust") == 0
    hooks_file = home / ".codex" / "hooks.json"
    ours = codex_trust.our_hooks(hooks_file, json.loads(hooks_file.read_text()))
    state = tomllib.loads(config_file.read_text())["hooks"]["state"]
    assert {h.key: {"trusted_hash": h.hash} for h in ours}.items() <= state.items()
    assert len(ours) == 6 and state["/elsewhere/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:0"}
    trust = trust_of(capsys)
    assert trust["status"] == "trusted" and trust["summary"] == "trusted: Codex runs all 6 hooks"

    before = config_file.read_text()
    assert run("install", "codex", "--trust") == 0
    assert config_file.read_text() == before  # idempotent

    assert run("install", "codex", "--uninstall") == 0
    assert config_file.read_text() == (
        'model = "gpt-5.5"\n\n[hooks.state."/elsewhere/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:0"\n'
    )


def test_doctor_tells_a_trust_that_no_longer_matches_the_installed_hook(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert run("install", "codex", "--trust") == 0
    monkeypatch.setenv("MCP_MEMORY_USER_ID", "someone-else")  # pinned into every hook command
    assert run("install", "codex") == 0
    printed = capsys.readouterr().out
    assert "--trust" in printed

    trust = trust_of(capsys)
    assert trust["status"] == "modified" and len(trust["modified"]) == 6
    assert "no longer matches" in trust["summary"]
    assert run("install", "codex", "--trust") == 0
    assert trust_of(capsys)["status"] == "trusted"
    text = (home / ".codex" / "config.toml").read_text()
    assert text.count("[hooks.state.") == 6 and text.count(install_codex.CODEX_TRUST_COMMENT) == 1, text


def test_an_earlier_installs_codex_hooks_line_becomes_hooks(home: Path) -> None:
    config_file = home / ".codex" / "config.toml"
    config_file.parent.mkdir()
    config_file.write_text(
        "[features]\nweb_search_request = true\ncodex_hooks = true  # added by mcp-memory install\n"
    )
    assert run("install", "codex") == 0
    text = config_file.read_text()
    assert "codex_hooks" not in text
    assert tomllib.loads(text)["features"] == {"web_search_request": True, "hooks": True}
    assert run("install", "codex", "--uninstall") == 0
    assert config_file.read_text() == "[features]\nweb_search_request = true\n"


def test_a_users_own_codex_hooks_line_is_left_with_a_word(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file = home / ".codex" / "config.toml"
    config_file.parent.mkdir()
    config_file.write_text("[features]\ncodex_hooks = true\n")
    assert run("install", "codex") == 0
    assert tomllib.loads(config_file.read_text())["features"] == {"codex_hooks": True}
    assert "rename it hooks" in capsys.readouterr().out
    assert os.path.exists(home / ".codex" / "hooks.json")


@pytest.mark.parametrize(("answer", "status"), [("y", "trusted"), ("", "not trusted")])
def test_in_a_terminal_install_asks_before_it_trusts(
    answer: str, status: str, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda question: asked.append(question) or answer)
    assert run("install", "codex") == 0
    assert asked == ["Codex runs hooks only once trusted. Trust the 6 mcp-memory hooks now? [y/N] "]
    assert trust_of(capsys)["status"] == status
