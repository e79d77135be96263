"""Fixtures every layer of the suite uses: settings on a private data dir, the offline embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_memory.config import Settings, SummarySettings

SUMMARY_BEFORE_THE_REPLY = 60.0  # seconds add_turn waits for a summary in tests


@pytest.fixture
def anyio_backend() -> str:
    # redis.asyncio and azure.cosmos.aio need asyncio.
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Embedded-default settings on a private data dir, immune to the developer's environment."""
    for name in list(__import__("os").environ):
        if name.startswith("MCP_MEMORY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env is read
    # A summary a turn starts is written before add_turn replies, whatever the machine's load, so tests
    # about what a summary holds see it in the reply; tests/unit/test_summaries_after_reply.py covers
    # summaries finishing after the reply (the default for any taking over summary.inline_seconds).
    summary = SummarySettings(inline_seconds=SUMMARY_BEFORE_THE_REPLY)
    # Every tool listed (the default profile, standard, leaves out forget_user and the knowledge graph);
    # tests/unit/test_tool_profiles.py covers the profiles themselves.
    yield Settings(user_id="tester", data_dir=tmp_path / "data", summary=summary, tools="all")
