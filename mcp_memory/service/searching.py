"""search_memory from the query to the results: checked arguments, the time the query names, the
store's ranking, then each hit's calibrated score, the floor and the token budget (service/results.py).

Made per search from the service's current parts, so a changed setting applies to the next search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.llm.query_vectors import QueryVectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import Hit, SearchQuery, utcnow
from mcp_memory.search import intent
from mcp_memory.search.relevance import HitSignals
from mcp_memory.search.terms import quoted_phrases
from mcp_memory.search.when import time_range
from mcp_memory.service import results
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import SearchResult, TimeFilter


@dataclass(frozen=True)
class Searching:
    settings: Settings
    long_term: LongTermStore
    queries: QueryVectors  # the query's vector, reused for a query asked before
    tokens: TokenCounter
    vectors: VectorWriter | None = None  # the user's turns still being embedded, waited for by meaning
    graph: KnowledgeGraph | None = None  # with graph.follow_links, links move the ranking

    async def run(
        self,
        owners: str | Sequence[str],
        query: str,
        thread_id: str | None = None,
        types: list[str] | None = None,
        limit: int = 10,
        mode: str = "hybrid",
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        *,
        min_score: float | None = None,
        max_tokens: int | None = None,
        as_of: str | datetime | None = None,
    ) -> SearchResult:
        query = check.query(query, self.settings.search.max_query_chars)
        if thread_id is not None:
            thread_id = check.thread_id(thread_id)
        types_ = check.types(types)
        limit = check.count(limit, "limit", low=1, high=self.settings.search.max_limit)
        mode_ = check.mode(mode)
        since_, until_ = check.time_range(since, until)
        if min_score is not None:
            min_score = check.fraction(min_score, "min_score")
        if max_tokens is not None:
            max_tokens = check.count(max_tokens, "max_tokens", low=1, high=1_000_000)
        as_of_ = check.timestamp(as_of, "as_of")
        time_filter = None
        if since_ is None and until_ is None:  # explicit bounds win over the query's words
            named = time_range(query, as_of_ or utcnow())
            if named is not None:
                time_filter = TimeFilter(phrase=named.phrase, since=named.since, until=named.until)
                since_, until_ = named.since, named.until
                # The words that named the time filter; they are not what the memory is about.
                query = " ".join(query.replace(named.phrase, " ").split()) or query

        asked = query
        query = intent.focus(query)  # a question for an account over time: what it is about
        keys = [owners] if isinstance(owners, str) else list(owners)
        if thread_id is not None:
            keys = keys[:1]  # a thread is one owner's: the same id in a space is another thread
        search = SearchQuery(
            user_id=keys[0],
            text=query,
            mode=mode_,
            thread_id=thread_id,
            types=types_,
            since=since_,
            until=until_,
            limit=limit,
            fusion=self.settings.search.fusion,
            rrf_k=self.settings.search.rrf_k,
            context_weight=self.settings.search.context_weight,
            text_weight=self.settings.search.text_weight,
            vector_weight=self.settings.search.vector_weight,
            phrases=quoted_phrases(asked),
            as_of=as_of_,
        )
        if search.mode != "text" and self.vectors is not None:
            for key in keys:
                await self.vectors.settled(key)  # read-your-writes by meaning: service/vectors.py
        # For a question about the user's words, a deeper pool than asked: the replies that outrank them
        # move down, and what was below comes up (search/intent.py).
        about_the_user = intent.about_the_user(asked)
        depth = max(limit, POOL) if about_the_user else limit
        searches = [search.model_copy(update={"user_id": key, "limit": depth}) for key in keys]
        hits, signals = await self._found(searches, query)
        if time_filter is not None and not hits:
            # Nothing was made in the time the query named: its words may have meant something else
            # (or another "now"); answer from all of memory rather than nothing, and say so.
            unbounded = [s.model_copy(update={"since": None, "until": None}) for s in searches]
            hits, signals = await self._found(unbounded, query)
            time_filter = time_filter.model_copy(update={"applied": False})
        if about_the_user:
            hits, signals = reordered(hits, signals, intent.users_words_first)
        if time_filter is None and as_of_ is None and not intent.about_the_past(asked):
            hits, signals = reordered(hits, signals, intent.newer_first)
        hits, signals = reordered(hits, signals, intent.rules_up)
        hits, signals = hits[:limit], signals[:limit]
        found = results.search_hits(
            hits, signals, self.tokens.count, query, min_score=min_score, max_tokens=max_tokens, mode=mode_
        )
        return SearchResult(results=found, mode=mode_, time_filter=time_filter)

    async def _found(self, searches: list[SearchQuery], query: str) -> tuple[list[Hit], list[HitSignals]]:
        """The hits of one search per owner (personal memory, each space read), best first, with what
        each shows about its relevance. Several owners' hits are pooled by that calibrated relevance,
        which means the same in every owner's ranking (results.pooled)."""
        following = self.graph is not None and self.settings.graph.follow_links
        limit = searches[0].limit
        if following:  # a deeper pool for the links to reorder
            searches = [s.model_copy(update={"limit": max(limit * 4, 40)}) for s in searches]
        ranked, vector = await self._ranked(searches)
        if following and self.graph is not None:
            ranked = [
                await self.graph.follow_links(
                    search.user_id, query, hits, limit, self.settings.graph.link_weight
                )
                for search, hits in zip(searches, ranked, strict=True)
            ]
        per_owner = [
            (hits, await results.signals_of(self.long_term, search.user_id, query, vector, hits))
            for search, hits in zip(searches, ranked, strict=True)
        ]
        return results.pooled(per_owner, limit)

    async def _ranked(self, searches: list[SearchQuery]) -> tuple[list[list[Hit]], list[float] | None]:
        """The store's hits for each search, and the query's vector (None in text mode)."""
        if searches[0].mode == "text":
            return list(await asyncio.gather(*(self.long_term.search(s, None) for s in searches))), None
        # Embed the query on one core while the store runs the full-text side on another. A plain
        # asyncio task, not a task group: the store awaits it where it needs the vector, and its
        # errors must surface there as themselves, not wrapped in an ExceptionGroup. One vector for
        # every owner's search.
        embedding = asyncio.ensure_future(self.queries.vector(searches[0].text))
        try:
            hits = list(await asyncio.gather(*(self.long_term.search(s, embedding) for s in searches)))
        finally:
            if not embedding.done():
                embedding.cancel()
            elif not embedding.cancelled():
                embedding.exception()  # seen: its error, if any, was the store's to raise
        return hits, embedding.result()


POOL = 40  # hits ranked for a question about the user's words, of which the first `limit` are kept


def reordered(
    hits: Sequence[Hit], signals: Sequence[HitSignals], rule: Callable[[Sequence[intent.Ranked]], list[int]]
) -> tuple[list[Hit], list[HitSignals]]:
    """The hits in the order a rule of search/intent.py gives, ranks renumbered."""
    order = rule([_ranked(hit) for hit in hits])
    if order == list(range(len(hits))):
        return list(hits), list(signals)
    return [hits[i] for i in order], [
        HitSignals(rank, signals[i].overlap, signals[i].cosine) for rank, i in enumerate(order, start=1)
    ]


def _ranked(hit: Hit) -> intent.Ranked:
    memory = hit.memory
    return intent.Ranked(
        score=hit.score,
        when=memory.created_at.timestamp(),
        order=0,
        text=memory.content if hit.passage is None else memory.content[slice(*hit.passage)],
        role=memory.role,
        content=memory.content,
    )
