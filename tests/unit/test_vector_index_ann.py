"""The approximate (HNSW) side of the vector index: close to exact, never returns what was removed or
filtered out, exact where filters leave few rows, and carried whole through snapshots."""

from __future__ import annotations

import numpy as np
import pytest

from mcp_memory.search import ann, vector_index
from mcp_memory.search.ann import ApproximateIndex
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.vector_index import VectorIndex

DIM = 32
N = 3000


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    centres = unit(rng.standard_normal((40, DIM)))
    vectors = unit(centres[rng.integers(0, 40, N)] + 0.35 * rng.standard_normal((N, DIM)))
    queries = unit(centres[rng.integers(0, 40, 50)] + 0.35 * rng.standard_normal((50, DIM)))
    return vectors, queries


def filled(vectors: np.ndarray, *, ann_min_rows: int) -> VectorIndex:
    index = VectorIndex(DIM, ann_min_rows=ann_min_rows, ann_expansion=128)
    for i, vector in enumerate(vectors):
        index.upsert(
            10 + i, vector, thread_id=f"t{i % 30}", type="turn" if i % 10 else "fact", created=float(i)
        )
    index.settle()
    return index


@pytest.fixture(autouse=True)
def few_rows_are_many(monkeypatch: pytest.MonkeyPatch) -> None:
    # At this test's size every search would be exact: the graph answers from 300 candidate rows on.
    monkeypatch.setattr(vector_index, "EXACT_AT_MOST", 300)


def test_the_graph_finds_what_the_exact_search_finds(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    exact, approximate = filled(vectors, ann_min_rows=0), filled(vectors, ann_min_rows=1000)
    assert approximate.approximate and not exact.approximate
    recall = []
    for query in queries:
        want = {r for r, _ in exact.search(query, 10, RowFilter())}
        got = approximate.search(query, 10, RowFilter())
        recall.append(len(want & {r for r, _ in got}) / 10)
        # Each cosine it gives is the exact one.
        for rowid, cosine in got:
            assert cosine == pytest.approx(float(vectors[rowid - 10] @ query), abs=1e-5)
    assert np.mean(recall) >= 0.95


def test_a_removed_row_is_never_returned_and_a_rewritten_one_moves(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, queries = data
    index = filled(vectors, ann_min_rows=1000)
    top = [r for r, _ in index.search(queries[0], 10, RowFilter())]
    for rowid in top[:5]:
        index.remove(rowid)
    after = [r for r, _ in index.search(queries[0], 10, RowFilter())]
    assert not set(top[:5]) & set(after)
    far = -queries[1]
    index.upsert(top[5], far / np.linalg.norm(far), thread_id="t0", type="turn", created=0.0)
    assert top[5] not in [r for r, _ in index.search(queries[0], 10, RowFilter())]
    assert index.search(far, 1, RowFilter())[0][0] == top[5]


def test_narrow_filters_stay_exact_and_broad_ones_are_checked(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    exact, approximate = filled(vectors, ann_min_rows=0), filled(vectors, ann_min_rows=1000)
    for where in (RowFilter(thread_id="t3"), RowFilter(types=("fact",)), RowFilter(since=2900.0)):
        for query in queries[:10]:  # at most 300 rows pass: exact, so the same answer
            assert approximate.search(query, 10, where) == exact.search(query, 10, where)
    broad = RowFilter(types=("turn",), since=100.0)
    for query in queries[:10]:
        found = approximate.search(query, 10, broad)
        assert len(found) == 10
        assert all(r % 10 != 0 and r - 10 >= 100 for r, _ in found)  # turns (i % 10 != 0), created >= 100


def test_a_broad_set_of_threads_is_checked_on_the_graph_s_answers(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    vectors, queries = data
    approximate = filled(vectors, ann_min_rows=1000)
    threads = tuple(f"t{i}" for i in range(0, 30, 2))  # half the rows: past EXACT_AT_MOST, the graph answers
    for query in queries[:10]:
        found = approximate.search(query, 10, RowFilter(threads=threads))
        assert len(found) == 10
        assert all((r - 10) % 2 == 0 for r, _ in found)  # row i is in thread t{i % 30}: even threads only


def test_text_hits_get_their_exact_cosine_beside_the_graph_s(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    index = filled(vectors, ann_min_rows=1000)
    named = np.asarray([10, 11, 12], dtype=np.int64)
    keys, cosines = index.scores(queries[0], RowFilter(), pool=20, also=named)
    scored = dict(zip(keys.tolist(), cosines.tolist(), strict=True))
    for rowid in named.tolist():
        assert scored[rowid] == pytest.approx(float(vectors[rowid - 10] @ queries[0]), abs=1e-5)
    assert len(keys) < N  # not every row: the graph's, the named and a spread for the scale


def test_a_snapshot_carries_the_graph(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    index = filled(vectors, ann_min_rows=1000)
    # Against this very graph's answers: two builds differ (the bulk insert runs on two threads).
    answers = [index.search(query, 5, RowFilter()) for query in queries[:5]]
    frozen = index.frozen()
    index.remove(10)  # after the copy was taken: the copy's graph is as it was
    columns = frozen.columns()
    assert "graph" in columns
    loaded = VectorIndex.from_columns(columns, dimension=DIM, ann_min_rows=1000, ann_expansion=128)
    assert loaded.approximate and len(loaded) == N
    assert [loaded.search(query, 5, RowFilter()) for query in queries[:5]] == answers
    # A snapshot written before the graph existed gets one built as it loads.
    plain = filled(vectors, ann_min_rows=0).columns()
    assert VectorIndex.from_columns(plain, dimension=DIM, ann_min_rows=1000, ann_expansion=128).approximate
    # One whose graph does not match its rows is refused (the caller rebuilds from the file).
    broken = dict(columns, graph=filled(vectors[:1500], ann_min_rows=1000).columns()["graph"])
    with pytest.raises(ValueError, match="graph of 1500 vectors"):
        VectorIndex.from_columns(broken, dimension=DIM, ann_min_rows=1000, ann_expansion=128)


def test_a_graph_stored_as_int8_by_an_older_version_is_rebuilt_as_it_loads(
    data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors, queries = data
    monkeypatch.setattr(ann, "STORAGE", "i8")  # what versions before bfloat16 stored
    older = filled(vectors, ann_min_rows=1000).columns()
    monkeypatch.setattr(ann, "STORAGE", "bf16")
    assert not ApproximateIndex.current(np.ascontiguousarray(older["graph"]).data)
    loaded = VectorIndex.from_columns(older, dimension=DIM, ann_min_rows=1000, ann_expansion=128)
    assert loaded.approximate and len(loaded) == N
    saved = np.ascontiguousarray(loaded.columns()["graph"]).data
    assert ApproximateIndex.current(saved)  # the next snapshot holds the new graph
    assert ann._usearch_index().metadata(saved)["kind_scalar"].name == "BF16"
    exact = filled(vectors, ann_min_rows=0)
    recall = [
        len(
            {r for r, _ in exact.search(q, 10, RowFilter())}
            & {r for r, _ in loaded.search(q, 10, RowFilter())}
        )
        / 10
        for q in queries
    ]
    assert np.mean(recall) >= 0.95


def test_rows_added_after_a_load_go_beside_the_loaded_block(data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, queries = data
    loaded = VectorIndex.from_columns(filled(vectors[:2000], ann_min_rows=0).columns(), dimension=DIM)
    block = loaded._matrix
    for i in range(2000, N):
        loaded.upsert(
            10 + i, vectors[i], thread_id=f"t{i % 30}", type="turn" if i % 10 else "fact", created=float(i)
        )
    assert loaded._matrix is block  # the loaded (mapped) rows were not copied to grow
    whole = filled(vectors, ann_min_rows=0)
    for query in queries[:10]:
        for where in (RowFilter(), RowFilter(thread_id="t4")):
            assert loaded.search(query, 10, where) == whole.search(query, 10, where)
    loaded.upsert(10 + 2500, -vectors[0], thread_id="t0", type="turn", created=0.0)  # rewritten in the tail
    assert loaded.search(-vectors[0], 1, RowFilter())[0][0] == 10 + 2500
    again = VectorIndex.from_columns(loaded.frozen().columns(), dimension=DIM)
    assert again.search(queries[0], 10, RowFilter()) == loaded.search(queries[0], 10, RowFilter())


def test_building_the_graph_first_does_not_crash_the_embedder_s_import_later() -> None:
    """usearch imported before onnxruntime makes onnxruntime's import crash the process (search/ann.py
    imports them in the order that works); a child process, so a crash fails this test, not the run."""
    import subprocess
    import sys

    script = (
        "import numpy as np\n"
        "from mcp_memory.search.ann import ApproximateIndex\n"
        "graph = ApproximateIndex(8, expansion=16)\n"
        "graph.add(np.arange(4), np.eye(4, 8, dtype=np.float32))\n"
        "import onnxruntime\n"
        "print('alive')\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert child.returncode == 0 and child.stdout.strip() == "alive", child.stderr[-2000:]
