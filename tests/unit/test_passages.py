"""Long memories as passages: the splitter, the index keys, and both in-memory indexes ranking a memory by
its best passage (search/passages.py, search/text_index.py, search/vector_index.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mcp_memory.search.passages import (
    MAX_PASSAGES,
    ONE_PASSAGE_CHARS,
    PASSAGE_CHARS,
    PASSAGE_PRIOR,
    best_hits,
    best_per_memory,
    memory_of,
    passage_key,
    passages,
)
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import query_terms
from mcp_memory.search.text_index import Document, TextIndex
from mcp_memory.search.vector_index import VectorIndex

PARAGRAPHS = [
    "We chose PostgreSQL 16 for the ledger because it handles concurrent writes well. " * 8,
    "The frontend is a React app built with Vite; the team prefers TypeScript everywhere. " * 8,
    "Deployment goes through GitHub Actions to a Kubernetes cluster in Frankfurt. " * 8,
    "The staging database password rotates every 45 days, on the first Monday. " * 8,
    "Logs are shipped to Loki and kept for thirty days before they are dropped. " * 8,
]
LONG = "\n\n".join(PARAGRAPHS)


def covered(text: str, spans: list[tuple[int, int]]) -> str:
    return "".join(text[a:b] for a, b in spans)


def test_a_short_text_is_one_passage_of_its_whole_content() -> None:
    assert passages("hello world") == [(0, 11)]
    text = "x " * (ONE_PASSAGE_CHARS // 2)
    assert passages(text) == [(0, len(text))]


def test_a_long_text_is_cut_at_its_paragraphs_in_order_within_the_size() -> None:
    spans = passages(LONG)
    assert len(spans) == len(PARAGRAPHS)
    assert [LONG[a:b] for a, b in spans] == [p.strip() for p in PARAGRAPHS]
    assert all(b - a <= PASSAGE_CHARS for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans))


def test_every_non_blank_character_is_in_a_passage() -> None:
    text = "\n".join(f"- item {i}: {'word ' * (i % 7)}done." for i in range(300))
    spans = passages(text)
    assert len(spans) > 1
    assert "".join(covered(text, spans).split()) == "".join(text.split())
    assert all(b - a <= PASSAGE_CHARS for a, b in spans)


def test_a_code_block_stays_whole_when_it_fits_and_is_cut_by_lines_when_not() -> None:
    code = "```python\n" + "".join(f"x{i} = compute({i})\n" for i in range(20)) + "```"
    text = "Intro paragraph. " * 40 + "\n\n" + code + "\n\n" + "Closing words. " * 40
    spans = passages(text)
    assert any(text[a:b] == code for a, b in spans)  # the block is one passage, fences included
    long_code = "```\n" + "".join(f"line_{i} = value_{i} + other_{i}\n" for i in range(200)) + "```"
    for a, b in passages(long_code):
        assert b - a <= PASSAGE_CHARS
        assert text_is_whole_lines(long_code, a, b)


def text_is_whole_lines(text: str, a: int, b: int) -> bool:
    return (a == 0 or text[a - 1] == "\n") and (b == len(text) or text[b] == "\n")


def test_an_unbroken_run_is_cut_into_fixed_pieces() -> None:
    blob = "A" * 5000
    spans = passages(blob)
    assert covered(blob, spans) == blob
    assert all(b - a <= PASSAGE_CHARS for a, b in spans)


def test_a_very_long_text_has_at_most_max_passages_covering_it_all() -> None:
    text = "A sentence of about forty characters. " * 30_000  # 1.1 million characters
    spans = passages(text)
    assert len(spans) <= MAX_PASSAGES
    assert spans[0][0] == 0 and spans[-1][1] == len(text.rstrip())


def test_keys_name_the_memory_and_the_passage() -> None:
    assert passage_key(42, 0) == 42  # a memory's first passage keeps its rowid
    assert memory_of(passage_key(42, 7)) == (42, 7)
    keys = np.array([5, passage_key(5, 1), 9, passage_key(5, 2)], dtype=np.int64)
    scores = np.array([0.1, 0.9, 0.5, 0.3])
    assert sorted(keys[best_per_memory(keys, scores)].tolist()) == [9, passage_key(5, 1)]
    assert best_hits([(passage_key(5, 1), 0.9), (9, 0.5), (5, 0.1)]) == [(passage_key(5, 1), 0.9), (9, 0.5)]


def document(rowid: int, content: str, thread: str = "t") -> Document:
    return Document(rowid, content, "", thread, "turn", 1_700_000_000.0 + rowid)


def text_search(index: TextIndex, words: str, limit: int = 10) -> list[tuple[int, float]]:
    return index.search(query_terms(words.split()), limit, RowFilter(), context_weight=0.4)


@pytest.mark.parametrize("built", ["bulk", "one by one", "snapshot", "compacted"])
def test_the_text_index_scores_a_long_memory_by_its_matching_passage(built: str) -> None:
    documents = [
        document(1, LONG),
        document(2, "The weekly sync is on Tuesday."),
        document(3, "Hello there."),
    ]
    index = TextIndex.of(documents)
    if built == "one by one":
        index = TextIndex()
        for d in documents:
            index.upsert(d)
    elif built == "snapshot":
        index = TextIndex.from_columns(index.columns())
    elif built == "compacted":
        index.upsert(document(2, "The weekly sync is on Wednesday."))
        index = index.compacted()
    assert index.memories() == 3 and len(index) == len(PARAGRAPHS) + 2
    hits = text_search(index, "staging password rotates")
    assert [memory_of(key) for key, _ in hits] == [(1, 3)]  # the fourth paragraph, not the whole text


def test_a_long_memory_rewritten_shorter_or_removed_leaves_no_rows_behind() -> None:
    index = TextIndex.of([document(1, LONG), document(2, "short one")])
    index.upsert(document(1, "now a short note about the ledger"))
    assert index.memories() == 2 and len(index) == 2
    assert text_search(index, "staging password") == []
    index.upsert(document(1, LONG))
    index.remove(1)
    assert index.memories() == 1 and len(index) == 1
    assert text_search(index, "ledger staging kubernetes") == []


def unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_the_vector_index_ranks_a_memory_by_its_best_passage_once() -> None:
    index = VectorIndex(3)
    columns = {"thread_id": "t", "type": "turn", "created": 1.0}
    index.upsert(1, np.stack([unit([1, 0, 0]), unit([0, 1, 0]), unit([0.1, 0, 1])]), **columns)
    index.upsert(2, unit([0.2, 0, 1]), **columns)
    assert index.memories() == 2 and len(index) == 4
    hits = index.search(unit([0, 0, 1]), 5, RowFilter())
    assert [memory_of(key)[0] for key, _ in hits] == [2, 1]  # each memory once
    assert memory_of(hits[1][0]) == (1, 2)  # found by its third passage
    # Its score is that passage's cosine less the prior of a memory of three passages.
    assert hits[1][1] == pytest.approx(float(unit([0.1, 0, 1])[2]) - PASSAGE_PRIOR * np.log(3), abs=1e-5)


@pytest.mark.parametrize("path", ["exact", "approximate", "snapshot"])
def test_the_vector_index_keeps_passages_through_rewrites_removals_and_snapshots(path: str) -> None:
    rng = np.random.default_rng(7)
    index = VectorIndex(64, ann_min_rows=50 if path == "approximate" else 0)
    columns = {"thread_id": "t", "type": "turn", "created": 1.0}
    for rowid in range(1, 80):
        rows = rng.normal(size=(1 + rowid % 3, 64)).astype(np.float32)
        index.upsert(rowid, rows / np.linalg.norm(rows, axis=1, keepdims=True), **columns)
    index.settle()
    target = unit(list(rng.normal(size=64)))
    index.upsert(5, np.stack([unit(list(rng.normal(size=64))), target]), **columns)
    if path == "snapshot":
        index = VectorIndex.from_columns(index.columns(), dimension=64)
    hits = index.search(target, 3, RowFilter())
    assert memory_of(hits[0][0]) == (5, 1)
    index.upsert(5, target, **columns)  # rewritten as one passage: its second row goes
    assert memory_of(index.search(target, 1, RowFilter())[0][0]) == (5, 0)
    index.remove(5)
    assert all(memory_of(key)[0] != 5 for key, _ in index.search(target, 80, RowFilter()))
    assert index.memories() == 78


def test_a_passage_still_waiting_for_its_vector_is_scored_by_its_memorys_first() -> None:
    from mcp_memory.search.hybrid import with_first_passages

    keys = np.array([5, 9, passage_key(9, 1)], dtype=np.int64)
    cosines = np.array([0.2, 0.4, 0.7], dtype=np.float32)
    named = np.array([passage_key(5, 3), passage_key(9, 1), passage_key(7, 2)], dtype=np.int64)
    more_keys, more_cosines = with_first_passages(keys, cosines, named)
    # Memory 5's third passage takes its first passage's cosine; memory 9's has its own; 7 has no vector.
    assert dict(zip(more_keys.tolist(), more_cosines.tolist(), strict=True)) == pytest.approx(
        {5: 0.2, 9: 0.4, passage_key(9, 1): 0.7, passage_key(5, 3): 0.2}
    )
