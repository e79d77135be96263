"""Stored bytes on SQLite: the `usage` table, kept by triggers on `memories` and `revisions` (migration 6)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from mcp_memory.storage.usage import Quota, refuse_growth


def stored_bytes(conn: sqlite3.Connection, user_ids: Collection[str]) -> dict[str, int]:
    marks = ",".join("?" * len(user_ids))
    found = dict(
        conn.execute(f"SELECT user_id, stored_bytes FROM usage WHERE user_id IN ({marks})", list(user_ids))
    )
    return {u: int(found.get(u, 0)) for u in user_ids}


def refuse_over_quota(conn: sqlite3.Connection, before: dict[str, int], quota: Quota) -> None:
    """Inside the write's transaction, after its statements: raising rolls the whole write back."""
    if quota is None:
        return
    for user_id, after in stored_bytes(conn, before).items():
        refuse_growth(user_id, before[user_id], after, quota)
