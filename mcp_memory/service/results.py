"""What a search returns: each hit with its calibrated score, why it matched, its token count, the floor
and the budget.

The store ranks; this turns its hits into the tool's results. The score a hit carries is the calibrated
probability that it is relevant (search/relevance.py), so `min_score` means the same for every query;
`matched_by` says whether its words, its meaning or both found it, from the same signals, so it reads
the same on every backend; `max_tokens` keeps the best hits that fit (search/budget.py), counted with
the server's tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mcp_memory.errors import NotFoundError
from mcp_memory.models import Hit, Memory, SearchMode
from mcp_memory.search.budget import fit_budget
from mcp_memory.search.relevance import HitSignals, matched_by, ranked_scores, relevance, term_overlap
from mcp_memory.search.terms import keywords, query_terms
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import SearchHit


def terms_of(query: str) -> list[str]:
    return query_terms(keywords(query))


async def signals_of(
    store: LongTermStore, user_id: str, query: str, vector: Sequence[float] | None, hits: Sequence[Hit]
) -> list[HitSignals]:
    """What each hit shows about its relevance. Without a query vector (text mode) there is no cosine."""
    wanted = terms_of(query)
    query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
    found = []
    for rank, hit in enumerate(hits, start=1):
        cosine = hit.cosine  # the store's, of the memory's best passage, when it has it
        if query_vector is not None and cosine is None:
            embedding = await _embedding(store, user_id, hit.memory)
            cosine = 0.0 if embedding is None else float(np.dot(query_vector, embedding))
        elif query_vector is None:
            cosine = None
        text = hit.memory.content if hit.passage is None else hit.memory.content[slice(*hit.passage)]
        found.append(HitSignals(rank, term_overlap(wanted, text), cosine))
    return found


async def _embedding(store: LongTermStore, user_id: str, memory: Memory) -> np.ndarray | None:
    if memory.embedding is None:  # stores return hits without their vectors, to keep reads small
        try:
            memory = await store.get(user_id, memory.id)
        except NotFoundError:  # forgotten since the search
            return None
    return None if memory.embedding is None else np.asarray(memory.embedding, dtype=np.float32)


def pooled(
    per_owner: Sequence[tuple[Sequence[Hit], Sequence[HitSignals]]], limit: int
) -> tuple[list[Hit], list[HitSignals]]:
    """One ranking of several owners' hits (a user's own memory and the spaces they read): ordered by
    each hit's calibrated relevance in its own owner's ranking, the best `limit`, ranked anew."""
    if len(per_owner) == 1:
        hits, signals = per_owner[0]
        return list(hits), list(signals)
    scored = [
        (relevance(signal), hit, signal)
        for hits, signals in per_owner
        for hit, signal in zip(hits, signals, strict=True)
    ]
    scored.sort(key=lambda found: -found[0])  # stable: ties keep the owners' order
    best = scored[:limit]
    return [hit for _, hit, _ in best], [
        HitSignals(rank, signal.overlap, signal.cosine) for rank, (_, _, signal) in enumerate(best, start=1)
    ]


def search_hits(
    hits: Sequence[Hit],
    signals: Sequence[HitSignals],
    count: Callable[[str], int],
    query: str,
    *,
    min_score: float | None = None,
    max_tokens: int | None = None,
    mode: SearchMode = "hybrid",
) -> list[SearchHit]:
    """The tool's results: scored, told why they matched, floored at `min_score`, and fitted into
    `max_tokens`. `mode` is the search's: a vector search's hits matched by meaning alone."""
    scored = [
        SearchHit.of(
            hit.memory,
            score,
            # Counted once, when the memory was written, with the same tokenizer.
            token_count=hit.memory.token_count or count(hit.memory.content),
            matched_by=matched_by(hit_signals, mode),
            passage=hit.passage,
        )
        for hit, hit_signals, score in zip(hits, signals, ranked_scores(signals), strict=True)
    ]
    if min_score is not None:
        scored = [hit for hit in scored if hit.score >= min_score]
    return scored if max_tokens is None else within_budget(scored, max_tokens, count, query)


def within_budget(
    hits: Sequence[SearchHit], max_tokens: int, count: Callable[[str], int], query: str
) -> list[SearchHit]:
    """The best hits whose contents fit max_tokens; a long one as its best passage, or a snippet around
    its match."""
    spans = [None if hit.passage is None else (hit.passage.start, hit.passage.end) for hit in hits]
    fitted = fit_budget([hit.content for hit in hits], max_tokens, count, terms_of(query), spans)
    return [
        hits[f.index].model_copy(
            update={"content": f.content, "token_count": f.token_count, "snippet": f.snippet}
        )
        for f in fitted
    ]
