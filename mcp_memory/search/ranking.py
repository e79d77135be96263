"""The one ranking of search, for every backend: stores give candidates, this decides their order.

A store answers two questions about one owner's memory (storage/base.py `LongTermStore`): which
memories match the query's words (`TextCandidates`: each memory's passage and its BM25 score) and which
are nearest in meaning (`VectorCandidates`: passages and their cosines). Everything after that is here,
the same for SQLite, Cosmos DB and any backend to come:

- **Fusion** (`fuse`), by the query's rule (`search.fusion`):
  - "score": text_weight * bm25 / best bm25 + vector_weight * min-max(cosine), per passage; a memory
    ranks by its best passage. The cosine scale runs from `VectorCandidates.floor` (the lowest cosine
    the store compared: SQLite scans the whole collection) to the best candidate's.
  - "rrf": Reciprocal Rank Fusion of the memories' ranks on each side, with `search.rrf_k`.
  A store whose full-text engine gives ranks only (Cosmos DB: FullTextScore can only order, never be
  projected) scores its text list by `rank_score` (1 / sqrt(rank)) before it gets here: a BM25 list's
  scores fall off with rank roughly so over its first tens, so score fusion keeps ranking by how far a
  memory is from the best on each side rather than by rank alone. That is a stand-in for the unknown
  BM25 scores, not a measured fit: with ranks only, "rrf" is the exact rule.
- **Pooling** (`pooled`): several owners' hits (personal memory and the spaces read) in one ranking, by
  each hit's calibrated relevance (search/relevance.py), which means the same in every owner's ranking.
- **The intent rules** (`by_intent`, rules from search/intent.py): the user's own words first for a
  question about the user, what is current first unless the question asks about the past, standing
  instructions up.

"Current as of" a moment (memory as it stood then) is the store's to read: its candidates are the
memories current then, superseded since or not; the ranking does not change with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_memory.models import Hit
from mcp_memory.search import intent
from mcp_memory.search.fusion import rrf
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.relevance import HitSignals, relevance, term_overlap

# A memory in its store's own terms: SQLite's rowid, Cosmos DB's item id.
Key = int | str


@dataclass(frozen=True)
class Candidate:
    """A passage a store found: its memory (`key`, in the store's own terms), the passage's number (0:
    the first, or the only one) and its score on that side (BM25, or cosine). `item` is whatever the
    store keeps to make the hit from it without reading it again (Cosmos DB: the memory's item)."""

    key: Key
    passage: int
    score: float
    item: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class TextCandidates:
    """The memories matching the query's words, best first (one passage each). `weight`: how much a
    word match counts for this owner's memory, times the query's text weight (search/hybrid.py
    words_weight)."""

    found: list[Candidate] = field(default_factory=list)
    weight: float = 1.0
    partial: bool = False  # the store's index is still being built: found among what is ready


@dataclass(frozen=True)
class VectorCandidates:
    """The passages nearest the query, best first (`found`), and the cosines of the text side's
    passages among the rest (`named`: fused by score, never ranked). `floor`: the lowest cosine the
    store compared (None: the lowest here), where the min-max scale of score fusion starts."""

    found: list[Candidate] = field(default_factory=list)
    named: list[Candidate] = field(default_factory=list)
    floor: float | None = None
    partial: bool = False  # the store's index is still being built: found among what is ready


@dataclass(frozen=True)
class Ranked:
    """A memory in the fused ranking: its key, best passage, fused score and the cosine of that passage
    to the query where the vector side knows it."""

    key: Key
    passage: int
    score: float
    cosine: float | None = None
    item: Any = field(default=None, compare=False)


def rank_score(rank: int) -> float:
    """A text candidate's score when the full-text engine gives its rank only (from 1)."""
    return 1.0 / math.sqrt(rank)


def fuse(
    query: SearchQuery, text: TextCandidates, vector: VectorCandidates | None, limit: int
) -> list[Ranked]:
    """The best `limit` memories, best first, by the query's mode and fusion rule. `vector` is None in
    a search without a query vector (text mode)."""
    cosines = {} if vector is None else _cosines(vector)
    if vector is None or query.mode == "text":
        return _memories([(c, c.score) for c in text.found], cosines)[:limit]
    if query.mode == "vector":
        return _memories([(c, c.score) for c in vector.found], cosines)[:limit]
    text_weight = query.text_weight * text.weight
    if query.fusion == "rrf":
        return _rrf(query, text, vector, text_weight, cosines)[:limit]
    return _score_fusion(query, text, vector, text_weight, cosines)[:limit]


def _cosines(vector: VectorCandidates) -> dict[tuple[Key, int], float]:
    found: dict[tuple[Key, int], float] = {}
    for c in [*vector.found, *vector.named]:
        found.setdefault((c.key, c.passage), c.score)
    return found


def _memories(
    scored: Sequence[tuple[Candidate, float]], cosines: dict[tuple[Key, int], float]
) -> list[Ranked]:
    """Each memory once, by its best passage, best first (stable: ties keep the order given)."""
    ranked: dict[Key, Ranked] = {}
    for c, score in sorted(scored, key=lambda found: -found[1]):
        if c.key not in ranked:
            ranked[c.key] = Ranked(c.key, c.passage, score, cosines.get((c.key, c.passage)), c.item)
    return list(ranked.values())


def _score_fusion(
    query: SearchQuery,
    text: TextCandidates,
    vector: VectorCandidates,
    text_weight: float,
    cosines: dict[tuple[Key, int], float],
) -> list[Ranked]:
    passages: dict[tuple[Key, int], Candidate] = {}
    fused: dict[tuple[Key, int], float] = {}
    nearest = [*vector.found, *vector.named]
    if nearest:
        high = max(c.score for c in nearest)
        low = min(c.score for c in nearest) if vector.floor is None else min(vector.floor, high)
        spread = high - low
        for c in nearest:
            passages.setdefault((c.key, c.passage), c)
            scaled = (c.score - low) / spread if spread > 0 else 0.0
            fused.setdefault((c.key, c.passage), query.vector_weight * scaled)
    top = max((c.score for c in text.found), default=0.0)
    if top > 0:
        for c in text.found:
            at = (c.key, c.passage)
            passages.setdefault(at, c)
            fused[at] = fused.get(at, 0.0) + text_weight * c.score / top
    # A memory's item from whichever side has it (the text side's, when both).
    items = {c.key: c.item for c in [*nearest, *text.found] if c.item is not None}
    return [
        Ranked(r.key, r.passage, r.score, r.cosine, items.get(r.key))
        for r in _memories([(passages[at], score) for at, score in fused.items()], cosines)
    ]


def _rrf(
    query: SearchQuery,
    text: TextCandidates,
    vector: VectorCandidates,
    text_weight: float,
    cosines: dict[tuple[Key, int], float],
) -> list[Ranked]:
    """RRF of the memories' ranks (each side's best passage of a memory may differ): a memory is
    reported by its passage on the side that ranked it first, the text side on a tie."""
    text_side = _memories([(c, c.score) for c in text.found], cosines)
    vector_side = _memories([(c, c.score) for c in vector.found], cosines)
    if not text_side:
        return vector_side
    first: dict[Key, Ranked] = {}
    for r in [*text_side, *vector_side]:
        first.setdefault(r.key, r)
    fused = rrf(
        [[r.key for r in text_side], [r.key for r in vector_side]],
        weights=[text_weight, query.vector_weight],
        k=query.rrf_k,
    )
    return [
        Ranked(key, first[key].passage, score, first[key].cosine, first[key].item) for key, score in fused
    ]


# ---- one ranking of the hits of every owner, with the query's intent -------------------------------


def signals_of(terms: Sequence[str], hits: Sequence[Hit], by_meaning: bool) -> list[HitSignals]:
    """What each hit shows about its relevance: its rank, the share of the query's `terms` (QueryTerms
    .matched) its passage holds, and, in a search by meaning (`by_meaning`: with a query vector), the
    cosine the store's index gave it (0 for a memory with no vector yet). A text search has no cosine."""
    found = []
    for rank, hit in enumerate(hits, start=1):
        cosine = (0.0 if hit.cosine is None else hit.cosine) if by_meaning else None
        text = hit.memory.content if hit.passage is None else hit.memory.content[slice(*hit.passage)]
        found.append(HitSignals(rank, term_overlap(terms, text), cosine))
    return found


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


def by_intent(
    hits: Sequence[Hit], signals: Sequence[HitSignals], query: SearchQuery, *, time_named: bool
) -> tuple[list[Hit], list[HitSignals]]:
    """The hits moved by the rules of search/intent.py for what the query asks: the user's words first
    for a question about the user; what is current first, unless the query asks about the past (a time
    it named, `time_named`, an as_of, or its words); standing instructions up."""
    asked = query.question
    found, shown = list(hits), list(signals)
    if intent.about_the_user(asked):
        found, shown = reordered(found, shown, intent.users_words_first)
    if not time_named and query.as_of is None and not intent.about_the_past(asked):
        found, shown = reordered(found, shown, intent.newer_first)
    return reordered(found, shown, intent.rules_up)


def reordered(
    hits: Sequence[Hit], signals: Sequence[HitSignals], rule: Callable[[Sequence[intent.Ranked]], list[int]]
) -> tuple[list[Hit], list[HitSignals]]:
    """The hits in the order a rule of search/intent.py gives, ranks renumbered."""
    order = rule([_as_ranked(hit) for hit in hits])
    if order == list(range(len(hits))):
        return list(hits), list(signals)
    return [hits[i] for i in order], [
        HitSignals(rank, signals[i].overlap, signals[i].cosine) for rank, i in enumerate(order, start=1)
    ]


def _as_ranked(hit: Hit) -> intent.Ranked:
    memory = hit.memory
    return intent.Ranked(
        score=hit.score,
        when=memory.created_at.timestamp(),
        order=0,
        text=memory.content if hit.passage is None else memory.content[slice(*hit.passage)],
        role=memory.role,
        content=memory.content,
    )
