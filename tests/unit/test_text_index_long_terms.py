"""A common word of a large store is scored from its best entries (text_index.LONG_POSTINGS): the
ranking of a query with a rarer word is the full BM25's, and what changes after the best entries were
taken (removed rows, rows added since) counts at once."""

from __future__ import annotations

import pytest

from mcp_memory.search import text_index
from mcp_memory.search.rows import RowFilter
from mcp_memory.search.terms import query_terms
from mcp_memory.search.text_index import Document, TextIndex


def document(rowid: int, content: str) -> Document:
    return Document(rowid, content, "", "t", "turn", float(rowid))


def corpus() -> list[Document]:
    rare = ["kayak", "violin", "comet", "harbour"]
    return [
        document(
            i,
            f"we talked about the weather today {'and the weather ' * (i % 3)}{rare[i % 4] if i % 50 == 0 else ''}",
        )
        for i in range(1, 3001)
    ]


def ranked(index: TextIndex, words: str, limit: int = 20) -> list[int]:
    """The best rows, ties (to 4 places: a word in every row adds ~1e-6) in rowid order."""
    found = index.search(query_terms(words.split()), limit, RowFilter(), context_weight=0.4)
    return [rowid for rowid, _ in sorted(found, key=lambda hit: (-round(hit[1], 4), hit[0]))]


@pytest.fixture
def long_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_index, "LONG_POSTINGS", 500)
    monkeypatch.setattr(text_index, "BEST_ENTRIES", 200)


def test_a_query_with_a_rare_word_ranks_as_the_full_bm25_does(monkeypatch: pytest.MonkeyPatch) -> None:
    full = ranked(TextIndex.of(corpus()), "the weather kayak", 40)
    monkeypatch.setattr(text_index, "LONG_POSTINGS", 500)
    monkeypatch.setattr(text_index, "BEST_ENTRIES", 200)
    assert ranked(TextIndex.of(corpus()), "the weather kayak", 40)[:15] == full[:15]  # every kayak row first
    assert ranked(TextIndex.of(corpus()), "weather", 5) == ranked(TextIndex.of(corpus()), "weather", 5)


@pytest.mark.usefixtures("long_terms")
def test_removed_rows_leave_and_added_rows_join_at_once() -> None:
    index = TextIndex.of(corpus())
    top = ranked(index, "weather", 5)
    index.remove(top[0])
    assert top[0] not in ranked(index, "weather", 50)
    index.upsert(document(9999, "weather weather weather weather"))  # after the best entries were taken
    assert ranked(index, "weather", 1) == [9999]
    for rowid in range(10_000, 10_100):  # many more: the best entries are taken again
        index.upsert(document(rowid, "weather " * 6))
    assert set(ranked(index, "weather", 100)) >= set(range(10_000, 10_100))
