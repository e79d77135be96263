"""Search candidates of the Cosmos DB long-term store; search/ranking.py ranks them, as for every backend.
The SQL is in queries.py.

The text side is each container's full-text ranking (ORDER BY RANK FullTextScore): Cosmos DB can order
by that score but never project it, so each memory's text score is its rank's (ranking.rank_score),
and the containers' lists are merged by it. The vector side is each container's nearest memory items
(VectorDistance, projected) and passage items (a long memory's passages after its first: passages.py),
each memory by its best passage. A memory found by its words only gets, as its cosine, its memory
item's vector's (its first passage's), which the same response holds: nothing reads a vector again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from azure.cosmos.aio import ContainerProxy

from mcp_memory.models import MEMORY_TYPES, Hit
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.ranking import Candidate, Ranked, TextCandidates, VectorCandidates, rank_score
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.documents import from_document
from mcp_memory.storage.cosmos.passages import (
    Span,
    best_passages,
    passage_by_terms,
    vector_ranking,
)

# The containers holding these memory types, each with the types it holds.
Containers = Callable[[Sequence[str]], list[tuple[ContainerProxy, list[str]]]]
# Several queries of one container at once, answers in their order.
Queries = Callable[[ContainerProxy, Sequence[sql.CosmosQuery]], Awaitable[list[list[dict[str, Any]]]]]


class CosmosSearch:
    def __init__(self, containers: Containers, queries: Queries) -> None:
        self._containers = containers
        self._queries = queries

    async def text_candidates(self, user_id: str, query: SearchQuery) -> TextCandidates:
        plan = sql.search_plan(query, None)
        if query.threads == () or not (plan == "text" or (plan == "phrases" and query.mode == "text")):
            return TextCandidates()
        words = query.terms.words
        found: list[tuple[float, str, Candidate]] = []
        for container, types in self._containers(query.types or MEMORY_TYPES):
            (docs,) = await self._queries(container, [sql.search(user_id, query, None, types, plan)])
            for rank, doc in enumerate(docs, start=1):
                candidate = Candidate(doc["id"], _number(doc, passage_by_terms(doc, words)), 0.0, doc)
                found.append((rank_score(rank), doc["created_at"], candidate))
        if plan == "phrases":  # no relevance: newest first, across the containers
            found.sort(key=lambda f: f[1], reverse=True)
        else:  # stable: on a tie, the containers' order
            found.sort(key=lambda f: -f[0])
        return TextCandidates(
            [Candidate(c.key, c.passage, rank_score(rank), c.item) for rank, (_, _, c) in enumerate(found, 1)]
        )

    async def vector_candidates(
        self, user_id: str, query: SearchQuery, vector: Sequence[float], text: TextCandidates
    ) -> VectorCandidates:
        if query.threads == () or query.mode == "text":
            return VectorCandidates()
        query_vector = np.asarray(vector, dtype=np.float32)
        found: list[Candidate] = []
        if sql.search_plan(query, list(vector)) in ("vector", "hybrid"):
            for container, types in self._containers(query.types or MEMORY_TYPES):
                found += await self._nearest(container, user_id, query, list(vector), types)
        # Cosine similarities are comparable across containers: merged by them.
        found.sort(key=lambda c: -c.score)
        taken = {c.key for c in found}
        named = []
        for c in text.found:
            cosine = _cosine(c.item, query_vector)
            if c.key not in taken and cosine is not None:
                named.append(Candidate(c.key, c.passage, cosine, c.item))
        return VectorCandidates(found, named)

    async def hits(
        self, user_id: str, query: SearchQuery, ranked: Sequence[Ranked], vector: Sequence[float] | None
    ) -> list[Hit]:
        """The ranked memories' hits: every candidate came with its item, which passed every filter of
        the search (quoted phrases too) in the query that found it."""
        query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
        hits = []
        for r in ranked[: query.per_owner]:
            doc: dict[str, Any] = r.item
            cosine = None if query_vector is None else r.cosine
            if cosine is None and query_vector is not None:
                cosine = _cosine(doc, query_vector)
            hits.append(
                Hit(memory=from_document(doc), score=r.score, passage=_span(doc, r.passage), cosine=cosine)
            )
        return hits

    async def _nearest(
        self,
        container: ContainerProxy,
        user_id: str,
        query: SearchQuery,
        vector: list[float],
        types: list[str],
    ) -> list[Candidate]:
        """One container's memories nearest the query, each by its best passage: the nearest passage
        items are read beside the memory items; the memories they name are read with every filter of the
        search, and only passages of their current content count."""
        rows, docs = await self._queries(
            container,
            [
                sql.passage_search(user_id, query, vector, types),
                sql.search(user_id, query, vector, types, "vector"),
            ],
        )
        if not rows:
            return [Candidate(d["id"], 0, float(d["score"]), d) for d in docs]
        ids = list(dict.fromkeys(r["memory_id"] for r in rows))
        (named,) = await self._queries(container, [sql.search_memories(user_id, query, ids, types)])
        memories = {d["id"]: d for d in [*named, *docs]}
        return [
            Candidate(doc["id"], _number(doc, span), cosine, doc)
            for doc, span, cosine in vector_ranking(docs, best_passages(rows, memories), memories)
        ]


def _number(doc: dict[str, Any], span: Span | None) -> int:
    """The number of a memory's passage with this span (0: the first, or the only one)."""
    spans = doc.get("passage_spans") or []
    for number, (start, end) in enumerate(spans):
        if span == (int(start), int(end)):
            return number
    return 0


def _span(doc: dict[str, Any], number: int) -> Span | None:
    spans = doc.get("passage_spans")
    if not spans:
        return None
    start, end = spans[min(number, len(spans) - 1)]
    return int(start), int(end)


def _cosine(doc: dict[str, Any] | None, vector: np.ndarray) -> float | None:
    """The query's cosine with a memory item's own vector (its first passage's); None: it has none."""
    embedding = None if doc is None else doc.get("embedding")
    return None if embedding is None else float(np.dot(vector, np.asarray(embedding, dtype=np.float32)))
