"""Hybrid search over one user's in-memory indexes: pure ranking, no I/O.

A store with in-memory indexes (the SQLite backend) asks here how many candidates to take, which
rows a query's filters allow, the BM25 candidates, and their fusion with the vector side by the
query's rule (normalized score sum or RRF). Cosmos DB ranks on the server instead.
"""

from __future__ import annotations

import numpy as np

from mcp_memory.models import SearchQuery
from mcp_memory.search.fusion import rrf, score_fusion
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import keywords
from mcp_memory.search.text_index import TextIndex, query_terms
from mcp_memory.search.vector_index import VectorIndex

TEXT_CANDIDATES = 100  # BM25 candidates fused with the vector scores; the rest count as no text match


def candidate_pool(query: SearchQuery) -> int:
    """How many candidates each side returns: quoted phrases filter afterwards, so they widen it."""
    return max(query.limit * 4, 50) * (4 if query.phrases else 1)


def text_candidates(
    index: TextIndex, query: SearchQuery, pool: int, where: RowFilter
) -> list[tuple[int, float]] | None:
    """BM25's best `pool` (rowid, score), or None when the query has no words to match (blocking)."""
    # A quoted phrase's words count too (they may all be stopwords: "to be"), and the rows must hold
    # them all; the phrase itself is checked verbatim on the rows the store returns.
    required = query_terms(query.phrases)
    wanted = query_terms([*keywords(query.text), *query.phrases])
    if not wanted:
        return None
    # Context weight: a memory's own words count fully, its context (earlier turns, date) less.
    return index.search(wanted, pool, where, context_weight=query.context_weight, required=required)


def fuse(
    vectors: VectorIndex,
    query: SearchQuery,
    vector: np.ndarray,
    text_hits: list[tuple[int, float]],
    pool: int,
    where: RowFilter,
) -> list[tuple[int, float]]:
    """The vector side, fused with the text hits as the query asks (blocking: the mat-vec is long)."""
    if query.mode == "vector" or (not text_hits and query.fusion == "rrf"):
        return vectors.search(vector, pool, where)
    if query.fusion == "score":
        keys, cosines = vectors.scores(vector, where)
        return score_fusion(
            text_hits,
            keys,
            cosines,
            limit=pool,
            text_weight=query.text_weight,
            vector_weight=query.vector_weight,
        )
    vector_hits = vectors.search(vector, pool, where)
    return rrf(
        [[r for r, _ in text_hits], [r for r, _ in vector_hits]],
        weights=[query.text_weight, query.vector_weight],
        k=query.rrf_k,
    )


def row_filter(query: SearchQuery) -> RowFilter:
    return RowFilter(
        thread_id=query.thread_id,
        types=tuple(query.types) if query.types else None,
        since=query.since.timestamp() if query.since else None,
        until=query.until.timestamp() if query.until else None,
    )
