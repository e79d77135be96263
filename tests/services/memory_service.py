"""A MemoryService on the embedded default, opened the way the server opens it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mcp_memory.config import Settings
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService


@pytest.fixture
async def service(fast_settings: Settings) -> AsyncIterator[MemoryService]:
    async with open_service(fast_settings) as opened:
        yield opened


@pytest.fixture
async def model_service(settings: Settings) -> AsyncIterator[MemoryService]:
    """With the real local ONNX embedder: for tests about what search finds."""
    async with open_service(settings) as opened:
        yield opened
