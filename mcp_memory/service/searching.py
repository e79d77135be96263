"""search_memory from the query to the results: the store's ranking of each owner's memory for the one
SearchQuery the tool built (search/query.py), then each hit's calibrated score, the floor and the token
budget (service/results.py).

Made per search from the service's current parts, so a changed setting applies to the next search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_memory.config import Settings
from mcp_memory.llm.query_vectors import QueryVectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import Hit
from mcp_memory.search import intent
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.relevance import HitSignals
from mcp_memory.service import results
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import SearchResult


@dataclass(frozen=True)
class Searching:
    settings: Settings
    long_term: LongTermStore
    queries: QueryVectors  # the query's vector, reused for a query asked before
    tokens: TokenCounter
    vectors: VectorWriter | None = None  # the user's turns still being embedded, waited for by meaning
    graph: KnowledgeGraph | None = None  # with graph.follow_links, links move the ranking

    async def run(self, query: SearchQuery) -> SearchResult:
        """The query's results: each owner's store ranks its memory for the same query, the rankings are
        pooled, moved by the ranking rules of search/intent.py, and scored, floored and fitted."""
        if query.mode != "text" and self.vectors is not None:
            for owner in query.owners:
                await self.vectors.settled(owner)  # read-your-writes by meaning: service/vectors.py
        hits, signals = await self._found(query)
        time_filter = query.time_filter
        if time_filter is not None and query.unbounded is not None and not hits:
            # Nothing was made in the time the query named: its words may have meant something else
            # (or another "now"); answer from all of memory rather than nothing, and say so.
            hits, signals = await self._found(query.unbounded)
            time_filter = time_filter.model_copy(update={"applied": False})
        asked = query.question
        if intent.about_the_user(asked):
            hits, signals = reordered(hits, signals, intent.users_words_first)
        if time_filter is None and query.as_of is None and not intent.about_the_past(asked):
            hits, signals = reordered(hits, signals, intent.newer_first)
        hits, signals = reordered(hits, signals, intent.rules_up)
        hits, signals = hits[: query.limit], signals[: query.limit]
        found = results.search_hits(hits, signals, self.tokens.count, query)
        return SearchResult(results=found, mode=query.mode, time_filter=time_filter)

    async def _found(self, query: SearchQuery) -> tuple[list[Hit], list[HitSignals]]:
        """The hits of the query in each of its owners' memory (personal memory, each space read), best
        first, with what each shows about its relevance. Several owners' hits are pooled by that
        calibrated relevance, which means the same in every owner's ranking (results.pooled)."""
        ranked, vector = await self._ranked(query)
        if self.graph is not None and query.follow_links:  # the stores ranked a deeper pool for links
            ranked = [
                await self.graph.follow_links(
                    owner, query.text, hits, query.kept, self.settings.graph.link_weight
                )
                for owner, hits in zip(query.owners, ranked, strict=True)
            ]
        else:
            ranked = [hits[: query.kept] for hits in ranked]
        by_meaning = vector is not None
        per_owner = [(hits, results.signals_of(query.terms.matched, hits, by_meaning)) for hits in ranked]
        return results.pooled(per_owner, query.kept)

    async def _ranked(self, query: SearchQuery) -> tuple[list[list[Hit]], list[float] | None]:
        """Each owner's store's hits for the query, and the query's vector (None in text mode)."""
        owners = query.owners
        if query.mode == "text":
            return list(await asyncio.gather(*(self.long_term.search(o, query, None) for o in owners))), None
        # Embed the query on one core while the store runs the full-text side on another. A plain
        # asyncio task, not a task group: the store awaits it where it needs the vector, and its
        # errors must surface there as themselves, not wrapped in an ExceptionGroup. One vector for
        # every owner's search.
        embedding = asyncio.ensure_future(self.queries.vector(query.text))
        try:
            hits = list(await asyncio.gather(*(self.long_term.search(o, query, embedding) for o in owners)))
        finally:
            if not embedding.done():
                embedding.cancel()
            elif not embedding.cancelled():
                embedding.exception()  # seen: its error, if any, was the store's to raise
        return hits, embedding.result()


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
