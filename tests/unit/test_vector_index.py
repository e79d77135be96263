"""The in-memory vector index returns exactly the brute-force answer: the best cosines among active rows
passing the filter, whether it streams the whole matrix (most rows pass: no filter, or a common thread)
or gathers the few that do (a rare thread), and after its dead rows are reclaimed or it is saved as
arrays and loaded back."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_memory.search.rows import RowFilter
from mcp_memory.search.vector_index import VectorIndex

DIMENSION = 8
THREADS = ["a", "b", "c", None]


@st.composite
def indexes(draw: st.DrawFn) -> tuple[VectorIndex, list[tuple[int, np.ndarray, str | None, bool]]]:
    count = draw(st.integers(min_value=0, max_value=60))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    rows = []
    index = VectorIndex(DIMENSION)
    for i in range(count):
        thread = draw(st.sampled_from(THREADS))
        active = draw(st.booleans()) if draw(st.booleans()) else True  # often most rows are active
        rowid = 10 + 3 * i
        index.upsert(rowid, vectors[i], thread_id=thread, type="turn", created=float(i))
        if not active:
            index.remove(rowid)
        rows.append((rowid, vectors[i], thread, active))
    if draw(st.booleans()):  # the same rows, dead ones reclaimed
        index = (
            index.compacted()
            if draw(st.booleans())
            else VectorIndex.from_columns(index.columns(), dimension=DIMENSION)
        )
    return index, rows


@settings(max_examples=300, deadline=None)
@given(built=indexes(), thread=st.sampled_from([*THREADS[:3], "all"]), limit=st.integers(1, 70))
def test_search_is_the_brute_force_answer(
    built: tuple[VectorIndex, list[tuple[int, np.ndarray, str | None, bool]]], thread: str, limit: int
) -> None:
    index, rows = built
    query = np.linspace(-1, 1, DIMENSION, dtype=np.float32)
    where = RowFilter() if thread == "all" else RowFilter(thread_id=thread)
    passing = [(r, v) for r, v, t, active in rows if active and (thread == "all" or t == thread)]
    expected = sorted(((r, float(v @ query)) for r, v in passing), key=lambda p: -p[1])[:limit]

    found = index.search(query, limit, where)

    assert [r for r, _ in found] == [r for r, _ in expected] or _ties_only(found, expected)
    np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], rtol=1e-5, atol=1e-6)


def _ties_only(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> bool:
    """Equal scores may come in either order."""
    return sorted(round(s, 5) for _, s in found) == sorted(round(s, 5) for _, s in expected)
