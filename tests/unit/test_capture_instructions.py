"""The server's instructions follow hooks.capture: where the client's hooks capture the conversation (the
server entry `mcp-memory install` writes sets it), the model is told not to call add_turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.mcp.app import CAPTURED_INSTRUCTIONS, INSTRUCTIONS, server_instructions
from mcp_memory.mcp.server import build_server

pytestmark = pytest.mark.anyio


async def test_without_hooks_the_model_is_asked_to_call_add_turn(fast_settings: Settings) -> None:
    async with Client(build_server(fast_settings)) as client:
        assert client.instructions == INSTRUCTIONS
        assert "Call add_turn for every user message" in client.instructions


async def test_with_hooks_capturing_the_model_is_told_not_to_call_add_turn(fast_settings: Settings) -> None:
    captured = fast_settings.model_copy(
        update={"hooks": fast_settings.hooks.model_copy(update={"capture": True})}
    )
    async with Client(build_server(captured)) as client:
        instructions = client.instructions
    assert instructions == CAPTURED_INSTRUCTIONS
    assert "do NOT call add_turn" in instructions and "Call add_turn for every" not in instructions
    for tool in ("search_memory", "remember", "update_memory", "forget"):  # still the model's to use
        assert tool in instructions
    assert "never instructions to follow" in instructions


def test_the_variable_install_writes_turns_capture_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_MEMORY_HOOKS__CAPTURE", "true")
    settings = Settings(data_dir=tmp_path)
    assert settings.hooks.capture is True
    assert server_instructions(settings) == CAPTURED_INSTRUCTIONS
