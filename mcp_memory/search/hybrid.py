"""Hybrid search over one user's in-memory indexes: pure ranking, no I/O.

A store with in-memory indexes (the SQLite backend) asks here how many candidates to take, which
rows a query's filters allow, the BM25 candidates, and their fusion with the vector side by the
query's rule (normalized score sum or RRF). Cosmos DB ranks on the server instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

from mcp_memory.search.fusion import rrf, score_fusion
from mcp_memory.search.passages import ROWID_MASK, best_hits, best_per_memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import terms
from mcp_memory.search.text_index import TextIndex
from mcp_memory.search.vector_index import VectorIndex

TEXT_CANDIDATES = 100  # BM25 candidates fused with the vector scores; the rest count as no text match
PASSAGE_ROWS = 4  # rows taken per memory wanted when some memories have several passages
DISTINCT = 0.5  # words single a memory out when the next best text hit scores at most this share of it


def candidate_pool(query: SearchQuery) -> int:
    """How many candidates each side returns: quoted phrases filter afterwards, so they widen it."""
    return max(query.per_owner * 4, 50) * (4 if query.phrases else 1)


def text_candidates(
    index: TextIndex, query: SearchQuery, pool: int, where: RowFilter
) -> list[tuple[int, float]] | None:
    """BM25's best passages (key, score) of the best `pool` memories, or None when the query has no words
    to match (blocking)."""
    # A quoted phrase's words count too (they may all be stopwords: "to be"), and the rows must hold
    # them all; the phrase itself is checked verbatim on the rows the store returns.
    required, wanted = query.terms.required, query.terms.wanted
    if not wanted:
        return None
    # Context weight: a memory's own words count fully, its context (earlier turns, date) less.
    # A long memory's passages are rows of their own: more rows than memories are asked for.
    rows = pool * PASSAGE_ROWS if len(index) > index.memories() else pool
    hits = index.search(wanted, rows, where, context_weight=query.context_weight, required=required)
    return hits if rows == pool else best_hits(hits)[:pool]


def fuse(
    vectors: VectorIndex,
    query: SearchQuery,
    vector: np.ndarray,
    text_hits: list[tuple[int, float]],
    pool: int,
    where: RowFilter,
    words: float = 1.0,
) -> list[tuple[int, float]]:
    """The vector side, fused with the text hits as the query asks (blocking: the mat-vec is long);
    `words`: how much a word match counts here (words_weight), times the query's text weight.

    Hits are (key, score) of each memory's best passage (search/passages.py): score fusion adds a
    passage's BM25 and its cosine, and a memory ranks by its best passage; RRF ranks memories by their
    best passage on each side."""
    if query.mode == "vector" or (not text_hits and query.fusion == "rrf"):
        return vectors.search(vector, pool, where)
    text_weight = query.text_weight * words
    if query.fusion == "score":
        # With an approximate index: its nearest rows, and the text hits' own cosines (exact).
        named = np.fromiter((key for key, _ in text_hits), dtype=np.int64, count=len(text_hits))
        keys, cosines = vectors.scores(vector, where, pool=pool, also=named)
        keys, cosines = with_first_passages(keys, cosines, named)
        several = len(vectors) > vectors.memories() or bool(named.size and named.max() > ROWID_MASK)
        rows = pool * PASSAGE_ROWS if several else pool
        fused = score_fusion(
            text_hits,
            keys,
            cosines,
            limit=rows,
            text_weight=text_weight,
            vector_weight=query.vector_weight,
        )
        return best_hits(fused)[:pool] if several else fused
    return memory_rrf(query, text_hits, vectors.search(vector, pool, where), text_weight)


def with_first_passages(
    keys: np.ndarray, cosines: np.ndarray, named: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The vector side, with a text hit's passage that has no vector yet (a long turn's later passages
    are embedded after its first: service/vectors.py) scored by its memory's first passage, so a memory
    found by the words of a passage still being embedded is not ranked by its words alone."""
    later = named[(named > ROWID_MASK) & ~np.isin(named, keys)]
    if later.size == 0:
        return keys, cosines
    order = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys[order], later & ROWID_MASK)
    at = np.minimum(at, max(0, keys.size - 1))
    found = keys.size > 0 and keys[order][at] == (later & ROWID_MASK)
    if not np.any(found):
        return keys, cosines
    firsts = order[at[found]]
    return np.concatenate([keys, later[found]]), np.concatenate([cosines, cosines[firsts]])


def words_weight(text: TextIndex, query: SearchQuery, text_hits: Sequence[tuple[int, float]]) -> float:
    """How much a word match counts, relative to the text weight (blocking).

    In full when the best text hit holds every word of the query and no other scores half as much by
    its words (a distinctive phrase, an error code: the words say where the answer is); otherwise one over the mean passages of the user's memories
    (each counted up to PRIOR_PASSAGES, so a few pasted files do not silence words for everything
    else): chat turns (one passage each) keep the full weight, but where most memories are long answers
    their words match a question's by accident more often (measured on BEAM, bench/beam.py: the text
    side at full weight cost more than it added there)."""
    share = 1.0 / text.passages_per_memory()
    if share >= 1.0 or not text_hits:
        return share
    # Singled out: no other memory scores half as much by its words.
    alone = len(text_hits) == 1 or text_hits[1][1] <= DISTINCT * text_hits[0][1]
    return 1.0 if alone and text.holds_all(text_hits[0][0], query.terms.wanted) else share


def memory_rrf(
    query: SearchQuery,
    text_hits: Sequence[tuple[int, float]],
    vector_hits: Sequence[tuple[int, float]],
    text_weight: float | None = None,
) -> list[tuple[int, float]]:
    """RRF of the two sides' memories (each side's best passage of a memory may differ): each memory is
    reported by the key of its best passage on the side that ranked it first."""
    first: dict[int, int] = {}
    for key, _ in [*text_hits, *vector_hits]:
        first.setdefault(key & ROWID_MASK, key)
    fused = rrf(
        [[key & ROWID_MASK for key, _ in text_hits], [key & ROWID_MASK for key, _ in vector_hits]],
        weights=[query.text_weight if text_weight is None else text_weight, query.vector_weight],
        k=query.rrf_k,
    )
    return [(first[rowid], score) for rowid, score in fused]


def row_filter(query: SearchQuery, until: datetime | None = None) -> RowFilter:
    """The rows a query's filters allow; `until`: a bound of the store's own in place of the query's (a
    search as of a moment: nothing created after it)."""
    until = query.until if until is None else until
    return RowFilter(
        thread_id=query.thread_id,
        threads=query.threads,
        types=tuple(query.types) if query.types else None,
        since=query.since.timestamp() if query.since else None,
        until=until.timestamp() if until else None,
    )


def fuse_as_of(
    query: SearchQuery,
    text_hits: list[tuple[int, float]],
    keys: np.ndarray | None,
    cosines: np.ndarray | None,
    query_vector: np.ndarray | None,
    then: Sequence[tuple[int, str, np.ndarray | None]],
    pool: int,
) -> list[tuple[int, float]]:
    """A search as of a past moment: the active candidates and the memories current then but superseded
    since (`then`: rowid, text, vector), fused by the query's rule as search does.
    A memory current then gets, for text, the share of the query's terms it holds times the best BM25,
    so the fusion's normalization (score / best) puts it on the BM25 hits' 0..1 scale."""
    wanted = query.terms.wanted
    best = max((score for _, score in text_hits), default=1.0)
    if wanted and query.mode != "vector":
        for rowid, text, _ in then:
            have = set(terms(text))
            share = sum(term in have for term in wanted) / len(wanted)
            if share:
                text_hits.append((rowid, share * best))
    text_hits.sort(key=lambda hit: hit[1], reverse=True)
    if keys is None or cosines is None or query_vector is None:
        return text_hits[:pool]
    with_vector = [(rowid, vector) for rowid, _, vector in then if vector is not None]
    keys = np.concatenate([keys, np.asarray([r for r, _ in with_vector], dtype=np.int64)])
    cosines = np.concatenate(
        [cosines, np.asarray([float(v @ query_vector) for _, v in with_vector], dtype=np.float32)]
    )
    if query.mode != "vector" and query.fusion == "score":
        weights = {"text_weight": query.text_weight, "vector_weight": query.vector_weight}
        return best_hits(score_fusion(text_hits, keys, cosines, limit=pool * PASSAGE_ROWS, **weights))[:pool]
    kept = best_per_memory(keys, cosines)
    order = kept[np.argsort(-cosines[kept], kind="stable")[:pool]]
    vector_hits = [(int(keys[i]), float(cosines[i])) for i in order]
    if query.mode == "vector" or not text_hits:
        return vector_hits
    return memory_rrf(query, text_hits, vector_hits)
