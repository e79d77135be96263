"""How likely a search hit is to be what the query asked for, on one scale for every query.

The fused ranking score (normalized BM25 plus min-max cosine, or RRF) only orders one query's
candidates: the best hit of a hopeless query scores as high as the best hit of a good one. The score a
client sees instead is a calibrated probability that the hit is relevant, from what the hit itself
shows: its rank, the share of the query's words it holds, and (unless the search ran on text alone)
its cosine similarity to the query. A `min_score` of 0.3 then means the same for every query: keep
hits at least 30% likely to be relevant.

The weights are a logistic regression fitted on half of the LoCoMo development conversations and
checked on the other half by `bench/calibrate_scores.py`, which prints them, the reliability table
and what each floor keeps; they hold for the default embedder (all-MiniLM-L6-v2). Another embedder's
cosines sit on another scale, so its scores are approximate: rerun the bench to refit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from mcp_memory.models import SearchMode
from mcp_memory.search.terms import terms

# Why a hit was found: its words (the text ranking), its meaning (the vector ranking) or both.
MatchedBy = Literal["text", "meaning", "both"]

# (bias, log rank, term overlap, cosine): bench/calibrate_scores.py prints these.
HYBRID_WEIGHTS = (-2.0555, -1.3300, 1.9378, 0.9265)
# (bias, log rank, term overlap): the same fit without the cosine, for text-mode searches.
TEXT_WEIGHTS = (-2.1791, -1.2828, 2.8161)
# The cosine from which a hit's closeness in meaning is evidence that it is relevant: from there up,
# relevant hits are more common than among all the hits a hybrid search returns. For the default
# embedder, printed by `.venv/bin/python bench/meaning_floor.py ../shared/data/locomo/locomo_dev.json`.
# Not the cosine where a hit becomes more likely relevant than not: LoCoMo's hits never get there.
MEANING_FLOOR = 0.48


@dataclass(frozen=True)
class HitSignals:
    rank: int  # 1 for the best hit
    overlap: float  # share of the query's terms that the memory holds, 0..1
    cosine: float | None  # None when the search ran on text alone

    def features(self) -> list[float]:
        base = [math.log(self.rank), self.overlap]
        return base if self.cosine is None else [*base, self.cosine]


def term_overlap(query_terms: Sequence[str], content: str) -> float:
    """The share of the query's (stemmed) terms that occur in the content."""
    if not query_terms:
        return 0.0
    held = set(terms(content))
    return sum(1 for t in query_terms if t in held) / len(query_terms)


def relevance(signals: HitSignals) -> float:
    weights = TEXT_WEIGHTS if signals.cosine is None else HYBRID_WEIGHTS
    z = weights[0] + sum(w * x for w, x in zip(weights[1:], signals.features(), strict=True))
    return 1.0 / (1.0 + math.exp(-z))


def ranked_scores(signals: Iterable[HitSignals]) -> list[float]:
    """Each hit's relevance, never above the hit ranked before it: the list stays best first."""
    scores: list[float] = []
    for hit in signals:
        score = relevance(hit)
        scores.append(min(score, scores[-1]) if scores else score)
    return scores


def matched_by(signals: HitSignals, mode: SearchMode) -> MatchedBy:
    """Why a hit was found. A hybrid hit holding some of the query's words was found by its text, and
    by its meaning too when its cosine reaches MEANING_FLOOR; one holding none was found by meaning."""
    if mode == "text" or signals.cosine is None:
        return "text"
    if mode == "vector" or signals.overlap == 0:
        return "meaning"  # in vector mode the text ranking took no part, whatever words are shared
    return "both" if signals.cosine >= MEANING_FLOOR else "text"
