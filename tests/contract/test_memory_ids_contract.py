"""LongTermStore.memory_ids, which completion/complete offers for memory://memories/{memory_id}: every
backend (SQLite and the local Cosmos-protocol server) returns the user's own active ids with the prefix,
in id order, at most `limit`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from mcp_memory.storage.base import LongTermStore
from tests.contract.conftest_long_term import T0, memory

pytestmark = pytest.mark.anyio

NewUser = Callable[[], str]


async def test_memory_ids_are_the_users_own_by_prefix_in_order(
    long_term_store: LongTermStore, new_user: NewUser
) -> None:
    user, other = new_user(), new_user()
    await long_term_store.put(
        [
            memory(user, "turn_b2", "second turn", minutes=2),
            memory(user, "turn_a1", "first turn", minutes=1),
            memory(user, "fact_c3", "a fact", type="fact", thread_id=None),
            memory(user, "summary_t1", "a summary", type="summary"),
            memory(
                user,
                "turn_old",
                "corrected turn",
                superseded_by="turn_a1",
                supersede_reason="corrected",
                superseded_at=T0 + timedelta(hours=1),
            ),
            memory(other, "turn_theirs", "not this user's"),
        ]
    )
    assert await long_term_store.memory_ids(user, "turn_", 10) == ["turn_a1", "turn_b2"]
    assert await long_term_store.memory_ids(user, "", 10) == ["fact_c3", "summary_t1", "turn_a1", "turn_b2"]
    assert await long_term_store.memory_ids(user, "", 2) == ["fact_c3", "summary_t1"]
    assert await long_term_store.memory_ids(user, "turn_z", 10) == []
    assert await long_term_store.memory_ids(new_user(), "", 10) == []
