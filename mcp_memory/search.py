"""Ranking helpers: pure functions, no I/O. Stores call these; the service never ranks by hand."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from datetime import datetime
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)

_QUOTED = re.compile(r'"([^"]+)"')
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

# English function words and question words, dropped from full-text queries: each kept term adds a
# BM25 contribution, and "did"/"what" match thousands of turns. Measured on LoCoMo (bench/locomo.py):
# removing them from the OR query is worth +0.06 R@10.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its
itself let's me more most mustn't my myself no nor not of off on once only or other ought our ours
ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that
that's the their theirs them themselves then there there's these they they'd they'll they're they've
this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what
what's when when's where where's which while who who's whom why why's with won't would wouldn't you
you'd you'll you're you've your yours yourself yourselves
s t d ll m re ve also just will shall may might must
""".split()
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
    """The query's content words: lower-cased, stopwords and possessive 's removed, first-occurrence
    order, at most `limit` (Cosmos DB's FullTextScore rejects 31 or more terms)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.casefold().replace("\u2019", "'")):
        base = word[:-2] if word.endswith("'s") else word
        if word in STOPWORDS or base in STOPWORDS:
            continue
        seen.setdefault(base, None)
    return list(seen)[:limit]


def minmax(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


def score_fusion(
    text_hits: Sequence[tuple[int, float]],
    keys: np.ndarray,
    cosines: np.ndarray,
    *,
    limit: int,
    text_weight: float = 1.0,
    vector_weight: float = 1.0,
) -> list[tuple[int, float]]:
    """Normalized score sum, best `limit` first: text_weight * bm25/max(bm25) + vector_weight * minmax(cosine).

    `keys`/`cosines` cover every candidate memory, so the cosine scaling is over the whole collection;
    a memory without a text hit gets 0 from that side, one without a vector only its text score. On
    LoCoMo this ranks better than RRF of the same two lists (see the README's benchmarks), because it
    keeps how far apart the scores are, which ranks throw away.
    """
    combined = vector_weight * minmax(cosines.astype(np.float64)) if len(keys) else np.zeros(0)
    keys = keys.astype(np.int64, copy=False)
    extra: list[tuple[int, float]] = []
    top = max((score for _, score in text_hits), default=0.0)
    if top > 0:
        # All text hits placed at once: a Python loop of searchsorted calls cost ~1 ms at 10k memories.
        text_keys = np.fromiter((key for key, _ in text_hits), dtype=np.int64, count=len(text_hits))
        raw = np.fromiter((score for _, score in text_hits), dtype=np.float64, count=len(text_hits))
        text_scores = text_weight * raw / top
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        at = np.searchsorted(ordered, text_keys)
        found = np.zeros(len(text_keys), dtype=bool)
        if len(ordered):
            found = ordered[np.minimum(at, len(ordered) - 1)] == text_keys
        np.add.at(combined, order[at[found]], text_scores[found])
        # Text hits with no vector keep their text score alone, in BM25 order.
        extra = list(zip(text_keys[~found].tolist(), text_scores[~found].tolist(), strict=True))
    k = min(limit, len(combined))
    best = np.argpartition(-combined, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
    ranked = [(int(keys[i]), float(combined[i])) for i in best]
    return sorted(ranked + extra, key=lambda item: item[1], reverse=True)[:limit]


def date_words(moment: datetime) -> str:
    """'8 May 2023': how people write a date in a question ("what happened in May 2023?")."""
    return f"{moment.day} {moment.strftime('%B %Y')}"
