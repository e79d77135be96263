"""Indexes of a large store leave their bulk in the snapshot's file: vectors and postings read where a
search needs them (FileArray), rowid -> position as sorted arrays (RowPositions), the graph viewed
where it lies with the changes since in a second graph. Each answers exactly as the in-memory index
it was saved from, before and after changes, and through another save and load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp_memory.search import file_array, positions, text_index, vector_index
from mcp_memory.search.file_array import Blocks, FileArray
from mcp_memory.search.positions import RowPositions
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import query_terms
from mcp_memory.search.text_index import Document, TextIndex
from mcp_memory.search.vector_index import VectorIndex
from mcp_memory.storage.sqlite.snapshots import Snapshot, SnapshotFolder, Stamp
from tests.unit.test_vector_index_ann import unit

DIM = 32
N = 3000
STAMP = Stamp(file_id="f", seq=1, model="m", dimension=DIM)


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    centres = unit(rng.standard_normal((40, DIM)))
    vectors = unit(centres[rng.integers(0, 40, N)] + 0.35 * rng.standard_normal((N, DIM)))
    queries = unit(centres[rng.integers(0, 40, 30)] + 0.35 * rng.standard_normal((30, DIM)))
    return vectors, queries


@pytest.fixture(autouse=True)
def small_is_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's few rows take the paths a million memories take."""
    monkeypatch.setattr(vector_index, "EXACT_AT_MOST", 300)
    monkeypatch.setattr(text_index, "KEEP_POSTINGS_BELOW", 0)
    monkeypatch.setattr("mcp_memory.storage.sqlite.snapshots.OPEN_AT_LEAST", 1)
    monkeypatch.setattr(file_array, "BLOCK_BYTES", 4096)  # full scans in many blocks
    monkeypatch.setattr(positions, "FOLD_AT_LEAST", 64)


def documents(count: int, start: int = 0) -> list[Document]:
    words = ["kayak", "violin", "garden", "comet", "harbour", "lantern", "meadow", "quartz"]
    return [
        Document(
            10 + i, f"{words[i % 8]} note about {words[(i * 3) % 8]} {i}", "", f"t{i % 30}", "turn", float(i)
        )
        for i in range(start, start + count)
    ]


def vectors_of(vectors: np.ndarray, start: int = 0, ann_min_rows: int = 1000) -> VectorIndex:
    index = VectorIndex(DIM, ann_min_rows=ann_min_rows, ann_expansion=128)
    for i, vector in enumerate(vectors[start:], start=start):
        index.upsert(10 + i, vector, thread_id=f"t{i % 30}", type="turn", created=float(i))
    index.settle()
    return index


def saved_and_loaded(tmp_path: Path, text: TextIndex, vectors: VectorIndex) -> tuple[TextIndex, VectorIndex]:
    tmp_path.mkdir(exist_ok=True)
    folder = SnapshotFolder(tmp_path / "index")
    folder.save("u", Snapshot(STAMP, text.frozen().columns(), vectors.frozen().columns()))
    snapshot = folder.load("u")
    assert snapshot is not None
    loaded_text = TextIndex.from_columns(snapshot.text)
    loaded_vectors = VectorIndex.from_columns(
        snapshot.vectors, dimension=DIM, ann_min_rows=1000, ann_expansion=128
    )
    return loaded_text, loaded_vectors


def test_file_array_reads_rows_runs_and_blocks(tmp_path: Path) -> None:
    rows = np.arange(5000 * 3, dtype=np.float32).reshape(5000, 3)
    path = tmp_path / "rows"
    path.write_bytes(b"head" + rows.tobytes())
    array = FileArray(path, 4, np.dtype(np.float32), (5000, 3))
    np.testing.assert_array_equal(array[10:20], rows[10:20])
    picks = np.asarray([4999, 3, 4, 5, 17, 3, 2000, 2001, 9, 4000])  # runs, gaps, repeats, any order
    np.testing.assert_array_equal(array.take(picks), rows[picks])
    np.testing.assert_array_equal(array.take(np.arange(0, 5000, 3)), rows[::3])  # gaps read through
    np.testing.assert_array_equal(np.concatenate([b for _, b in array.blocks()]), rows)
    np.testing.assert_array_equal(np.asarray(array), rows)
    np.testing.assert_array_equal(np.frombuffer(array.mapped(), dtype=np.float32).reshape(5000, 3), rows)
    with pytest.raises(IndexError):
        array.take(np.asarray([5000]))
    with pytest.raises(ValueError, match="ends before"):
        FileArray(path, 4, np.dtype(np.float32), (5001, 3))  # a file shorter than its header says


def test_row_positions_fold_changes_and_copies_stay_as_they_were() -> None:
    index = RowPositions.of(np.asarray([50, 10, 30]))
    assert [index.get(r) for r in (10, 30, 50, 20)] == [1, 2, 0, None]
    copy = index.copy()
    for rowid in range(100, 300):  # past the fold threshold: folded into the arrays
        index.set(rowid, rowid)
    assert index.pop(30) == 2 and 30 not in index and index.pop(30) is None
    index.set(10, 7)  # moved
    np.testing.assert_array_equal(index.many(np.asarray([10, 30, 50, 150, 999])), [7, -1, 0, 150, -1])
    assert len(index) == 2 + 200
    assert len(copy) == 3 and copy.get(30) == 2 and copy.get(150) is None
    with pytest.raises(ValueError, match="two positions"):
        RowPositions.of(np.asarray([1, 2, 1]))


def test_text_read_from_the_file_ranks_as_in_memory(tmp_path: Path) -> None:
    built = TextIndex.of(documents(600))
    loaded, _ = saved_and_loaded(tmp_path, built, vectors_of(np.zeros((0, DIM), np.float32)))
    assert isinstance(loaded._stored[0], FileArray)
    for words in ("kayak", "garden comet", "note", "quartz 17"):
        terms = query_terms(words.split())
        assert loaded.search(terms, 20, RowFilter(), context_weight=0.4) == built.search(
            terms, 20, RowFilter(), context_weight=0.4
        )
    # Changes after the load: appended beside the file's entries, removals at once.
    for index in (built, loaded):
        for document in documents(50, start=600):
            index.upsert(document)
        index.remove(10 + 8)
    for words in ("kayak", "note 620", "meadow"):
        terms = query_terms(words.split())
        want = built.search(terms, 30, RowFilter(thread_id="t8"), context_weight=0.4)
        assert loaded.search(terms, 30, RowFilter(thread_id="t8"), context_weight=0.4) == want


def test_a_viewed_graph_takes_changes_and_saves_them_merged(
    tmp_path: Path, data: tuple[np.ndarray, np.ndarray]
) -> None:
    vectors, queries = data
    built = vectors_of(vectors[:2000])
    _, loaded = saved_and_loaded(tmp_path / "a", TextIndex(), built)
    assert loaded._ann is not None and loaded._ann._viewed is not None  # viewed, not copied
    assert isinstance(loaded._matrix, FileArray)
    answers = [built.search(q, 10, RowFilter()) for q in queries]
    assert [loaded.search(q, 10, RowFilter()) for q in queries] == answers
    # Rows added after the load go to the second graph and are found; removed ones never come back.
    for i in range(2000, N):
        loaded.upsert(10 + i, vectors[i], thread_id=f"t{i % 30}", type="turn", created=float(i))
    assert loaded.search(vectors[2500], 1, RowFilter())[0][0] == 10 + 2500
    top = [r for r, _ in loaded.search(queries[0], 10, RowFilter())]
    for rowid in top[:5]:
        loaded.remove(rowid)
    assert not set(top[:5]) & {r for r, _ in loaded.search(queries[0], 10, RowFilter())}
    far = unit(-queries[1][None])[0]
    loaded.upsert(top[5], far, thread_id="t0", type="turn", created=0.0)  # a loaded row rewritten
    assert loaded.search(far, 1, RowFilter())[0] == (top[5], pytest.approx(1.0, abs=1e-5))
    # A full scan (a filter leaving few rows) reads the rewritten row, not the file's.
    assert loaded.search(far, 1, RowFilter(thread_id="t0"))[0][0] == top[5]
    # Beside the viewed graph, the second one finds what exact search finds.
    exact = VectorIndex(DIM)
    for rowid, position in zip(loaded._rowids.tolist(), range(loaded._size), strict=False):
        if rowid in loaded:
            exact.upsert(
                rowid, loaded._vectors(np.asarray([position]))[0], thread_id="t", type="turn", created=0
            )
    recall = [
        len(
            {r for r, _ in exact.search(q, 10, RowFilter())}
            & {r for r, _ in loaded.search(q, 10, RowFilter())}
        )
        for q in queries
    ]
    assert np.mean(recall) >= 9.5
    # Saved: the two graphs merged into one, which the next load views and answers from as this one does.
    _, again = saved_and_loaded(tmp_path / "b", TextIndex(), loaded)
    assert loaded._ann is not None and not loaded._ann.changed and loaded._ann._viewed is None
    assert again._ann is not None and len(again._ann) == len(again) == N - 5
    assert [again.search(q, 10, RowFilter()) for q in queries] == [
        loaded.search(q, 10, RowFilter()) for q in queries
    ]


def test_a_graph_that_cannot_be_read_is_refused(tmp_path: Path, data: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, _ = data
    columns = vectors_of(vectors[:1500]).frozen().columns()
    columns["graph"] = np.frombuffer(b"not a graph" * 100, dtype=np.uint8)
    with pytest.raises(ValueError):
        VectorIndex.from_columns(columns, dimension=DIM, ann_min_rows=1000, ann_expansion=128)


def test_a_snapshot_is_written_a_block_at_a_time(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    made: list[int] = []

    def produce(count: int) -> Iterator[np.ndarray]:
        for i in range(count):
            made.append(i)
            yield np.full((10, 4), i, dtype=np.float32)

    folder = SnapshotFolder(tmp_path / "index")
    folder.save("u", Snapshot(STAMP, {"x": Blocks((50, 4), np.float32, lambda: produce(5))}, {}))
    saved = folder.load("u")
    assert saved is not None and made == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(
        np.asarray(saved.text["x"]), np.repeat(np.arange(5, dtype=np.float32), 10)[:, None] * np.ones(4)
    )
    # Fewer rows made than the header promised: the snapshot is not written, the last one stays.
    folder.save("u", Snapshot(STAMP, {"x": Blocks((60, 4), np.float32, lambda: produce(5))}, {}))
    assert "50 rows made of 60" in caplog.text
    again = folder.load("u")
    assert again is not None and len(again.text["x"]) == 50
    assert not list(folder.path.glob("*.tmp"))


def test_compaction_of_a_loaded_index_drops_the_dead_rows_and_keeps_the_graph(
    tmp_path: Path, data: tuple[np.ndarray, np.ndarray]
) -> None:
    vectors, queries = data
    text, loaded = saved_and_loaded(tmp_path, TextIndex.of(documents(N)), vectors_of(vectors))
    removed = set(range(10, 10 + N, 3))  # a third of the rows: past the compaction threshold
    for rowid in removed:
        loaded.remove(rowid)
        text.remove(rowid)
    vectors_compacted, text_compacted = loaded.compacted(), text.compacted()
    assert vectors_compacted.dead == 0 and len(vectors_compacted) == N - len(removed)
    assert vectors_compacted.approximate
    for query in queries:
        assert vectors_compacted.search(query, 10, RowFilter()) == loaded.search(query, 10, RowFilter())
        assert not removed & {r for r, _ in vectors_compacted.search(query, 10, RowFilter())}
    terms = query_terms(["kayak", "note"])
    assert text_compacted.search(terms, 50, RowFilter(), context_weight=0.4) == text.search(
        terms, 50, RowFilter(), context_weight=0.4
    )
