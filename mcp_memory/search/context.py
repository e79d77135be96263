"""What full-text search indexes beside a turn (Memory.index_context): the turns around it and its date.

A question often shares its words with a turn next to the answer rather than the answer itself:
"what did Maya suggest?" -> "Maya: how about Lisbon?" -> "Sounds great, booked!" finds the reply
through the turn before it, and "Where did you go last week?" -> "Lisbon!" -> "What did you eat
there?" finds the short answer through the turn after it. BM25 weighs this context below the turn's
own words (SearchSettings.context_weight); bench/locomo.py measures what each side adds.

The turns after a turn do not exist when it is stored, so each new turn also rewrites the context of
the `after` turns before it (storage.base.LateContext, which every long-term store implements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mcp_memory.models import Memory
from mcp_memory.search.terms import date_words


@dataclass(frozen=True)
class TurnContexts:
    own: str  # the new turn's context
    rewritten: dict[str, str] = field(default_factory=dict)  # earlier turn id -> its new context


# Each neighbouring turn lends at most this many of its first characters: a chat turn whole (LoCoMo's
# longest is 447), a long answer or pasted file only its opening, so its words do not swamp the turn's.
NEIGHBOUR_CHARS = 500


def context_of(before: Sequence[str], after: Sequence[str], moment: datetime) -> str:
    return " ".join([*(_opening(t) for t in (*before, *after)), date_words(moment)])


def _opening(text: str) -> str:
    if len(text) <= NEIGHBOUR_CHARS:
        return text
    cut = text.rfind(" ", 0, NEIGHBOUR_CHARS)
    return text[: cut if cut > 0 else NEIGHBOUR_CHARS]


def _windows(
    turns: Sequence[Memory], at: range, *, before: int, after: int, then: Sequence[str] = ()
) -> dict[str, str]:
    """The contexts of the turns at these positions of `turns` (one thread, oldest first), with `then`:
    the texts of turns after them not stored yet."""
    texts = [*(m.content for m in turns), *then]
    return {
        turns[i].id: context_of(
            texts[max(0, i - before) : i] if before else [],
            texts[i + 1 : i + 1 + after] if after else [],
            turns[i].created_at,
        )
        for i in at
    }


def turn_contexts(
    earlier: Sequence[Memory], content: str, moment: datetime, *, before: int, after: int
) -> TurnContexts:
    """The new turn's context and the new contexts of the `after` turns before it.

    `earlier` is the thread's newest turns, oldest first, at least `before + after` of them when the
    thread has that many (fewer at its start): each rewritten turn needs its own `before` turns too.
    """
    new = len(earlier)
    own = context_of([m.content for m in earlier[max(0, new - before) :]] if before else [], [], moment)
    rewritten = _windows(earlier, range(max(0, new - after), new), before=before, after=after, then=[content])
    return TurnContexts(own=own, rewritten=rewritten)


def contexts_without(turns: Sequence[Memory], gone: str, *, before: int, after: int) -> dict[str, str]:
    """The new contexts of the turns whose context held the turn `gone` (forgotten), from `turns`: the
    thread's turns from `before + after` before it to `before + after` after it (each rewritten turn
    needs its own window too)."""
    at = next((i for i, m in enumerate(turns) if m.id == gone), None)
    if at is None:
        return {}
    kept = [*turns[:at], *turns[at + 1 :]]
    # Turns after it held it among their `before`; turns before it among their `after`.
    return _windows(kept, range(max(0, at - after), min(len(kept), at + before)), before=before, after=after)


def thread_contexts(turns: Sequence[Memory], *, before: int, after: int) -> dict[str, str]:
    """Every turn's context, the thread's turns given whole (an import), in any order."""
    by_thread: dict[str | None, list[Memory]] = {}
    for m in turns:
        by_thread.setdefault(m.thread_id, []).append(m)
    contexts: dict[str, str] = {}
    for thread in by_thread.values():
        thread.sort(key=lambda m: m.created_at)  # stable: equal times keep the order given
        contexts |= _windows(thread, range(len(thread)), before=before, after=after)
    return contexts
