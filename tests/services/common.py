"""Fixtures every layer of the suite uses: settings on a private data dir, the offline embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_memory.config import Settings


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
    yield Settings(user_id="tester", data_dir=tmp_path / "data")
