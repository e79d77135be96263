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


@settings(max_examples=300, deadline=None)
@given(
    built=indexes(),
    threads=st.lists(st.sampled_from(["a", "b", "c", "unknown"]), max_size=4).map(tuple),
    limit=st.integers(1, 70),
)
def test_a_set_of_threads_is_the_brute_force_answer(
    built: tuple[VectorIndex, list[tuple[int, np.ndarray, str | None, bool]]],
    threads: tuple[str, ...],
    limit: int,
) -> None:
    # RowFilter.threads: rows of any of these threads only; () none; a row without a thread never.
    index, rows = built
    query = np.linspace(-1, 1, DIMENSION, dtype=np.float32)
    passing = [(r, v) for r, v, t, active in rows if active and t in threads]
    expected = sorted(((r, float(v @ query)) for r, v in passing), key=lambda p: -p[1])[:limit]

    found = index.search(query, limit, RowFilter(threads=threads))

    assert [r for r, _ in found] == [r for r, _ in expected] or _ties_only(found, expected)
    assert index._mask(RowFilter(threads=threads)).sum() == len(passing)  # rows, not just the best


def test_threads_narrow_with_the_other_filters() -> None:
    index = VectorIndex(DIMENSION)
    vector = np.ones(DIMENSION, dtype=np.float32)
    for rowid, thread, type_, created in [
        (1, "a", "turn", 1.0),
        (2, "a", "summary", 2.0),
        (3, "b", "turn", 3.0),
        (4, "c", "turn", 4.0),
        (5, None, "fact", 5.0),
    ]:
        index.upsert(rowid, vector, thread_id=thread, type=type_, created=created)

    def rows(where: RowFilter) -> set[int]:
        return {r for r, _ in index.search(vector, 10, where)}

    assert rows(RowFilter(threads=("a", "b"))) == {1, 2, 3}
    assert rows(RowFilter(threads=())) == set()
    assert rows(RowFilter(threads=("unknown",))) == set()
    assert rows(RowFilter(threads=("a", "b"), types=("turn",))) == {1, 3}
    assert rows(RowFilter(threads=("a", "b"), since=2.0, until=3.0)) == {2, 3}
    assert rows(RowFilter(threads=("a", "c"), thread_id="c")) == {4}  # both: the rows of each
    assert rows(RowFilter(threads=("a",), thread_id="b")) == set()


def _ties_only(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> bool:
    """Equal scores may come in either order."""
    return sorted(round(s, 5) for _, s in found) == sorted(round(s, 5) for _, s in expected)
