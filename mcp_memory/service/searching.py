"""search_memory from the query to the results: each owner's store finds candidates for the one
SearchQuery the tool built (search/query.py), search/ranking.py ranks them (the same for every
backend), then each hit gets its calibrated score, the floor and the token budget (service/results.py).

The steps overlap where they can: the query is embedded while the stores find the candidates by words
and while the user's turns still being embedded are waited for (at most search.vector_wait_ms); then
the vector side, then the one ranking.

Made per search from the service's current parts, so a changed setting applies to the next search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from mcp_memory.config import Settings
from mcp_memory.llm.query_vectors import QueryVectors
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import Hit
from mcp_memory.search import ranking
from mcp_memory.search.hybrid import candidate_pool
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.relevance import HitSignals
from mcp_memory.service import results
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.vectors import VectorWriter
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import SearchResult

READ_YOUR_WRITES = 8  # turns being embedded that a search waits for without bound (_embedded)


@dataclass(frozen=True)
class Searching:
    settings: Settings
    long_term: LongTermStore
    queries: QueryVectors  # the query's vector, reused for a query asked before
    tokens: TokenCounter
    vectors: VectorWriter | None = None  # the user's turns still being embedded, waited for by meaning
    graph: KnowledgeGraph | None = None  # with graph.follow_links, links move the ranking

    async def run(self, query: SearchQuery) -> SearchResult:
        """The query's results: each owner's store finds candidates, search/ranking.py ranks them, pools
        the owners' rankings and moves them by what the query asks; then scored, floored and fitted."""
        hits, signals, complete = await self._found(query)
        time_filter = query.time_filter
        if time_filter is not None and query.unbounded is not None and not hits:
            # Nothing was made in the time the query named: its words may have meant something else
            # (or another "now"); answer from all of memory rather than nothing, and say so.
            hits, signals, complete = await self._found(query.unbounded)
            time_filter = time_filter.model_copy(update={"applied": False})
        hits, signals = ranking.by_intent(hits, signals, query, time_named=time_filter is not None)
        hits, signals = hits[: query.limit], signals[: query.limit]
        found = results.search_hits(hits, signals, self.tokens.count, query)
        return SearchResult(
            results=found, mode=query.mode, time_filter=time_filter, meaning_incomplete=not complete
        )

    async def _found(self, query: SearchQuery) -> tuple[list[Hit], list[HitSignals], bool]:
        """The hits of the query in each of its owners' memory (personal memory, each space read), best
        first, with what each shows about its relevance, and whether every memory they could find by
        meaning had its vector (False: some were still being embedded after search.vector_wait_ms).
        Several owners' hits are pooled by that calibrated relevance (ranking.pooled)."""
        ranked, vector, complete = await self._ranked(query)
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
        per_owner = [(hits, ranking.signals_of(query.terms.matched, hits, by_meaning)) for hits in ranked]
        hits, signals = ranking.pooled(per_owner, query.kept)
        return hits, signals, complete

    async def _ranked(self, query: SearchQuery) -> tuple[list[list[Hit]], list[float] | None, bool]:
        """Each owner's hits for the query, the query's vector (None in text mode) and whether the
        meaning side was complete."""
        owners = query.owners
        if query.mode == "text":
            texts = await asyncio.gather(*(self.long_term.text_candidates(o, query) for o in owners))
            whole = not any(t.partial for t in texts)  # an index still being built: what is ready
            return await self._hits(query, texts, [None] * len(owners), None), None, whole
        # Embed the query on one core while the store finds the text candidates on another. A plain
        # asyncio task, not a task group: its errors must surface here as themselves, not wrapped in an
        # ExceptionGroup. One vector for every owner's search.
        embedding = asyncio.ensure_future(self.queries.vector(query.text))
        try:
            texts, complete = await asyncio.gather(
                asyncio.gather(*(self.long_term.text_candidates(o, query) for o in owners)),
                self._embedded(owners),
            )
            vector = await embedding
        finally:
            if not embedding.done():
                embedding.cancel()
            elif not embedding.cancelled():
                embedding.exception()  # seen: its error, if any, was raised above
        nearest = await asyncio.gather(
            *(
                self.long_term.vector_candidates(o, query, vector, t)
                for o, t in zip(owners, texts, strict=True)
            )
        )
        # An index still being built from the file (a cold start) answers from what is ready.
        partial = any(t.partial for t in texts) or any(n.partial for n in nearest)
        complete = complete and not partial
        return await self._hits(query, texts, nearest, vector), vector, complete

    async def _hits(
        self,
        query: SearchQuery,
        texts: Sequence[ranking.TextCandidates],
        nearest: Sequence[ranking.VectorCandidates | None],
        vector: list[float] | None,
    ) -> list[list[Hit]]:
        """Each owner's candidates in the one ranking, read as hits."""
        pool = candidate_pool(query)
        return list(
            await asyncio.gather(
                *(
                    self.long_term.hits(owner, query, ranking.fuse(query, text, near, pool), vector)
                    for owner, text, near in zip(query.owners, texts, nearest, strict=True)
                )
            )
        )

    async def _embedded(self, owners: Sequence[str]) -> bool:
        """Wait, at most search.vector_wait_ms, until none of the owners' turns waits for its vector
        (read-your-writes by meaning: service/vectors.py). False when some still did: the search then
        answers from what is embedded, and finds the rest by their words only."""
        if self.vectors is None:
            return True
        # What was just said is always found by its meaning: a few turns are waited for whatever it
        # takes (a chat's pace); a backlog beyond them (an import added flat out) at most the bound.
        vectors = self.vectors
        bound = (
            None
            if sum(vectors.pending(o) for o in owners) <= READ_YOUR_WRITES
            else self.settings.search.vector_wait_ms
        )
        with anyio.move_on_after(None if bound is None else bound / 1000):
            for owner in owners:
                await self.vectors.settled(owner)
            return True
        return False
