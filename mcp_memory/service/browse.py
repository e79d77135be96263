"""Browsing long-term memory without a query: pages of memories, and the user's facts as text.

Pages are keyset pages on (created_at, id). The cursor carries the order and the key of the last
memory shown, opaquely (URL-safe base64 of a small JSON), so every memory that existed when paging
started is shown exactly once however much is written between pages: newest first, later memories sort
before the key and never appear; oldest first, they come at the end.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime
from typing import get_args

from mcp_memory import validation as check
from mcp_memory.errors import InvalidInputError
from mcp_memory.errors import shown as echoed
from mcp_memory.learning.parsing import FACT_KINDS
from mcp_memory.models import ListOrder, ListQuery, Memory
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import ListedMemory, MemoryPage

MAX_LIMIT = 100
ORDERS: tuple[ListOrder, ...] = get_args(ListOrder)
# memory://facts shows at most this many; list_memories pages through the rest.
FACTS_SHOWN = 500
_CURSOR_VERSION = 1


def encode_cursor(order: ListOrder, memory: Memory) -> str:
    key = {"v": _CURSOR_VERSION, "order": order, "at": memory.created_at.isoformat(), "id": memory.id}
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: object, order: ListOrder) -> tuple[datetime, str]:
    """The key a cursor resumes after; an InvalidInputError naming `cursor` for anything else."""
    unknown = InvalidInputError(
        "cursor is not one list_memories returned: pass a next_cursor unchanged, or omit cursor to start"
    )
    if not isinstance(cursor, str) or not cursor or len(cursor) > 1024:
        raise unknown
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError) as e:  # not base64, not UTF-8, not JSON
        raise unknown from e
    if not isinstance(key, dict) or key.get("v") != _CURSOR_VERSION:
        raise unknown
    at, memory_id = key.get("at"), key.get("id")
    if not isinstance(at, str) or not isinstance(memory_id, str):
        raise unknown
    try:
        moment = check.timestamp(at, "cursor")
    except InvalidInputError as e:
        raise unknown from e
    if key.get("order") != order:
        raise InvalidInputError(
            f"cursor was made for order {key.get('order')!r}, not {echoed(order)}: keep the order while paging, "
            "or omit cursor to start again"
        )
    assert moment is not None  # a string always parses to a time or fails
    return moment, memory_id


async def list_memories(  # noqa: PLR0913 - list_memories' arguments, checked here into one ListQuery
    long_term: LongTermStore,
    owners: str | Sequence[str],
    *,
    types: object = None,
    thread_id: object = None,
    kind: object = None,
    since: object = None,
    until: object = None,
    include_superseded: object = False,
    order: object = "newest",
    limit: object = 20,
    cursor: object = None,
    as_of: object = None,
) -> MemoryPage:
    """One page of the memories of `owners` (a user's personal memory and the spaces they read: their
    pages merged in key order), every argument checked before anything is read."""
    if order not in ORDERS:
        raise InvalidInputError(f"order {echoed(order)} is unknown: use newest or oldest")
    if kind is not None and kind not in FACT_KINDS:
        raise InvalidInputError(f"kind {echoed(kind)} is unknown: use one of {', '.join(FACT_KINDS)}")
    if not isinstance(include_superseded, bool):
        raise InvalidInputError("include_superseded must be true or false")
    size = check.count(limit, "limit", low=1, high=MAX_LIMIT)
    since_, until_ = check.time_range(since, until)
    keys = [owners] if isinstance(owners, str) else list(owners)
    if thread_id is not None:
        keys = keys[:1]  # a thread is one owner's: the same id in a space is another thread
    query = ListQuery(
        user_id=keys[0],
        types=check.types(types),
        thread_id=None if thread_id is None else check.thread_id(thread_id),
        kind=kind,
        since=since_,
        until=until_,
        include_superseded=include_superseded,
        as_of=check.timestamp(as_of, "as_of"),
        order=order,
        limit=size + 1,  # one more than shown: whether there is a next page
        after=None if cursor is None else decode_cursor(cursor, order),
    )
    found = await _merged_page(long_term, query, keys)
    shown = [_as_it_stood(m, query.as_of) for m in found[:size]]
    next_cursor = encode_cursor(order, found[size - 1]) if len(found) > size else None
    return MemoryPage(memories=[ListedMemory.of(m) for m in shown], next_cursor=next_cursor)


async def _merged_page(long_term: LongTermStore, query: ListQuery, keys: list[str]) -> list[Memory]:
    """Each owner's page after the same key, merged in (created_at, id) order: one page across them,
    since the key orders every memory of every owner alike."""
    if len(keys) == 1:
        return await long_term.list_memories(query)
    pages = [await long_term.list_memories(query.model_copy(update={"user_id": key})) for key in keys]
    merged = sorted((m for page in pages for m in page), key=lambda m: (m.created_at, m.id))
    if query.order == "newest":
        merged.reverse()
    return merged[: query.limit]


async def facts_text(long_term: LongTermStore, owners: str | Sequence[str]) -> str:
    """memory://facts: the user's active facts, and those of the spaces they read, newest first, one
    line each (a space's facts say which space)."""
    keys = [owners] if isinstance(owners, str) else list(owners)
    query = ListQuery(user_id=keys[0], types=["fact"], limit=FACTS_SHOWN + 1)
    facts = await _merged_page(long_term, query, keys)
    if not facts:
        return "No facts are known about you yet: they are learned from conversations, or kept with remember."
    lines = [
        f"- {' '.join(f.content.split())} ({f.metadata.get('fact_type') or 'fact'}, "
        f"since {f.created_at.date().isoformat()}, {_where(f)}id {f.id})"
        for f in facts[:FACTS_SHOWN]
    ]
    if len(facts) > FACTS_SHOWN:
        lines.append("- ... and more: page through them with list_memories(types=['fact']).")
    return "\n".join(lines)


def _where(memory: Memory) -> str:
    return "" if memory.space is None else f"space {memory.space}, "


def _as_it_stood(memory: Memory, as_of: datetime | None) -> Memory:
    """A memory superseded after as_of was current then: shown as it was, not yet superseded."""
    if as_of is None or memory.superseded_at is None or memory.superseded_at <= as_of:
        return memory
    return memory.model_copy(update={"superseded_by": None, "supersede_reason": None, "superseded_at": None})
