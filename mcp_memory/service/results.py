"""What a search returns: each hit with its calibrated score, why it matched, its token count, the floor
and the budget.

search/ranking.py ranks; this turns its hits into the tool's results. The score a hit carries is the calibrated
probability that it is relevant (search/relevance.py), so `min_score` means the same for every query;
`matched_by` says whether its words, its meaning or both found it, from the same signals, so it reads
the same on every backend; `max_tokens` keeps the best hits that fit (search/budget.py), counted with
the server's tokenizer. `shown` is what a client reads of it (search_memory).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from mcp_memory.models import Hit
from mcp_memory.search.budget import FOCUS_TOKENS, focus
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.relevance import HitSignals, matched_by, ranked_scores
from mcp_memory.service.recalled import Entry, collapsed, fitted
from mcp_memory.views import (
    ExchangeReply,
    ListedMemory,
    MemoryPage,
    PassageView,
    ReplyView,
    SearchHit,
    SearchHitView,
    SearchResult,
    SearchResultView,
)

REPLY_TOKENS = 60  # an exchange hit's reply, as shown (the whole: memory://memories/{id})


def search_hits(
    hits: Sequence[Hit], signals: Sequence[HitSignals], count: Callable[[str], int], query: SearchQuery
) -> list[SearchHit]:
    """The tool's results: scored, told why they matched, floored at the query's `min_score`, and fitted
    into its `max_tokens`. Its mode is the search's: a vector search's hits matched by meaning alone."""
    scored = [
        SearchHit.of(
            hit.memory,
            score,
            # Counted once, when the memory was written, with the same tokenizer.
            token_count=hit.memory.token_count or count(hit.memory.content),
            matched_by=matched_by(hit_signals, query.mode),
            passage=hit.passage,
        )
        for hit, hit_signals, score in zip(hits, signals, ranked_scores(signals), strict=True)
    ]
    if query.min_score is not None:
        scored = [hit for hit in scored if hit.score >= query.min_score]
    if query.max_tokens is None:
        return scored
    return within_budget(scored, query.max_tokens, count, query.terms.matched)


def within_budget(
    hits: Sequence[SearchHit], max_tokens: int, count: Callable[[str], int], terms: Sequence[str]
) -> list[SearchHit]:
    """The best hits whose contents fit max_tokens, shaped as recall shapes them (service/recalled.py):
    near-duplicates once, each the whole sentences around its match (of the query's `terms`:
    QueryTerms.matched) within its rank's share, the best with the most; a hit shown in part is a
    snippet."""
    entries = [Entry(hit, ranks=(rank,)) for rank, hit in enumerate(collapsed(hits))]
    return [
        entry.hit.model_copy(
            update={"content": entry.text, "snippet": entry.text != entry.hit.content.strip()}
        )
        for entry in fitted(entries, max_tokens, count, terms, lambda _: 0)
    ]


def shown(
    found: SearchResult, query: SearchQuery, count: Callable[[str], int], *, full_content: bool
) -> SearchResultView:
    """What search_memory answers a client: a memory longer than FOCUS_TOKENS as the part that
    matched (its best passage narrowed to the sentences that hold the query's words: search/budget.py
    `focus`), unless `full_content`; a shorter one (or a snippet fitted to max_tokens) as its content.
    The thread is left out when the query named it, times are to the second."""
    return SearchResultView(
        results=[
            _hit_shown(hit, query.terms.matched, count, full_content, query.thread_id is None)
            for hit in found.results
        ],
        mode=found.mode,
        time_filter=found.time_filter,
        meaning_incomplete=found.meaning_incomplete,
        in_time_order=found.in_time_order,
    )


def listed_shown(page: MemoryPage, count: Callable[[str], int], *, full_content: bool) -> MemoryPage:
    """What list_memories answers a client: a memory longer than FOCUS_TOKENS as its opening (whole
    sentences within FOCUS_TOKENS, offsets into the whole), unless `full_content`."""
    if full_content:
        return page
    return page.model_copy(update={"memories": [_listed(memory, count) for memory in page.memories]})


def _listed(memory: ListedMemory, count: Callable[[str], int]) -> ListedMemory:
    if memory.content is None or memory.token_count <= FOCUS_TOKENS:
        return memory
    start, end = focus(memory.content, (0, len(memory.content)), (), _json_tokens(count))
    opening = PassageView(text=memory.content[start:end], start=start, end=end)
    return memory.model_copy(update={"content": None, "passage": opening})


def _json_tokens(count: Callable[[str], int]) -> Callable[[str], int]:
    """Tokens of a text as the client reads it: inside a JSON string, escapes and all."""
    return lambda text: count(json.dumps(text, ensure_ascii=False))


def _hit_shown(
    hit: SearchHit, query_terms: Sequence[str], count: Callable[[str], int], full_content: bool, thread: bool
) -> SearchHitView:
    content: str | None = hit.content
    passage = None
    if full_content:
        if hit.passage is not None:
            passage = PassageView(start=hit.passage.start, end=hit.passage.end)
    elif not hit.snippet and hit.token_count > FOCUS_TOKENS:
        span = (0, len(hit.content)) if hit.passage is None else (hit.passage.start, hit.passage.end)
        start, end = focus(hit.content, span, query_terms, _json_tokens(count))
        content, passage = None, PassageView(text=hit.content[start:end], start=start, end=end)
    return SearchHitView(
        id=hit.id,
        type=hit.type,
        thread_id=hit.thread_id if thread else None,
        role=hit.role,
        content=content,
        passage=passage,
        created_at=hit.created_at.replace(microsecond=0),
        score=round(hit.score, 3),
        matched_by=hit.matched_by,
        token_count=hit.token_count,
        snippet=hit.snippet,
        flags=hit.flags,
        space=hit.space,
        author=hit.author if hit.space is not None else None,  # in personal memory: always the caller
        unit=hit.unit,
        reply=None if hit.reply is None else _reply_shown(hit.reply, query_terms, count),
    )


def _reply_shown(reply: ExchangeReply, query_terms: Sequence[str], count: Callable[[str], int]) -> ReplyView:
    """An exchange's reply: the part that matched, or its opening, within REPLY_TOKENS."""
    content = reply.content
    span = (0, len(content)) if reply.passage is None else (reply.passage.start, reply.passage.end)
    terms = query_terms if reply.passage is not None else ()
    start, end = focus(content, span, terms, _json_tokens(count), max_tokens=REPLY_TOKENS)
    return ReplyView(id=reply.id, text=content[start:end], token_count=reply.token_count)
