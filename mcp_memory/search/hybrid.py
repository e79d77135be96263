"""Hybrid search's candidates from one user's in-memory indexes: pure functions, no I/O.

A store with in-memory indexes (the SQLite backend) asks here how many candidates to take, which
rows a query's filters allow, the BM25 candidates and how much their words count; their fusion with the
vector side is search/ranking.py's, the same for every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

from mcp_memory.search.passages import ROWID_MASK, best_hits
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.text_index import TextIndex

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
