"""Stored bytes, the measure of `security.max_stored_bytes`: the UTF-8 bytes of each memory's content,
plus those of each revision (its content and the source text that led to it).

Revisions count because every change appends one: rewriting a memory back and forth never grows the
memory, but its history would grow without bound. Every backend keeps one per-user counter of both
next to the data, changed in the same step as each write and deletion, so the quota is checked without
reading the user's memories and holds however many processes or replicas write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_memory.errors import LimitExceededError

if TYPE_CHECKING:
    from mcp_memory.storage.base import LongTermStore


def content_bytes(content: str) -> int:
    return len(content.encode())


def revision_bytes(content: str, source_text: str | None) -> int:
    return content_bytes(content) + (content_bytes(source_text) if source_text is not None else 0)


def refuse_growth(user_id: str, before: int, after: int, limit: int | None) -> None:
    """Raise when a write grows the user's stored bytes past the limit. A write that does not grow them
    (a supersession, a shorter rewrite) always passes, so a user over a lowered limit can still tidy up."""
    if limit is None or after <= before or after <= limit:
        return
    raise LimitExceededError(
        f"storage quota reached: this user stores {before:,} of {limit:,} bytes "
        f"(security.max_stored_bytes) and this write needs {after - before:,} more; nothing was stored. "
        "Forget old threads or memories (forget thread_id=... or memory_id=...), or export and forget "
        "everything; the operator can raise MCP_MEMORY_SECURITY__MAX_STORED_BYTES"
    )


async def refuse_without_room(store: LongTermStore, user_id: str, adding: int, limit: int | None) -> None:
    """Before writes the store does not check itself (revisions): raise when the user has no room for
    `adding` more bytes. Concurrent writers may each pass and overshoot by one write; the count stays exact."""
    if limit is None or adding <= 0:
        return
    before = await store.stored_bytes(user_id)
    refuse_growth(user_id, before, before + adding, limit)
