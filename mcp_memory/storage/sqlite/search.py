"""Search candidates of the SQLite store, from each user's in-memory indexes (storage/sqlite/indexes.py).

The store answers what search/ranking.py asks of every backend: the memories matching the query's
words (BM25 over the text index), the passages nearest its vector (the vector index) and, once ranked
there, the hits. A key is a memory's rowid and a passage's number (search/passages.py keys).

As of a moment, the indexes (of active memories) answer for the memories created by then; the few
superseded since that were current then are read from the file and put on the same scales: for text,
the share of the query's terms they hold times the best BM25 score; for meaning, their cosine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio.to_thread
import numpy as np

from mcp_memory.models import Hit
from mcp_memory.search.hybrid import (
    TEXT_CANDIDATES,
    candidate_pool,
    row_filter,
    text_candidates,
    with_first_passages,
    words_weight,
)
from mcp_memory.search.passages import best_per_memory, memory_of, passage_key, passages
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.ranking import Candidate, Ranked, TextCandidates, VectorCandidates
from mcp_memory.search.terms import terms
from mcp_memory.search.vector_index import VectorIndex
from mcp_memory.storage.sqlite.codec import unpack_vector
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.indexes import SearchIndexes
from mcp_memory.storage.sqlite.memory_rows import COLUMNS, current_at, memory_of_row, narrowed

# A memory current as of a search's moment but superseded since: (rowid, its text, its vector).
Then = list[tuple[int, str, np.ndarray | None]]


class SqliteSearch:
    def __init__(self, db: SqliteDatabase, indexes: SearchIndexes) -> None:
        self._db = db
        self._indexes = indexes

    async def text_candidates(self, user_id: str, query: SearchQuery) -> TextCandidates:
        if query.threads == () or query.mode == "vector":  # limited to no thread: nothing to rank
            return TextCandidates()
        pool = max(candidate_pool(query), TEXT_CANDIDATES)
        where = row_filter(query, until=_bound(query))
        async with self._indexes.current(user_id) as index:

            def work() -> tuple[list[tuple[int, float]], float]:
                found = text_candidates(index.text, query, pool, where) or []
                return found, words_weight(index.text, query, found)

            found, weight = await anyio.to_thread.run_sync(work)
            partial = index.partial
        if query.as_of is not None and query.terms.wanted:
            found = _with_text_then(query, found, await self._then(user_id, query))
        return TextCandidates([Candidate(*memory_of(key), score) for key, score in found], weight, partial)

    async def vector_candidates(
        self, user_id: str, query: SearchQuery, vector: Sequence[float], text: TextCandidates
    ) -> VectorCandidates:
        if query.threads == () or query.mode == "text":
            return VectorCandidates()
        pool, where = candidate_pool(query), row_filter(query, until=_bound(query))
        query_vector = np.asarray(vector, dtype=np.float32)
        named = np.fromiter(
            (passage_key(int(c.key), c.passage) for c in text.found), dtype=np.int64, count=len(text.found)
        )
        async with self._indexes.current(user_id) as index:
            keys, cosines = await anyio.to_thread.run_sync(
                lambda: index.vectors.scores(query_vector, where, pool=pool, also=named)
            )
            partial = index.partial
        if query.as_of is not None:
            then = [(r, v) for r, _, v in await self._then(user_id, query) if v is not None]
            keys = np.concatenate([keys, np.asarray([r for r, _ in then], dtype=np.int64)])
            cosines = np.concatenate(
                [cosines, np.asarray([float(v @ query_vector) for _, v in then], dtype=np.float32)]
            )
        keys, cosines = with_first_passages(keys, cosines, named)
        nearest = _nearest(keys, cosines.astype(np.float64), named, pool)
        return replace(nearest, partial=True) if partial else nearest

    async def hits(
        self, user_id: str, query: SearchQuery, ranked: Sequence[Ranked], vector: Sequence[float] | None
    ) -> list[Hit]:
        """The memories of the ranked candidates, each with its passage's span and the query's cosine
        with that passage (the index's own vector, exact)."""
        if not ranked:
            return []
        scored = [(passage_key(int(r.key), r.passage), r.score) for r in ranked]
        query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
        then = await self._then(user_id, query) if query.as_of is not None and vector is not None else []
        async with self._indexes.current(user_id) as index:
            by_key = await cosines_of(index.vectors, best_of(scored, query), query_vector, then)
        return await self.read_hits(user_id, scored, query, by_key)

    async def read_hits(
        self,
        user_id: str,
        scored: Sequence[tuple[int, float]],
        query: SearchQuery,
        cosines: Mapping[int, float | None],
    ) -> list[Hit]:
        """The memories of the ranked (key, score) hits (search/passages.py keys: a memory's best passage),
        each with that passage's span and its cosine (`cosines`, by key: the index's)."""
        if not scored:
            return []
        best = best_of(scored, query)
        rowids = list(best)
        marks = ",".join("?" * len(rowids))
        args: list[Any] = [*rowids, user_id]
        current = current_at(query.as_of, args)
        rows = await self._db.read(
            lambda conn: conn.execute(
                # `+user_id`: a check on the rows found by rowid, not an index to scan the user's rows by.
                f"SELECT {COLUMNS} FROM memories WHERE rowid IN ({marks}) AND +user_id = ? AND {current}",
                args,
            ).fetchall()
        )
        by_rowid = {r[0]: r for r in rows}
        phrases = [p.casefold() for p in query.phrases]
        hits = []
        for rowid in rowids:
            row = by_rowid.get(rowid)
            if row is None:
                continue
            memory = memory_of_row(row)
            if phrases and not all(p in memory.content.casefold() for p in phrases):
                continue
            key, score = best[rowid]
            spans = passages(memory.content)
            number = min(memory_of(key)[1], len(spans) - 1)  # a passage split differently since: its last
            passage = tuple(spans[number]) if len(spans) > 1 else None
            hits.append(Hit(memory=memory, score=score, passage=passage, cosine=cosines.get(key)))
            if len(hits) == query.per_owner:
                break
        return hits

    async def _then(self, user_id: str, query: SearchQuery) -> Then:
        return await self._db.read(lambda conn: _current_then(conn, user_id, query))


def _bound(query: SearchQuery) -> Any:
    """The latest creation time a search allows: as of a moment, nothing created after it."""
    if query.as_of is None:
        return None
    return query.as_of if query.until is None else min(query.until, query.as_of)


def _nearest(keys: np.ndarray, cosines: np.ndarray, named: np.ndarray, pool: int) -> VectorCandidates:
    """The best passage of each of the `pool` nearest memories, the cosines of the text side's passages
    (`named`) among the rest, and the lowest cosine compared (the scale's floor)."""
    if keys.size == 0:
        return VectorCandidates()
    kept = best_per_memory(keys, cosines)
    if kept.size > pool:  # the best `pool` first (a partition), then only those sorted
        kept = kept[np.argpartition(-cosines[kept], pool - 1)[:pool]]
    top = kept[np.argsort(-cosines[kept], kind="stable")]
    found = [Candidate(*memory_of(int(keys[i])), float(cosines[i])) for i in top]
    taken = {(c.key, c.passage) for c in found}
    wanted = np.isin(keys, named)
    others = [
        Candidate(*memory_of(int(k)), float(s)) for k, s in zip(keys[wanted], cosines[wanted], strict=True)
    ]
    return VectorCandidates(
        found, [c for c in others if (c.key, c.passage) not in taken], float(cosines.min())
    )


def _with_text_then(
    query: SearchQuery, found: list[tuple[int, float]], then: Then
) -> list[tuple[int, float]]:
    """The text hits and the memories current then (`then`), each scored the share of the query's terms
    it holds times the best BM25 score, best first."""
    wanted = query.terms.wanted
    best = max((score for _, score in found), default=1.0)
    found = list(found)
    for rowid, text, _ in then:
        have = set(terms(text))
        share = sum(term in have for term in wanted) / len(wanted)
        if share:
            found.append((rowid, share * best))
    return sorted(found, key=lambda hit: hit[1], reverse=True)


def _current_then(conn: sqlite3.Connection, user_id: str, query: SearchQuery) -> Then:
    """(rowid, text, vector) of the user's memories superseded since query.as_of that were current then
    and pass its filters: what the indexes of active memories no longer hold."""
    assert query.as_of is not None
    args: list[Any] = [user_id]
    clauses = ["user_id = ?", "superseded_by IS NOT NULL", current_at(query.as_of, args)]
    narrowed(clauses, args, query)
    rows = conn.execute(
        f"SELECT rowid, content, index_context, embedding FROM memories WHERE {' AND '.join(clauses)}", args
    ).fetchall()
    return [(r[0], f"{r[1]}\n{r[2]}", unpack_vector(r[3])) for r in rows]


def best_of(scored: Sequence[tuple[int, float]], query: SearchQuery) -> dict[int, tuple[int, float]]:
    """rowid: (key, score) of each ranked memory's best passage (its first entry), best first, of the hits
    a search reads: the first query.per_owner, or all with quoted phrases (checked on the rows read)."""
    if not query.phrases:
        # Candidates were already filtered (superseded, thread, type, time): read only what is returned.
        scored = scored[: query.per_owner]
    best: dict[int, tuple[int, float]] = {}
    for key, score in scored:  # ranked: a memory's first entry is its best passage
        best.setdefault(memory_of(key)[0], (key, score))
    return best


async def cosines_of(
    vectors: VectorIndex,
    best: Mapping[int, tuple[int, float]],
    query_vector: np.ndarray | None,
    then: Sequence[tuple[int, str, np.ndarray | None]],
) -> dict[int, float | None]:
    """The query's cosine with each best passage (`best`: best_of), by key, from the vector index (a
    memory superseded since a search's as_of is not in it: from the vector read with it, `then`); none
    without a query vector."""
    keys = [key for key, _ in best.values()]
    if query_vector is None or not keys:
        return {}
    earlier = {rowid: vector for rowid, _, vector in then}
    found = dict(zip(keys, await anyio.to_thread.run_sync(vectors.cosines, query_vector, keys), strict=True))
    for key in keys:
        vector = earlier.get(key)
        if vector is not None:
            found[key] = float(vector @ query_vector)
    return found
