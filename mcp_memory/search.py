"""Ranking helpers: pure functions, no I/O. Stores call these; the service never ranks by hand."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_QUOTED = re.compile(r'"([^"]+)"')
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)

# Words that carry no topic: dropped from full-text queries so a question's "what/did/the" cannot
# outrank its nouns. Short and English on purpose (BM25's IDF handles the rest).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    s t ll d m re ve""".split()
)


def rrf(
    rankings: Sequence[Sequence[K]], weights: Sequence[float] | None = None, k: int = 60
) -> list[tuple[K, float]]:
    """Reciprocal Rank Fusion: score(d) = sum_i w_i / (k + rank_i(d)), ranks from 1.

    Ties keep the order of first appearance, so equal inputs give a stable output.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("rrf needs one weight per ranking")
    scores: dict[K, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


def quoted_phrases(query: str) -> list[str]:
    """The phrases a user put in double quotes; each must match verbatim."""
    return [p.strip() for p in _QUOTED.findall(query) if p.strip()]


def keywords(query: str, *, limit: int = 30) -> list[str]:
    """The query's content words, lower-cased, stopwords removed, first occurrence order, at most `limit`.

    The cap exists because Cosmos DB's FullTextScore rejects 31 or more terms.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.casefold()):
        word = word.strip("'-")
        if word and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)[:limit]
