"""Score fusion against a plain dictionary version of its rule, on random candidates."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_memory.search.fusion import score_fusion

scores = st.floats(min_value=0.0, max_value=30.0, allow_nan=False)


def reference(
    text_hits: list[tuple[int, float]], keys: list[int], cosines: list[float], text_weight: float
) -> dict[int, float]:
    """Every candidate's fused score: minmax(cosine) plus text_weight * bm25 / best bm25."""
    low, high = (min(cosines), max(cosines)) if cosines else (0.0, 0.0)
    fused = {k: (c - low) / (high - low) if high > low else 0.0 for k, c in zip(keys, cosines, strict=True)}
    top = max((s for _, s in text_hits), default=0.0)
    if top > 0:
        for key, score in text_hits:
            fused[key] = fused.get(key, 0.0) + text_weight * score / top
    return fused


@settings(max_examples=300, deadline=None)
@given(
    vectors=st.dictionaries(st.integers(1, 60), st.floats(-1.0, 1.0, allow_nan=False), max_size=40),
    text=st.dictionaries(st.integers(1, 80), scores, max_size=30),
    limit=st.integers(1, 25),
    text_weight=st.sampled_from([0.5, 1.0, 2.0]),
)
def test_fusion_returns_the_best_candidates_with_their_fused_scores(
    vectors: dict[int, float], text: dict[int, float], limit: int, text_weight: float
) -> None:
    keys, cosines = list(vectors), list(vectors.values())
    text_hits = sorted(text.items(), key=lambda item: -item[1])
    fused = score_fusion(
        text_hits,
        np.array(keys, dtype=np.int64),
        np.array(cosines, dtype=np.float32),
        limit=limit,
        text_weight=text_weight,
    )
    expected = reference(text_hits, keys, [float(np.float32(c)) for c in cosines], text_weight)
    assert len({key for key, _ in fused}) == len(fused) == min(limit, len(expected))
    for key, score in fused:
        assert score == np.float64(expected[key]) or abs(score - expected[key]) < 1e-9
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    # Nothing left out scores above the lowest returned (ties may go either way).
    if fused and len(fused) < len(expected):
        returned = {key for key, _ in fused}
        assert max(s for k, s in expected.items() if k not in returned) <= fused[-1][1] + 1e-9
