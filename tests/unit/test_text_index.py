"""The in-memory BM25 index (storage/text_index): FTS5's formula, kept current by upserts and removals,
filtered, compacted and saved as arrays without changing a score."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import query_terms, terms
from mcp_memory.search.text_index import Document, TextIndex

WORDS = ["running", "runner", "bicycle", "bicycles", "tea", "green", "Café", "cafe", "paint", "painted", "x1"]
EVERYTHING = RowFilter()

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
documents = st.lists(st.tuples(texts, texts), min_size=1, max_size=25)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)


def doc(rowid: int, content: str, context: str = "", **fields: object) -> Document:
    values = {"thread_id": "t", "type": "turn", "created": 0.0} | fields
    return Document(rowid, content, context, **values)  # type: ignore[arg-type]


def edit(index: TextIndex, edits: list[tuple[int, str | None]]) -> None:
    """Rewrite (a text) or remove (None) the rows the edits name."""
    for rowid, text in edits:
        if text is None:
            index.remove(rowid)
        else:
            index.upsert(doc(rowid, text, "green tea"))


def fts5_scores(rows: list[tuple[str, str]], query: list[str], context_weight: float) -> dict[int, float]:
    """SQLite's own bm25() over the same rows, tokenized as the data file's FTS5 table is."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(a, b, tokenize='porter unicode61 remove_diacritics 2')")
    conn.executemany(
        "INSERT INTO f (rowid, a, b) VALUES (?, ?, ?)", [(i + 1, a, b) for i, (a, b) in enumerate(rows)]
    )
    match = " OR ".join(f'"{w}"' for w in query)
    found = conn.execute(f"SELECT rowid, -bm25(f, 1.0, {context_weight!r}) FROM f WHERE f MATCH ?", (match,))
    return dict(found.fetchall())


@settings(max_examples=60, deadline=None)
@given(rows=documents, query=queries, context_weight=st.sampled_from([0.0, 0.4, 1.0]))
def test_scores_are_sqlite_fts5_bm25(
    rows: list[tuple[str, str]], query: list[str], context_weight: float
) -> None:
    # One word per term: FTS5 counts "bicycle" and "bicycles" twice over, this index once.
    query = list({tuple(terms(w)): w for w in query}.values())
    index = TextIndex.of([doc(i + 1, a, b) for i, (a, b) in enumerate(rows)])
    ours = dict(index.search(query_terms(query), 1000, EVERYTHING, context_weight=context_weight))
    theirs = fts5_scores(rows, query, context_weight)
    assert ours.keys() == theirs.keys()
    for rowid, score in theirs.items():
        assert ours[rowid] == pytest.approx(score, rel=1e-5, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(rows=documents, query=queries)
def test_upserting_one_by_one_builds_the_same_index(rows: list[tuple[str, str]], query: list[str]) -> None:
    together = TextIndex.of([doc(i + 1, a, b) for i, (a, b) in enumerate(rows)])
    one_by_one = TextIndex()
    for i, (a, b) in enumerate(rows):
        one_by_one.upsert(doc(i + 1, a, b))
    wanted = query_terms(query)
    expected = together.search(wanted, 1000, EVERYTHING, context_weight=0.4)
    found = one_by_one.search(wanted, 1000, EVERYTHING, context_weight=0.4)
    assert [r for r, _ in found] == [r for r, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected])


def test_terms_fold_case_and_accents_split_on_punctuation_and_stem() -> None:
    assert terms("Café-racing, RUNNERS' bicycles_2") == ["cafe", "race", "runner", "bicycl", "2"]
    assert query_terms(["o'neil", "neil", "painted"]) == ["o", "neil", "paint"]


def test_a_changed_text_is_found_by_its_new_words_only() -> None:
    index = TextIndex.of([doc(1, "green tea"), doc(2, "black coffee")])
    index.upsert(doc(1, "herbal infusion"))
    search = index.search
    assert search(["green"], 10, EVERYTHING, context_weight=0.4) == []
    assert [r for r, _ in search(["infus"], 10, EVERYTHING, context_weight=0.4)] == [1]
    index.upsert(doc(1, "herbal infusion"))  # the same text again: still one row for it
    assert len(index) == 2
    assert {r for r, _ in search(["coffe", "infus"], 10, EVERYTHING, context_weight=0.4)} == {1, 2}


def test_superseded_memories_neither_match_nor_count_in_the_statistics() -> None:
    index = TextIndex.of([doc(1, "tea"), doc(2, "tea time"), doc(3, "coffee"), doc(4, "water")])
    before = dict(index.search(["tea"], 10, EVERYTHING, context_weight=0.4))
    index.remove(1)
    after = dict(index.search(["tea"], 10, EVERYTHING, context_weight=0.4))
    assert list(after) == [2]
    assert after[2] != before[2]  # N and the term's frequency changed with the superseded row gone
    assert len(index) == 3


def test_filters_and_required_terms_narrow_the_rows() -> None:
    index = TextIndex.of(
        [
            doc(1, "tea", thread_id="a", type="turn", created=10.0),
            doc(2, "tea", thread_id="b", type="fact", created=20.0),
            doc(3, "tea green", thread_id="a", type="fact", created=30.0),
            doc(4, "tea", "green", thread_id="a", type="fact", created=30.0),
        ]
    )

    def rowids(where: RowFilter, required: tuple[str, ...] = ()) -> set[int]:
        return {r for r, _ in index.search(["tea"], 10, where, context_weight=0.4, required=required)}

    assert rowids(RowFilter(thread_id="a")) == {1, 3, 4}
    assert rowids(RowFilter(thread_id="nobody")) == set()
    assert rowids(RowFilter(types=("fact",))) == {2, 3, 4}
    assert rowids(RowFilter(since=15.0, until=25.0)) == {2}
    assert rowids(EVERYTHING, required=("green",)) == {3}  # in the memory's own words, not its context
    assert rowids(EVERYTHING, required=("green", "absent")) == set()
    assert index.search(["tea"], 0, EVERYTHING, context_weight=0.4) == []
    assert TextIndex().search(["tea"], 10, EVERYTHING, context_weight=0.4) == []


@settings(max_examples=40, deadline=None)
@given(
    rows=documents,
    edits=st.lists(st.tuples(st.integers(1, 25), st.one_of(st.none(), texts)), max_size=30),
    query=queries,
)
def test_compacting_or_saving_as_arrays_keeps_every_score(
    rows: list[tuple[str, str]], edits: list[tuple[int, str | None]], query: list[str]
) -> None:
    index = TextIndex.of([doc(i + 1, a, b) for i, (a, b) in enumerate(rows)])
    edit(index, edits)  # rewrites and removals leave dead rows behind
    wanted = query_terms(query)
    expected = index.search(wanted, 1000, EVERYTHING, context_weight=0.4)
    for copy in (index.compacted(), TextIndex.from_columns(index.columns())):
        assert copy.dead == 0 and len(copy) == len(index)
        found = copy.search(wanted, 1000, EVERYTHING, context_weight=0.4)
        assert [r for r, _ in found] == [r for r, _ in expected]
        assert [s for _, s in found] == pytest.approx([s for _, s in expected])
        copy.upsert(doc(99, " ".join(query)))  # and it keeps growing like any index
        assert 99 in {r for r, _ in copy.search(wanted, 1000, EVERYTHING, context_weight=0.4)}


@settings(max_examples=40, deadline=None)
@given(
    rows=documents,
    edits=st.lists(st.tuples(st.integers(1, 30), st.one_of(st.none(), texts)), max_size=30),
    query=queries,
)
def test_a_frozen_copy_keeps_what_it_held_while_the_index_changes(
    rows: list[tuple[str, str]], edits: list[tuple[int, str | None]], query: list[str]
) -> None:
    index = TextIndex.of([doc(i + 1, a, b) for i, (a, b) in enumerate(rows)])
    wanted = query_terms(query)
    expected = index.search(wanted, 1000, EVERYTHING, context_weight=0.4)
    frozen = index.frozen()
    edit(index, edits)  # appends, rewrites and removals in the live index, growing its arrays
    found = TextIndex.from_columns(frozen.columns()).search(wanted, 1000, EVERYTHING, context_weight=0.4)
    assert [r for r, _ in found] == [r for r, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected])
