"""Fusing the text and vector rankings into one: pure functions, no I/O.

search/ranking.py calls these; nothing else ranks by hand.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

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
