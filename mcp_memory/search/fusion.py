"""Fusing the text and vector rankings into one: pure functions, no I/O.

Stores call these; the service never ranks by hand.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


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
    LoCoMo this ranks better than RRF of the same two lists (bench/locomo.py, docs/benchmarks.md),
    because it keeps how far apart the scores are, which ranks throw away.
    """
    combined = vector_weight * minmax(cosines.astype(np.float64)) if len(keys) else np.zeros(0)
    keys = keys.astype(np.int64, copy=False)
    extra: list[tuple[int, float]] = []
    top = max((score for _, score in text_hits), default=0.0)
    if top > 0:
        # All text hits placed at once: a Python loop of searchsorted calls, one per hit, cost a visible
        # share of a search in a large store.
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
