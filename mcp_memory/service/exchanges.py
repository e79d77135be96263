"""Exchanges as hits: search_memory's `unit`. A user's turn with its reply as one hit, the way the
answers of "what did we discuss about X" and "in what order did we ..." questions come: the user asked,
the assistant answered, and both are the story (BEAM's evidence names the reply beside the turn for most
such questions; LongMemEval and BEAM's LIGHT retrieve them as one unit).

- `unit="exchange"`: each turn hit becomes its exchange (a reply's hit, the turn it answered), one hit
  per exchange, at the rank of its better half.
- `unit="memory"`: the memories as they rank (every search before this).
- Omitted, the question decides (`unit_for`): one that asks what *the user* brought up or mentioned is
  answered from the user's own turns; one that asks for an account over time (search/intent.py
  `over_time`: "in what order", "summarize", "how did X progress") from exchanges; either of those in
  time order, oldest first. Any other question: memories, best first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from mcp_memory.errors import InvalidInputError, shown
from mcp_memory.models import Memory, space_key
from mcp_memory.search import intent
from mcp_memory.search.query import SearchQuery
from mcp_memory.views import ExchangeReply, SearchHit, SearchResult

if TYPE_CHECKING:
    from mcp_memory.service.memory_service import MemoryService

Unit = Literal["memory", "exchange"]
Shape = Literal["memory", "exchange", "own"]
UNITS: tuple[Unit, ...] = ("memory", "exchange")
WIDER = 3  # hits asked of the search per hit returned, when hits fold into exchanges or are filtered

# A question about what the user said: "the order in which I brought up", "what I mentioned about".
_OWN_WORDS = re.compile(
    r"\b(i|we)\s+(have\s+|had\s+|first\s+|later\s+)?(brought up|mentioned|raised|asked about|told you|shared)\b",
    re.IGNORECASE,
)


def checked_unit(value: object) -> Unit | None:
    if value is None:
        return None
    if value not in UNITS:
        raise InvalidInputError(f"unit {shown(value)} is not valid: use memory or exchange, or omit it")
    return value


def shape_for(question: str, unit: Unit | None) -> tuple[Shape, bool]:
    """How the hits of a question are shaped, and whether in time order (module docstring)."""
    over_time = intent.over_time(question)
    if unit is not None:
        return unit, over_time
    if _OWN_WORDS.search(question) is not None:
        return "own", over_time
    if over_time:
        return "exchange", True
    return "memory", False


async def search(service: MemoryService, query: SearchQuery, unit: Unit | None) -> SearchResult:
    """search_memory's results in the unit asked for, or the question's (module docstring)."""
    shape, in_time_order = shape_for(query.asked or query.text, unit)
    if shape == "memory" and not in_time_order:
        return await service.search(query)
    limit = query.limit
    found = await service.search(_wider(query, min(limit * WIDER, service.settings.search.max_limit)))
    hits = list(found.results)
    if shape == "own":
        hits = [hit for hit in hits if hit.role == "user"] or hits
    elif shape == "exchange":
        hits = await _exchanges(service, query, hits)
    hits = hits[:limit]
    if in_time_order:
        hits.sort(key=lambda hit: (hit.created_at, hit.id))
    return found.model_copy(update={"results": hits, "in_time_order": in_time_order})


def _wider(query: SearchQuery, limit: int) -> SearchQuery:
    limit = max(limit, query.limit)
    depth = None if query.depth is None else max(query.depth, limit)
    unbounded = None if query.unbounded is None else _wider(query.unbounded, limit)
    return query.model_copy(update={"limit": limit, "depth": depth, "unbounded": unbounded})


async def _exchanges(service: MemoryService, query: SearchQuery, hits: list[SearchHit]) -> list[SearchHit]:
    """Each turn hit as its exchange, once, at the rank of its better half; other hits as they are."""
    shaped: list[SearchHit] = []
    seen: set[str] = set()
    personal = query.owners[0] if query.owners else None
    for hit in hits:
        if hit.type != "turn" or hit.role not in ("user", "assistant"):
            if hit.id not in seen:
                seen.add(hit.id)
                shaped.append(hit)
            continue
        owner = space_key(hit.space) if hit.space is not None else personal
        around = [] if owner is None else await service.stores.long_term.turns_around(owner, hit.id, reach=1)
        at = next((i for i, m in enumerate(around) if m.id == hit.id), None)
        head: Memory | None = None
        reply: Memory | None = None
        if at is not None and hit.role == "user":
            after = around[at + 1] if at + 1 < len(around) else None
            reply = after if after is not None and after.role == "assistant" else None
        elif at is not None and at > 0 and around[at - 1].role == "user":
            head, reply = around[at - 1], around[at]
        key = hit.id if head is None else head.id
        if key in seen:
            continue
        seen.add(key)
        if reply is None:
            shaped.append(hit)
        elif head is None:  # the user's turn matched: its reply beside it
            shaped.append(hit.model_copy(update={"unit": "exchange", "reply": _reply(reply, None)}))
        else:  # the reply matched: the turn it answered, the reply with the part that matched
            shaped.append(
                SearchHit.of(
                    head,
                    hit.score,
                    token_count=head.token_count or service.tokens.count(head.content),
                    matched_by=hit.matched_by,
                ).model_copy(update={"unit": "exchange", "reply": _reply(reply, hit)})
            )
    return shaped


def _reply(reply: Memory, hit: SearchHit | None) -> ExchangeReply:
    return ExchangeReply(
        id=reply.id,
        content=reply.content,
        token_count=reply.token_count,
        passage=None if hit is None else hit.passage,
    )


def replies_of(hits: list[SearchHit]) -> list[SearchHit]:
    """The replies exchange hits hold, as hits of their own (what a space's audit trail records read)."""
    return [
        hit.model_copy(update={"id": hit.reply.id, "reply": None}) for hit in hits if hit.reply is not None
    ]
