"""What a relay reads of the settings (mcp_memory/relay/settings.py): the fingerprint that decides whether
the resident server may serve its session, read as Settings() reads the environment and ./.env; and the
platform without Unix sockets, served in process (the other fallbacks: tests/e2e/test_relay.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mcp_memory.relay import serve_relayed
from mcp_memory.relay.settings import captured, data_dir, effective, fingerprint, in_process_requested

BASE = {"MCP_MEMORY_USER_ID": "ann", "MCP_MEMORY_TOOLS": "all", "PATH": "/usr/bin"}


def test_the_session_only_settings_do_not_change_the_fingerprint(tmp_path: Path) -> None:
    plain = fingerprint(effective(BASE, tmp_path))
    for name, value in [
        ("MCP_MEMORY_HOOKS__CAPTURE", "true"),
        ("MCP_MEMORY_DATA_DIR", "/elsewhere"),
        ("MCP_MEMORY_IN_PROCESS", "0"),
        ("HOME", "/home/other"),  # not a setting
    ]:
        assert fingerprint(effective(BASE | {name: value}, tmp_path)) == plain, name


def test_another_user_or_any_other_setting_is_another_server(tmp_path: Path) -> None:
    plain = fingerprint(effective(BASE, tmp_path))
    assert fingerprint(effective(BASE | {"MCP_MEMORY_USER_ID": "bob"}, tmp_path)) != plain
    assert fingerprint(effective(BASE | {"MCP_MEMORY_EMBEDDING__PROVIDER": "hash"}, tmp_path)) != plain
    assert fingerprint(effective(BASE | {"mcp_memory_log_level": "DEBUG"}, tmp_path)) != plain  # any case
    assert fingerprint(effective(BASE | {"MEMORY_FILE_PATH": "/m.jsonl"}, tmp_path)) != plain


def test_dotenv_counts_under_the_environment(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "# a project's .env\nDATABASE_URL=postgres://x\nexport MCP_MEMORY_USER_ID='carol'\n"
        'MCP_MEMORY_HOOKS__CAPTURE="true"\nMCP_MEMORY_DATA_DIR=/data # mine\n'
    )
    values = effective({"PATH": "/usr/bin"}, tmp_path)
    assert values == {
        "MCP_MEMORY_USER_ID": "carol",
        "MCP_MEMORY_HOOKS__CAPTURE": "true",
        "MCP_MEMORY_DATA_DIR": "/data",
    }
    assert captured(values) and data_dir(values) == Path("/data")
    assert effective({"MCP_MEMORY_USER_ID": "dave"}, tmp_path)["MCP_MEMORY_USER_ID"] == "dave"


def test_the_opt_out_reads_as_pydantic_reads_a_bool() -> None:
    assert in_process_requested({"MCP_MEMORY_IN_PROCESS": "1"})
    assert in_process_requested({"MCP_MEMORY_IN_PROCESS": "True"})
    assert not in_process_requested({"MCP_MEMORY_IN_PROCESS": "0"})
    assert not in_process_requested({})


def test_without_unix_sockets_the_session_is_served_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delattr(socket, "AF_UNIX")  # as on Windows
    assert serve_relayed() is None
    assert capsys.readouterr().err == (
        "mcp-memory: serving in this process: this platform has no Unix sockets for the resident server\n"
    )
    assert not (tmp_path / "data").exists()
