"""Stored bytes, the measure of `security.max_stored_bytes`: the UTF-8 bytes of each memory's content,
plus those of each revision (its content and the source text that led to it).

Revisions count because every change appends one: rewriting a memory back and forth never grows the
memory, but its history would grow without bound. Every backend keeps one per-user counter of both
next to the data, changed in the same step as each write and deletion, so the quota is checked without
reading the user's memories and holds however many processes or replicas write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp_memory.errors import LimitExceededError, shown
from mcp_memory.models import space_of

if TYPE_CHECKING:
    from mcp_memory.storage.base import LongTermStore


# A storage quota: one limit for every key, or each key's own (a space's own, beside the users' one).
Quota = int | None | Callable[[str], int | None]


def limit_of(quota: Quota, user_id: str) -> int | None:
    """The limit on the stored bytes of `user_id` (a user, or "@" + a space)."""
    return quota(user_id) if callable(quota) else quota


def content_bytes(content: str) -> int:
    return len(content.encode())


def revision_bytes(content: str, source_text: str | None) -> int:
    return content_bytes(content) + (content_bytes(source_text) if source_text is not None else 0)


def refuse_growth(user_id: str, before: int, after: int, quota: Quota) -> None:
    """Raise when a write grows the user's (or space's) stored bytes past its limit. A write that does not
    grow them (a supersession, a shorter rewrite) always passes, so one over a lowered limit can tidy up."""
    limit = limit_of(quota, user_id)
    if limit is None or after <= before or after <= limit:
        return
    space = space_of(user_id)
    if space is not None:
        raise LimitExceededError(
            f"storage quota reached: space {shown(space)} stores {before:,} of {limit:,} bytes and this write "
            f"needs {after - before:,} more; nothing was stored. Its owners can forget old threads or "
            "memories there; the operator can raise the space's max_stored_bytes (security.spaces)"
        )
    raise LimitExceededError(
        f"storage quota reached: this user stores {before:,} of {limit:,} bytes "
        f"(security.max_stored_bytes) and this write needs {after - before:,} more; nothing was stored. "
        "Forget old threads or memories (forget thread_id=... or memory_id=...), or export and forget "
        "everything; the operator can raise MCP_MEMORY_SECURITY__MAX_STORED_BYTES"
    )


async def refuse_without_room(store: LongTermStore, user_id: str, adding: int, quota: Quota) -> None:
    """Before writes the store does not check itself (revisions): raise when the user has no room for
    `adding` more bytes. Concurrent writers may each pass and overshoot by one write; the count stays exact."""
    if limit_of(quota, user_id) is None or adding <= 0:
        return
    before = await store.stored_bytes(user_id)
    refuse_growth(user_id, before, before + adding, quota)
