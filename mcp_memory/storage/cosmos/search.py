"""Search on the Cosmos DB long-term store: each container ranks memories (a long one by its best passage,
cosmos/passages.py), and the containers' rankings are fused. The SQL is in queries.py.

Each hit carries the query's cosine with its best passage (Hit.cosine): VectorDistance's value where the
query projects it (a vector ranking, passage items); where it cannot (RRF and full-text rankings project
no score), computed here once from the memory item's vector, which the same response holds (its first
passage's), so nothing reads a vector again to score a hit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from azure.cosmos.aio import ContainerProxy

from mcp_memory.models import MEMORY_TYPES, Hit
from mcp_memory.search.fusion import rrf
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.base import QueryVector, resolve_vector
from mcp_memory.storage.cosmos import queries as sql
from mcp_memory.storage.cosmos.documents import from_document
from mcp_memory.storage.cosmos.passages import (
    best_passages,
    first_span,
    fuse_sides,
    passage_by_terms,
    vector_ranking,
)

# The containers holding these memory types, each with the types it holds.
Containers = Callable[[Sequence[str]], list[tuple[ContainerProxy, list[str]]]]
# Several queries of one container at once, answers in their order.
Queries = Callable[[ContainerProxy, Sequence[sql.CosmosQuery]], Awaitable[list[list[dict[str, Any]]]]]


@dataclass(frozen=True)
class Found:
    """A memory a container's search found: its item, its best passage (None: one passage, or not
    known) and the query's cosine with it (None: not projected by the query)."""

    doc: dict[str, Any]
    passage: tuple[int, int] | None
    cosine: float | None

    def hit(self, score: float, vector: np.ndarray | None) -> Hit:
        """The hit, with its cosine to the query `vector` (None: a text search): the query's, else its
        item's vector's (None: it has none yet)."""
        cosine = self.cosine
        embedding = self.doc.get("embedding")
        if vector is None:
            cosine = None
        elif cosine is None and embedding is not None:
            cosine = float(np.dot(vector, np.asarray(embedding, dtype=np.float32)))
        return Hit(memory=from_document(self.doc), score=score, passage=self.passage, cosine=cosine)


class CosmosSearch:
    def __init__(self, containers: Containers, queries: Queries) -> None:
        self._containers = containers
        self._queries = queries

    async def search(self, user_id: str, query: SearchQuery, vector: QueryVector) -> list[Hit]:
        vector = await resolve_vector(vector)
        plan = sql.search_plan(query, vector)
        if plan == "none" or query.threads == ():  # nothing to rank, or limited to no thread
            return []
        rankings: list[list[Found]] = []
        for container, types in self._containers(query.types or MEMORY_TYPES):
            rankings.append(await self._search_container(container, user_id, query, vector, types, plan))
        query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
        if plan == "vector":  # cosine similarities are comparable across containers: merge by them
            merged = sorted((f for r in rankings for f in r), key=lambda f: f.cosine or 0.0, reverse=True)
            return [f.hit(f.cosine or 0.0, query_vector) for f in merged[: query.per_owner]]
        if plan == "phrases":  # no relevance to fuse: newest first, as each container returned them
            merged = sorted((f for r in rankings for f in r), key=lambda f: f.doc["created_at"], reverse=True)
            rankings = [merged]
        # RRF scores are not projectable in Cosmos DB; each list's rank is what we know, so fuse by rank.
        by_key = {(i, f.doc["id"]): f for i, ranking in enumerate(rankings) for f in ranking}
        fused = rrf(
            [[(i, f.doc["id"]) for f in ranking] for i, ranking in enumerate(rankings)], k=query.rrf_k
        )
        return [by_key[key].hit(score, query_vector) for key, score in fused[: query.per_owner]]

    async def _search_container(
        self,
        container: ContainerProxy,
        user_id: str,
        query: SearchQuery,
        vector: list[float] | None,
        types: list[str],
        plan: sql.SearchPlan,
    ) -> list[Found]:
        """One container's ranking of memories. With a query vector, the nearest passage items are read
        beside the usual query; when there are some (the user has long memories in scope), the memories
        are ranked by their best passage (_rank_by_passages); else the usual query's answer stands."""
        words = query.terms.words
        if vector is None or plan not in ("vector", "hybrid"):
            (docs,) = await self._queries(container, [sql.search(user_id, query, vector, types, plan)])
            return [Found(d, passage_by_terms(d, words), None) for d in docs]
        rows, docs = await self._queries(
            container,
            [
                sql.passage_search(user_id, query, vector, types),
                sql.search(user_id, query, vector, types, plan),
            ],
        )
        if rows:
            return await self._rank_by_passages(container, user_id, query, vector, types, plan, rows, docs)
        if plan == "vector":
            return [Found(d, first_span(d), float(d["score"])) for d in docs]
        return [Found(d, passage_by_terms(d, words), None) for d in docs]

    async def _rank_by_passages(
        self,
        container: ContainerProxy,
        user_id: str,
        query: SearchQuery,
        vector: list[float],
        types: list[str],
        plan: sql.SearchPlan,
        rows: list[dict[str, Any]],
        docs: list[dict[str, Any]],
    ) -> list[Found]:
        """Memories ranked by their best passage: by cosine (vector), or by RRF of that ranking and the
        full-text ranking of the memories (hybrid, fuse_sides: Cosmos DB's RRF cannot group passages by
        memory). The memories the passages name are read with every filter of the search, and only
        passages of their current content count."""
        ids = list(dict.fromkeys(r["memory_id"] for r in rows))
        queries = [sql.search_memories(user_id, query, ids, types)]
        if plan == "hybrid":
            queries += [
                sql.search(user_id, query, vector, types, "vector"),
                sql.search(user_id, query, vector, types, "text"),
            ]
        found = await self._queries(container, queries)
        vector_docs = docs if plan == "vector" else found[1]
        memories = {d["id"]: d for d in [*found[0], *vector_docs]}
        by_vector = vector_ranking(vector_docs, best_passages(rows, memories), memories)
        if plan == "vector":
            return [Found(d, span, cosine) for d, span, cosine in by_vector[: query.per_owner]]
        return [Found(*f) for f in fuse_sides(by_vector, found[2], query)]
