"""Another process holding the data file's write lock: a clear, retryable error, and nothing half-written."""

from __future__ import annotations

import sqlite3

import pytest

from mcp_memory.errors import BackendUnavailableError
from mcp_memory.service.memory_service import MemoryService

pytestmark = pytest.mark.anyio


async def test_a_locked_data_file_is_a_clear_error_and_then_works_again(service: MemoryService) -> None:
    first = await service.add_turn("tester", "t", "user", "before the lock", None, None)
    other = sqlite3.connect(service.settings.sqlite_path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(BackendUnavailableError, match="locked by another process"):
            await service.add_turn("tester", "t", "user", "during the lock", None, None)
    finally:
        other.execute("ROLLBACK")
        other.close()
    wm = await service.get_working_memory("tester", "t")
    assert [m.id for m in wm.messages] == [first.turn.id]
    after = await service.add_turn("tester", "t", "user", "after the lock", None, None)
    assert after.working_memory.message_count == 2
